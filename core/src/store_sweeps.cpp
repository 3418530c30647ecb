// store_sweeps.cpp — the store's sweeps (schema 8) and importing runs from another qklab file
// (merging the shard databases of a Slurm sweep, or a colleague's runs).
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "qklab/error.h"
#include "qklab/run_store.h"
#include "sqlite_db.h"
#include "store_internal.h"
#include "text_util.h"

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
    if (version < kSweepsVersion)
        throw Error(ErrorCode::NotFound, path + " holds no sweeps (schema " +
                                             std::to_string(version) + ", sweeps came with " +
                                             std::to_string(kSweepsVersion) + ")");
}

std::vector<std::string> tableColumns(Database& db, const std::string& table) {
    std::vector<std::string> out;
    Statement st(db, "SELECT name FROM pragma_table_info(?)");
    st.bindText(1, table);
    while (st.step()) out.push_back(st.columnText(0));
    return out;
}

// Columns of `table` that both files have, less those the copy sets itself.
std::vector<std::string> sharedColumns(Database& src, Database& dst, const std::string& table,
                                       const std::set<std::string>& skip) {
    const std::vector<std::string> theirs = tableColumns(src, table);
    const std::set<std::string> ours(theirs.begin(), theirs.end());
    std::vector<std::string> out;
    for (const auto& c : tableColumns(dst, table))
        if (ours.count(c) && !skip.count(c)) out.push_back(c);
    return out;
}

std::string joined(const std::vector<std::string>& cols, const std::string& prefix = "") {
    std::string out;
    for (const auto& c : cols) out += (out.empty() ? "" : ", ") + prefix + c;
    return out;
}

// Every row of one per-run table, re-keyed from source run srcId to dstId. Tables with their
// own integer id (spikes, events) get new ids here.
void copyRunRows(Database& src, Database& dst, const std::string& table, int64_t srcId,
                 int64_t dstId) {
    const auto cols = sharedColumns(src, dst, table, {"run_id", "id"});
    if (cols.empty()) return;
    Statement sel(src, "SELECT " + joined(cols) + " FROM " + table + " WHERE run_id = ?");
    sel.bindInt(1, srcId);
    std::string marks = "?";
    for (size_t i = 0; i < cols.size(); ++i) marks += ", ?";
    Statement ins(dst,
                  "INSERT INTO " + table + "(run_id, " + joined(cols) + ") VALUES(" + marks + ")");
    while (sel.step()) {
        ins.bindInt(1, dstId);
        for (size_t i = 0; i < cols.size(); ++i)
            ins.bindColumn(static_cast<int>(i) + 2, sel, static_cast<int>(i));
        ins.exec();
    }
}

bool nameTaken(Database& db, const std::string& table, const std::string& name) {
    Statement st(db, "SELECT 1 FROM " + table + " WHERE name = ?");
    st.bindText(1, name);
    return st.step();
}

// "name (1a2b3c4d)": a name another run (or sweep) here already has, made unique by the
// UUID's first characters (then a counter, should even that be taken).
std::string freeName(Database& db, const std::string& table, const std::string& name,
                     const std::string& uuid) {
    if (!nameTaken(db, table, name)) return name;
    std::string base = name.substr(0, 180) + " (" + uuid.substr(0, 8) + ")", candidate = base;
    for (int k = 2; nameTaken(db, table, candidate); ++k)
        candidate = base + " " + std::to_string(k);
    return candidate;
}

const char* const kPerRunTables[] = {"step_metrics",   "probe_stats",  "histograms",
                                     "attention_maps", "spikes",       "events",
                                     "checkpoints",    "logit_alarms", "qk_clips"};

bool hasTable(Database& db, const std::string& table) {
    Statement st(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
    st.bindText(1, table);
    return st.step();
}

// The source's sweeps, added here or found by UUID: source sweep id -> id here.
std::map<int64_t, int64_t> importSweeps(Database& src, int srcVersion, Database& dst) {
    std::map<int64_t, int64_t> ids;
    if (srcVersion < kSweepsVersion) return ids;
    Statement sel(src, std::string("SELECT ") + kSweepColumns + " FROM sweeps ORDER BY id");
    Statement find(dst, "SELECT id FROM sweeps WHERE uuid = ?");
    while (sel.step()) {
        const SweepInfo s = readSweep(sel);
        find.reset();
        find.bindText(1, s.uuid);
        if (find.step()) {
            ids[s.id] = find.columnInt(0);
            continue;
        }
        Statement ins(dst,
                      "INSERT INTO sweeps(uuid, name, definition_json, points, status, "
                      "created_at, updated_at) VALUES(?, ?, ?, ?, 'partial', ?, ?)");
        ins.bindText(1, s.uuid).bindText(2, freeName(dst, "sweeps", s.name, s.uuid));
        ins.bindText(3, s.definitionJson).bindInt(4, s.points).bindText(5, s.createdAt);
        ins.bindText(6, utcNowIso8601()).exec();
        ids[s.id] = dst.lastInsertId();
    }
    return ids;
}

// A sweep no process owns (assembled from shards) is finished once every grid point has a
// run that ended (finished, diverged or failed), partial until then.
void settleSweepStatus(Database& db, int64_t sweepId) {
    Statement st(db,
                 "UPDATE sweeps SET status = CASE WHEN (SELECT count(DISTINCT sweep_point) FROM "
                 "runs WHERE sweep_id = sweeps.id AND status IN ('finished', 'diverged', "
                 "'failed')) >= points THEN 'finished' ELSE 'partial' END, updated_at = ? "
                 "WHERE id = ? AND pid IS NULL");
    st.bindText(1, utcNowIso8601()).bindInt(2, sweepId).exec();
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
    if (m_version < kSweepsVersion) return out;  // an older file read as it is
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
    if (m_version < kSweepsVersion) return out;
    Statement st(*m_db, "SELECT " + runColumns(m_version) +
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

ImportResult RunStore::importRuns(const std::string& sourcePath) {
    if (m_readOnly) throw Error(ErrorCode::InvalidRequest, "the store is open read-only");
    std::error_code ec;
    if (std::filesystem::equivalent(sourcePath, path(), ec))
        throw Error(ErrorCode::InvalidRequest, "cannot import " + sourcePath + " into itself");
    auto src = openRunDatabaseForReading(sourcePath);
    const int srcVersion = static_cast<int>(src->queryInt("PRAGMA user_version"));
    ImportResult result;
    Transaction tx(*m_db);
    const std::map<int64_t, int64_t> sweepIds = importSweeps(*src, srcVersion, *m_db);
    const auto runCols =
        sharedColumns(*src, *m_db, "runs", {"id", "name", "uuid", "sweep_id", "status"});
    Statement sel(
        *src,
        "SELECT r.id, r.name, r.status, " +
            std::string(srcVersion >= kSweepsVersion ? "r.uuid, r.sweep_id"
                                                     : std::string(kLegacyRunUuid) + ", NULL") +
            (runCols.empty() ? "" : ", " + joined(runCols, "r.")) + " FROM runs r ORDER BY r.id");
    Statement known(*m_db, "SELECT 1 FROM runs WHERE uuid = ?");
    std::string marks = "?, ?, ?, ?";
    for (size_t i = 0; i < runCols.size(); ++i) marks += ", ?";
    Statement ins(*m_db, "INSERT INTO runs(name, status, uuid, sweep_id" +
                             (runCols.empty() ? "" : ", " + joined(runCols)) + ") VALUES(" + marks +
                             ")");
    std::set<int64_t> touchedSweeps;
    while (sel.step()) {
        const std::string uuid = sel.columnText(3);
        known.reset();
        known.bindText(1, uuid);
        if (known.step()) {
            ++result.skipped;
            continue;
        }
        const std::string name = sel.columnText(1);
        const std::string newName = freeName(*m_db, "runs", name, uuid);
        if (newName != name) result.renamed.push_back(name + " -> " + newName);
        // A run still being written elsewhere cannot be continued from here: interrupted.
        const std::string status = sel.columnText(2);
        ins.bindText(1, newName).bindText(2, status == "running" ? "interrupted" : status);
        ins.bindText(3, uuid);
        const auto sweepIt = sel.isNull(4) ? sweepIds.end() : sweepIds.find(sel.columnInt(4));
        if (sweepIt != sweepIds.end()) {
            ins.bindInt(4, sweepIt->second);
            touchedSweeps.insert(sweepIt->second);
        } else {
            ins.bindNull(4);
        }
        for (size_t i = 0; i < runCols.size(); ++i)
            ins.bindColumn(static_cast<int>(i) + 5, sel, static_cast<int>(i) + 5);
        ins.exec();
        const int64_t newId = m_db->lastInsertId();
        for (const char* table : kPerRunTables)
            if (hasTable(*src, table)) copyRunRows(*src, *m_db, table, sel.columnInt(0), newId);
        ++result.imported;
    }
    for (int64_t id : touchedSweeps) settleSweepStatus(*m_db, id);
    for (const auto& [from, to] : sweepIds) result.sweepIds.push_back(to);
    tx.commit();
    return result;
}

}  // namespace qklab
