// store_sweeps.cpp — the store's sweeps (schema 8). Importing runs (and their sweeps) from
// another qklab file is store_import.cpp.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "qklab/store/run_store.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"
#include "run_rows.h"
#include "schema.h"
#include "sqlite_db.h"

namespace qklab {

namespace {

const char* const kSweepColumns =
    "id, uuid, name, definition_json, points, status, created_at, updated_at, pid, host";

SweepInfo readSweep(const Statement& st) {
    SweepInfo s;
    s.id = st.columnInt("id");
    s.uuid = st.columnText("uuid");
    s.name = st.columnText("name");
    s.definitionJson = st.columnText("definition_json");
    s.points = st.columnInt("points");
    s.status = st.columnText("status");
    s.createdAt = st.columnText("created_at");
    s.updatedAt = st.columnText("updated_at");
    // As with runs: readers show a dead owner's running sweep as interrupted.
    const std::optional<int64_t> pid = st.columnOptInt("pid");
    if (s.status == "running" && pid && writerIsGone(*pid, st.columnText("host")))
        s.status = "interrupted";
    return s;
}

void requireSweeps(int version, const std::string& path) {
    if (!hasFeature(version, SchemaFeature::Sweeps))
        throw Error(ErrorCode::NotFound,
                    path + " holds no sweeps (schema " + std::to_string(version) +
                        ", sweeps came with " +
                        std::to_string(schemaVersionOf(SchemaFeature::Sweeps)) + ")");
}

}  // namespace

int64_t RunStore::addSweep(const SweepInfo& s, bool owned) {
    checkRunName(s.name);
    Transaction tx(*m_db);
    Statement byUuid(*m_db, "SELECT id FROM sweeps WHERE uuid = ?");
    byUuid.bindAll(s.uuid);
    if (byUuid.step()) return byUuid.columnInt("id");
    Statement byName(*m_db, "SELECT id, created_at FROM sweeps WHERE name = ?");
    byName.bindAll(s.name);
    if (byName.step())
        throw Error(ErrorCode::InvalidRequest, "a sweep named '" + s.name + "' already exists in " +
                                                   path() + " (sweep " +
                                                   std::to_string(byName.columnInt("id")) +
                                                   ", created " + byName.columnText("created_at") +
                                                   "); choose another name or resume that one");
    Statement ins(*m_db,
                  "INSERT INTO sweeps(uuid, name, definition_json, points, status, created_at, "
                  "updated_at, pid, host) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)");
    const std::string now = utcNowIso8601();
    using Owner = std::optional<std::string>;  // the owner's host: none for a partial sweep
    ins.bindAll(s.uuid, s.name, s.definitionJson, s.points, owned ? "running" : "partial", now, now,
                owned ? std::optional<int64_t>(getpid()) : std::nullopt,
                owned ? Owner(thisHostName()) : std::nullopt);
    ins.exec();
    const int64_t id = m_db->lastInsertId();
    tx.commit();
    return id;
}

void RunStore::claimSweep(int64_t id) {
    Transaction tx(*m_db);
    const SweepInfo s = sweep(id);
    if (s.status == "running")
        throw Error(ErrorCode::InvalidRequest,
                    "sweep '" + s.name + "' is still running in another process; stop it first");
    Statement st(*m_db,
                 "UPDATE sweeps SET status = 'running', pid = ?, host = ?, updated_at = ? "
                 "WHERE id = ?");
    st.bindAll(getpid(), thisHostName(), utcNowIso8601(), id).exec();
    tx.commit();
}

void RunStore::setSweepStatus(int64_t id, const std::string& status) {
    Statement st(*m_db, "UPDATE sweeps SET status = ?, updated_at = ? WHERE id = ?");
    st.bindAll(status, utcNowIso8601(), id).exec();
}

std::vector<SweepInfo> RunStore::sweeps() {
    std::vector<SweepInfo> out;
    if (!hasFeature(m_version, SchemaFeature::Sweeps)) return out;  // an older file read as it is
    Statement st(*m_db, std::string("SELECT ") + kSweepColumns + " FROM sweeps ORDER BY id");
    while (st.step()) out.push_back(readSweep(st));
    return out;
}

SweepInfo RunStore::sweep(int64_t id) {
    requireSweeps(m_version, path());
    Statement st(*m_db, std::string("SELECT ") + kSweepColumns + " FROM sweeps WHERE id = ?");
    st.bindAll(id);
    if (!st.step())
        throw Error(ErrorCode::NotFound, "no sweep " + std::to_string(id) + " in " + path());
    return readSweep(st);
}

SweepInfo RunStore::findSweep(const std::string& ref) {
    requireSweeps(m_version, path());
    Statement st(*m_db, std::string("SELECT ") + kSweepColumns + " FROM sweeps WHERE name = ?");
    st.bindAll(ref);
    if (st.step()) return readSweep(st);
    const bool numeric =
        !ref.empty() && ref.size() < 18 && ref.find_first_not_of("0123456789") == std::string::npos;
    if (numeric) return sweep(std::stoll(ref));
    throw Error(ErrorCode::NotFound,
                "no sweep named '" + clipped(ref) + "' in " + path() + " (see qklab-cli sweeps)");
}

std::vector<RunInfo> RunStore::sweepRuns(int64_t sweepId) {
    std::vector<RunInfo> out;
    if (!hasFeature(m_version, SchemaFeature::Sweeps)) return out;
    Statement st(*m_db, "SELECT " + runSelectList(m_version) +
                            " FROM runs r WHERE r.sweep_id = ? ORDER BY r.sweep_point, r.id");
    st.bindAll(sweepId);
    while (st.step()) out.push_back(readRun(st));
    return out;
}

void RunStore::markRunFailed(int64_t runId, const std::string& message) {
    Statement st(*m_db,
                 "UPDATE runs SET status = 'failed', status_message = ?, finished_at = ? "
                 "WHERE id = ? AND status = 'running'");
    st.bindAll(message, utcNowIso8601(), runId).exec();
}

std::optional<double> RunStore::firstStepLoss(int64_t runId) {
    Statement st(*m_db, "SELECT loss FROM step_metrics WHERE run_id = ? ORDER BY step LIMIT 1");
    st.bindAll(runId);
    if (!st.step()) return std::nullopt;
    return st.columnOptReal("loss");
}

}  // namespace qklab
