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
    s.id = st.columnInt(0);
    s.uuid = st.columnText(1);
    s.name = st.columnText(2);
    s.definitionJson = st.columnText(3);
    s.points = st.columnInt(4);
    s.status = st.columnText(5);
    s.createdAt = st.columnText(6);
    s.updatedAt = st.columnText(7);
    // As with runs: readers show a dead owner's running sweep as interrupted.
    if (s.status == "running" && !st.isNull(8) && writerIsGone(st.columnInt(8), st.columnText(9)))
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
    byUuid.bindText(1, s.uuid);
    if (byUuid.step()) return byUuid.columnInt(0);
    Statement byName(*m_db, "SELECT id, created_at FROM sweeps WHERE name = ?");
    byName.bindText(1, s.name);
    if (byName.step())
        throw Error(ErrorCode::InvalidRequest,
                    "a sweep named '" + s.name + "' already exists in " + path() + " (sweep " +
                        std::to_string(byName.columnInt(0)) + ", created " + byName.columnText(1) +
                        "); choose another name or resume that one");
    Statement ins(*m_db,
                  "INSERT INTO sweeps(uuid, name, definition_json, points, status, created_at, "
                  "updated_at, pid, host) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)");
    const std::string now = utcNowIso8601();
    ins.bindText(1, s.uuid).bindText(2, s.name).bindText(3, s.definitionJson);
    ins.bindInt(4, s.points).bindText(5, owned ? "running" : "partial");
    ins.bindText(6, now).bindText(7, now);
    if (owned)
        ins.bindInt(8, getpid()).bindText(9, thisHostName());
    else
        ins.bindNull(8).bindNull(9);
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
    st.bindInt(1, getpid()).bindText(2, thisHostName()).bindText(3, utcNowIso8601());
    st.bindInt(4, id).exec();
    tx.commit();
}

void RunStore::setSweepStatus(int64_t id, const std::string& status) {
    Statement st(*m_db, "UPDATE sweeps SET status = ?, updated_at = ? WHERE id = ?");
    st.bindText(1, status).bindText(2, utcNowIso8601()).bindInt(3, id).exec();
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
    st.bindInt(1, id);
    if (!st.step())
        throw Error(ErrorCode::NotFound, "no sweep " + std::to_string(id) + " in " + path());
    return readSweep(st);
}

SweepInfo RunStore::findSweep(const std::string& ref) {
    requireSweeps(m_version, path());
    Statement st(*m_db, std::string("SELECT ") + kSweepColumns + " FROM sweeps WHERE name = ?");
    st.bindText(1, ref);
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
    st.bindInt(1, sweepId);
    while (st.step()) out.push_back(readRun(st));
    return out;
}

void RunStore::markRunFailed(int64_t runId, const std::string& message) {
    Statement st(*m_db,
                 "UPDATE runs SET status = 'failed', status_message = ?, finished_at = ? "
                 "WHERE id = ? AND status = 'running'");
    st.bindText(1, message).bindText(2, utcNowIso8601()).bindInt(3, runId).exec();
}

std::optional<double> RunStore::firstStepLoss(int64_t runId) {
    Statement st(*m_db, "SELECT loss FROM step_metrics WHERE run_id = ? ORDER BY step LIMIT 1");
    st.bindInt(1, runId);
    if (!st.step()) return std::nullopt;
    return st.columnOptReal(0);
}

}  // namespace qklab
