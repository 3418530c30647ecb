// run_store.cpp — the run store (RunStore): runs and their records. Writing a run lives in
// run_writer.cpp, the schema in schema.cpp, sweeps in store_sweeps.cpp, saved comparisons in
// store_comparisons.cpp and importing in store_import.cpp.
//
// Layout: one `runs` row per run; every per-step table is keyed (run_id, step, ...) so one
// run's rows are contiguous in the primary-key b-tree and reading 100k steps is a range scan.
// Small fixed-size tables are WITHOUT ROWID (the key *is* the storage order); tables with
// blobs keep a rowid because WITHOUT ROWID suits rows smaller than ~1/20 of a page.
#include "qklab/store/run_store.h"

#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <random>
#include <set>
#include <tuple>

#include "checkpoint_paths.h"
#include "qklab/util/error.h"
#include "qklab/util/input_file.h"
#include "qklab/util/text_util.h"
#include "record_rows.h"
#include "run_rows.h"
#include "schema.h"
#include "sqlite_db.h"
#include "sqlite_files.h"

namespace qklab {

namespace {

std::string goneMessage(int64_t pid) {
    return "process " + std::to_string(pid) + " on " + thisHostName() +
           " ended without finishing the run";
}

bool isInteger(const std::string& s) {
    if (s.empty() || s.size() > 18) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

}  // namespace

// ---- shared helpers (declared in sqlite_db.h and run_rows.h) ----

// A run marked running whose process on this host is gone. EPERM means the pid is alive
// but someone else's: only ESRCH proves it is gone.
bool writerIsGone(int64_t pid, const std::string& host) {
    if (host != thisHostName()) return false;  // another machine's process: cannot tell
    return pid <= 0 || (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH);
}

// The run columns, then the writer's pid and host: a reader shows a dead writer's running run
// as interrupted.
std::string runSelectList(int version) {
    return selectList(runColumns(), version) + ", r.pid AS writer_pid, r.host AS writer_host";
}

RunInfo readRun(const Statement& st) {
    RunInfo r = decodeRow<RunInfo>(st, runColumns());
    // Readers show a dead writer's run as interrupted without writing it (only writers
    // persist that, in markInterruptedRuns).
    if (r.status == RunStatus::Running) {
        const int64_t pid = st.columnOptInt("writer_pid").value_or(0);
        if (writerIsGone(pid, st.columnText("writer_host"))) {
            r.status = RunStatus::Interrupted;
            r.statusMessage = goneMessage(pid);
        }
    }
    return r;
}

std::string newUuid() {
    std::random_device rd;
    std::array<unsigned char, 16> b{};
    for (size_t i = 0; i < b.size(); i += 4) {
        const uint32_t v = rd();
        for (int k = 0; k < 4; ++k) b[i + k] = static_cast<unsigned char>(v >> (8 * k));
    }
    b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
    b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
    char out[37];
    std::snprintf(out, sizeof out,
                  "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    return out;
}

std::string defaultDatabasePath() {
    const char* xdg = std::getenv("XDG_DATA_HOME");
    // The XDG spec says to ignore a relative XDG_DATA_HOME.
    if (xdg && xdg[0] == '/') return std::string(xdg) + "/qklab/runs.db";
    std::string home;
    if (const char* h = std::getenv("HOME"); h && h[0]) {
        home = h;
    } else if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) {
        home = pw->pw_dir;
    } else {
        home = ".";
    }
    return home + "/.local/share/qklab/runs.db";
}

// ---- RunStore ----

RunStore::RunStore(const std::string& path, StoreAccess access)
    : m_db(access == StoreAccess::ReadOnly ? openRunDatabaseForReading(path)
                                           : openRunDatabase(path)),
      m_readOnly(access == StoreAccess::ReadOnly),
      m_version(static_cast<int>(m_db->queryInt("PRAGMA user_version"))) {}

bool RunStore::readOnly() const {
    return m_readOnly;
}

RunStore::~RunStore() = default;

const std::string& RunStore::path() const {
    return m_db->path();
}

int RunStore::schemaVersion() const {
    return m_version;
}

int RunStore::markInterruptedRuns() {
    if (m_readOnly) return 0;  // readers never write; they show such runs as interrupted
    std::vector<std::pair<int64_t, int64_t>> dead;  // (run id, pid)
    {
        Statement st(*m_db, "SELECT id, pid FROM runs WHERE status = 'running' AND host = ?");
        st.bindAll(thisHostName());
        while (st.step()) {
            const int64_t pid = st.columnOptInt("pid").value_or(0);
            if (writerIsGone(pid, thisHostName())) dead.emplace_back(st.columnInt("id"), pid);
        }
    }
    if (dead.empty()) return 0;
    Transaction tx(*m_db);
    Statement upd(*m_db,
                  "UPDATE runs SET status = 'interrupted', status_message = ? "
                  "WHERE id = ? AND status = 'running'");
    int changed = 0;
    for (const auto& [id, pid] : dead) {
        upd.bindAll(goneMessage(pid), id).exec();
        changed += m_db->changes();
    }
    tx.commit();
    return changed;
}

RunInfo RunStore::claimForResume(int64_t runId) {
    markInterruptedRuns();  // a dead writer's "running" run is resumable
    Transaction tx(*m_db);  // BEGIN IMMEDIATE: the check and the update are one step
    const RunInfo before = run(runId);
    Statement claim(*m_db,
                    "UPDATE runs SET status = 'running', pid = ?, host = ?, status_message = '' "
                    "WHERE id = ? AND status IN ('stopped', 'interrupted', 'failed', 'diverged')");
    claim.bindAll(getpid(), thisHostName(), runId).exec();
    if (m_db->changes() != 1) {
        const std::string id = "run " + std::to_string(runId);
        if (before.status == RunStatus::Finished)
            throw Error(ErrorCode::InvalidRequest, id + " already finished");
        throw Error(ErrorCode::InvalidRequest,
                    id + " is already being resumed or is still running (status " +
                        toString(before.status) + "); stop it before resuming");
    }
    tx.commit();
    return before;
}

void RunStore::releaseResumeClaim(const RunInfo& before) {
    Statement st(*m_db,
                 "UPDATE runs SET status = ?, status_message = ? WHERE id = ? AND pid = ? AND "
                 "status = 'running'");
    st.bindAll(toString(before.status), before.statusMessage, before.id, getpid()).exec();
}

// Never deletes a row: a file that is missing now (an unmounted disk, a resume started from
// another directory by an older build) may be back later, and the row is the only record of it.
std::optional<CheckpointInfo> RunStore::newestUsableCheckpoint(int64_t runId) {
    std::optional<CheckpointInfo> best;
    for (const CheckpointInfo& c : checkpoints(runId)) {
        std::error_code ec;
        if (c.path.empty() || !std::filesystem::is_regular_file(c.path, ec)) continue;
        if (!best || c.step > best->step) best = c;
    }
    return best;
}

std::vector<LogitAlarm> RunStore::logitAlarms(int64_t runId) {
    return readRows(*m_db, m_version, logitAlarmTable(), runId);
}

std::vector<QkClip> RunStore::qkClips(int64_t runId) {
    return readRows(*m_db, m_version, qkClipTable(), runId);
}

std::vector<Forecast> RunStore::forecasts(int64_t runId) {
    return readRows(*m_db, m_version, forecastTable(), runId);
}

std::vector<ChangeReport> RunStore::changeReports(int64_t runId) {
    return readRows(*m_db, m_version, changeReportTable(), runId);
}

bool trainedOutsideQklab(const RunInfo& r) {
    return !r.source.empty() && r.source != "qklab";
}

std::string outsideQklabReason(const RunInfo& r, const std::string& action) {
    if (!trainedOutsideQklab(r)) return {};
    return "run " + std::to_string(r.id) + " was trained outside qklab (" +
           printableText(r.source.substr(0, 80)) + "): qklab cannot " + action +
           " a model it does not have";
}

std::vector<CustomScalar> RunStore::customScalars(int64_t runId) {
    return readRows(*m_db, m_version, customScalarTable(), runId);
}

std::vector<RunInfo> RunStore::listRuns() {
    Statement st(*m_db, "SELECT " + runSelectList(m_version) + " FROM runs r ORDER BY r.id");
    std::vector<RunInfo> out;
    while (st.step()) out.push_back(readRun(st));
    return out;
}

RunInfo RunStore::run(int64_t id) {
    Statement st(*m_db, "SELECT " + runSelectList(m_version) + " FROM runs r WHERE r.id = ?");
    st.bindAll(id);
    if (!st.step())
        throw Error(ErrorCode::NotFound, "no run with id " + std::to_string(id) + " in " + path());
    return readRun(st);
}

RunInfo RunStore::findRun(const std::string& ref) {
    // "id:2" and "name:2" say which one is meant: a run may be named "2". A bare reference
    // is an id when it is a number and such a run exists, else a name.
    const bool byId = ref.rfind("id:", 0) == 0, byName = ref.rfind("name:", 0) == 0;
    const std::string key = byId ? ref.substr(3) : byName ? ref.substr(5) : ref;
    if (!byName && isInteger(key)) {
        Statement st(*m_db, "SELECT " + runSelectList(m_version) + " FROM runs r WHERE r.id = ?");
        st.bindAll(std::stoll(key));
        if (st.step()) return readRun(st);
    }
    if (!byId) {
        Statement st(*m_db, "SELECT " + runSelectList(m_version) + " FROM runs r WHERE r.name = ?");
        st.bindAll(key);
        if (st.step()) return readRun(st);
    }
    throw Error(ErrorCode::NotFound, std::string("no run with ") +
                                         (byId     ? "id"
                                          : byName ? "name"
                                                   : "id or name") +
                                         " '" + clipped(key, 80) + "' in " + path());
}

std::vector<StepMetrics> RunStore::stepMetrics(int64_t runId, int64_t fromStep) {
    return readRows(*m_db, m_version, stepMetricTable(), runId, fromStep);
}

std::vector<ProbeStats> RunStore::probeStats(int64_t runId, std::optional<int32_t> head,
                                             int64_t fromStep) {
    const RecordTable<ProbeStats>& t = probeStatTable();
    if (head)
        return readRowsWhere(*m_db, m_version, t, runId, "step >= ? AND head = ?", fromStep, *head);
    return readRows(*m_db, m_version, t, runId, fromStep);
}

std::vector<LogitHistogram> RunStore::histograms(int64_t runId, int32_t layer, int32_t head) {
    return readRowsWhere(*m_db, m_version, histogramTable(), runId, "layer = ? AND head = ?", layer,
                         head);
}

std::vector<int64_t> RunStore::histogramSteps(int64_t runId) {
    return readSteps(*m_db, m_version, histogramTable(), runId);
}

std::vector<AttentionMap> RunStore::attentionMaps(int64_t runId, int64_t step) {
    return readRowsWhere(*m_db, m_version, attentionMapTable(), runId, "step = ?", step);
}

std::vector<int64_t> RunStore::attentionMapSteps(int64_t runId) {
    return readSteps(*m_db, m_version, attentionMapTable(), runId);
}

std::vector<Spike> RunStore::spikes(int64_t runId) {
    return readRows(*m_db, m_version, spikeTable(), runId);
}

std::vector<EventRecord> RunStore::events(int64_t runId) {
    return readRowsWhere(*m_db, m_version, eventTable(), runId, "");
}

std::vector<CheckpointInfo> RunStore::checkpoints(int64_t runId) {
    std::vector<CheckpointInfo> out;
    for (const StoredCheckpoint& c : readRowsWhere(*m_db, m_version, checkpointTable(), runId, ""))
        out.push_back(resolveCheckpoint(path(), runId, c.step, c.path));
    return out;
}

int64_t RunStore::maxRunId() {
    return m_db->queryInt("SELECT max(id) FROM runs");
}

int64_t RunStore::dataVersion() {
    return m_db->queryInt("PRAGMA data_version");
}

void RunStore::renameRun(int64_t id, const std::string& name) {
    checkRunName(name);
    Transaction tx(*m_db);
    Statement taken(*m_db, "SELECT id FROM runs WHERE name = ? AND id != ?");
    taken.bindAll(name, id);
    if (taken.step())
        throw Error(ErrorCode::InvalidRequest, "a run named '" + name + "' already exists (id " +
                                                   std::to_string(taken.columnInt("id")) + ")");
    Statement st(*m_db, "UPDATE runs SET name = ? WHERE id = ?");
    st.bindAll(name, id).exec();
    if (m_db->changes() == 0)
        throw Error(ErrorCode::NotFound, "no run with id " + std::to_string(id) + " in " + path());
    tx.commit();
}

void RunStore::setNotes(int64_t id, const std::string& notes) {
    Statement st(*m_db, "UPDATE runs SET notes = ? WHERE id = ?");
    st.bindAll(notes, id).exec();
    if (m_db->changes() == 0)
        throw Error(ErrorCode::NotFound, "no run with id " + std::to_string(id) + " in " + path());
}

void RunStore::setTags(int64_t id, const std::string& tags) {
    Statement st(*m_db, "UPDATE runs SET tags = ? WHERE id = ?");
    st.bindAll(tags, id).exec();
    if (m_db->changes() == 0)
        throw Error(ErrorCode::NotFound, "no run with id " + std::to_string(id) + " in " + path());
}

void RunStore::deleteRun(int64_t id) {
    // foreign_keys=ON (set at open) makes ON DELETE CASCADE remove every per-step row.
    Statement st(*m_db, "DELETE FROM runs WHERE id = ?");
    st.bindAll(id).exec();
    if (m_db->changes() == 0)
        throw Error(ErrorCode::NotFound, "no run with id " + std::to_string(id) + " in " + path());
}

}  // namespace qklab
