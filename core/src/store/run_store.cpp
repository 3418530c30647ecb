// run_store.cpp — qklab's schema, how a file is opened and migrated, and the read side of the
// run store (RunStore). Writing a run lives in run_writer.cpp.
//
// Layout: one `runs` row per run; every per-step table is keyed (run_id, step, ...) so one
// run's rows are contiguous in the primary-key b-tree and reading 100k steps is a range scan.
// Small fixed-size tables are WITHOUT ROWID (the key *is* the storage order); tables with
// blobs keep a rowid because WITHOUT ROWID suits rows smaller than ~1/20 of a page.
#include "qklab/run_store.h"

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

#include "qklab/error.h"
#include "qklab/input_file.h"
#include "store/sqlite_db.h"
#include "store/sqlite_files.h"
#include "store/store_internal.h"
#include "util/text_util.h"

namespace qklab {

namespace {

std::vector<int64_t> decodeInt64s(const std::vector<unsigned char>& bytes) {
    std::vector<int64_t> out(bytes.size() / 8);
    for (size_t i = 0; i < out.size(); ++i) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; --b) v = (v << 8) | bytes[i * 8 + b];
        out[i] = static_cast<int64_t>(v);
    }
    return out;
}

std::vector<float> decodeFloats(const std::vector<unsigned char>& bytes) {
    std::vector<float> out(bytes.size() / 4);
    for (size_t i = 0; i < out.size(); ++i) {
        uint32_t v = 0;
        for (int b = 3; b >= 0; --b) v = (v << 8) | bytes[i * 4 + b];
        std::memcpy(&out[i], &v, sizeof v);
    }
    return out;
}

const char* const kRunColumns =
    "r.id, r.name, r.status, r.config_json, r.seed, r.device, r.torch_version, r.app_version, "
    "r.created_at, r.finished_at, r.notes, r.tags, r.steps_done, r.final_loss, r.max_logit_raw, "
    "r.max_logit_capped, r.status_message, "
    "(SELECT count(*) FROM spikes s WHERE s.run_id = r.id), "
    // The latest validation: a backwards walk of the (run_id, step) key, at most eval.every rows.
    "(SELECT m.val_loss FROM step_metrics m WHERE m.run_id = r.id AND m.val_loss IS NOT NULL "
    "ORDER BY m.step DESC LIMIT 1), r.pid, r.host";

// Column 22 of runColumns; unreadable JSON leaves the list empty (the run still lists).
std::vector<EventRecord> interventionsFromJson(const std::string& text) {
    std::vector<std::pair<int64_t, EventRecord>> rows;
    nlohmann::json j;
    try {
        j = parseStoredJson(text, "the interventions");  // depth and size limits: a file's text
    } catch (const Error&) {
        return {};
    }
    if (!j.is_array()) return {};
    for (const auto& row : j) {
        if (!row.is_array() || row.size() != 4 || !row[0].is_number_integer() ||
            !row[1].is_string() || !row[2].is_string() || !row[3].is_number_integer())
            continue;
        EventRecord e;
        e.step = row[0].get<int64_t>();
        e.kind = row[1].get<std::string>();
        e.paramsJson = row[2].get<std::string>();
        e.source = "user";
        rows.emplace_back(row[3].get<int64_t>(), std::move(e));
    }
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
        return std::tie(a.second.step, a.first) < std::tie(b.second.step, b.first);
    });
    std::vector<EventRecord> out;
    for (auto& [id, e] : rows) out.push_back(std::move(e));
    return out;
}

std::string goneMessage(int64_t pid) {
    return "process " + std::to_string(pid) + " on " + thisHostName() +
           " ended without finishing the run";
}

// A comparisons row (name, run_ids, settings_json, created_at, updated_at). Ids that are not
// integers (a hand-edited file) are skipped: the comparison still opens.
SavedComparison readComparison(const Statement& st) {
    SavedComparison c;
    c.name = st.columnText(0);
    nlohmann::json ids;
    try {
        ids = parseStoredJson(st.columnText(1), "run_ids");
    } catch (const Error&) {
    }
    if (ids.is_array())
        for (const auto& id : ids)
            if (id.is_number_integer()) c.runIds.push_back(id.get<int64_t>());
    c.settingsJson = st.columnText(2);
    c.createdAt = st.columnText(3);
    c.updatedAt = st.columnText(4);
    return c;
}

bool isInteger(const std::string& s) {
    if (s.empty() || s.size() > 18) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

}  // namespace

// ---- shared helpers (declared in sqlite_db.h and store_internal.h) ----

// A run marked running whose process on this host is gone. EPERM means the pid is alive
// but someone else's: only ESRCH proves it is gone.
bool writerIsGone(int64_t pid, const std::string& host) {
    if (host != thisHostName()) return false;  // another machine's process: cannot tell
    return pid <= 0 || (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH);
}

// Column 21 of kRunColumns where the file has the table (a reader does not migrate); column 22
// the run's interventions as a JSON array of [step, kind, params, id]; 23..26 the UUID and
// the sweep membership (an older file read as it is: the legacy UUID, no sweep); 27 the
// number of QK-Clip rows (0 in a file from before schema 9).
std::string runColumns(int version) {
    return std::string(kRunColumns) +
           (hasFeature(version, SchemaFeature::LogitAlarms)
                ? ", (SELECT count(*) FROM logit_alarms a WHERE a.run_id = r.id)"
                : ", 0") +
           ", (SELECT json_group_array(json_array(e.step, e.kind, e.params_json, e.id)) "
           "FROM events e WHERE e.run_id = r.id AND e.source = 'user')" +
           (hasFeature(version, SchemaFeature::Sweeps)
                ? ", r.uuid, r.sweep_id, r.sweep_point, r.sweep_coords"
                : std::string(", ") + kLegacyRunUuid + ", NULL, NULL, NULL") +
           // A range scan of the (run_id, step, layer, head) key.
           (hasFeature(version, SchemaFeature::QkClips)
                ? ", (SELECT count(*) FROM qk_clips c WHERE c.run_id = r.id)"
                : ", 0");
}

RunInfo readRun(const Statement& st) {
    RunInfo r;
    r.id = st.columnInt(0);
    r.name = st.columnText(1);
    r.status = runStatusOrUnknown(st.columnText(2));
    r.configJson = st.columnText(3);
    r.seed = st.columnInt(4);
    r.device = st.columnText(5);
    r.torchVersion = st.columnText(6);
    r.appVersion = st.columnText(7);
    r.createdAt = st.columnText(8);
    r.finishedAt = st.columnText(9);
    r.notes = st.columnText(10);
    r.tags = st.columnText(11);
    r.stepsDone = st.columnInt(12);
    r.finalLoss = st.columnOptReal(13);
    r.maxLogitRaw = st.columnOptReal(14);
    r.maxLogitCapped = st.columnOptReal(15);
    r.statusMessage = st.columnText(16);
    r.spikes = st.columnInt(17);
    r.finalValLoss = st.columnOptReal(18);
    r.logitAlarms = st.columnInt(21);
    r.interventions = interventionsFromJson(st.columnText(22));
    r.uuid = st.columnText(23);
    if (!st.isNull(24))
        r.sweep = SweepMembership{st.columnInt(24), st.isNull(25) ? -1 : st.columnInt(25),
                                  st.columnText(26)};
    r.qkClips = st.columnInt(27);
    // Readers show a dead writer's run as interrupted without writing it (only writers
    // persist that, in markInterruptedRuns).
    if (r.status == RunStatus::Running) {
        const int64_t pid = st.isNull(19) ? 0 : st.columnInt(19);
        if (writerIsGone(pid, st.columnText(20))) {
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
        st.bindText(1, thisHostName());
        while (st.step()) {
            int64_t pid = st.isNull(1) ? 0 : st.columnInt(1);
            if (writerIsGone(pid, thisHostName())) dead.emplace_back(st.columnInt(0), pid);
        }
    }
    if (dead.empty()) return 0;
    Transaction tx(*m_db);
    Statement upd(*m_db,
                  "UPDATE runs SET status = 'interrupted', status_message = ? "
                  "WHERE id = ? AND status = 'running'");
    int changed = 0;
    for (const auto& [id, pid] : dead) {
        upd.bindText(1, goneMessage(pid));
        upd.bindInt(2, id);
        upd.exec();
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
    claim.bindInt(1, getpid()).bindText(2, thisHostName()).bindInt(3, runId).exec();
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
    st.bindText(1, toString(before.status)).bindText(2, before.statusMessage);
    st.bindInt(3, before.id).bindInt(4, getpid()).exec();
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
    std::vector<LogitAlarm> out;
    if (!hasFeature(m_version, SchemaFeature::LogitAlarms))
        return out;  // an older file read as it is: no alarms recorded
    Statement st(*m_db,
                 "SELECT step, layer, metric, value, threshold, kind, tier, text FROM "
                 "logit_alarms WHERE run_id = ? ORDER BY step, layer, metric");
    st.bindInt(1, runId);
    while (st.step()) {
        LogitAlarm a;
        a.step = st.columnInt(0);
        a.layer = static_cast<int32_t>(st.columnInt(1));
        a.metric = st.columnText(2);
        a.value = st.columnReal(3);
        a.threshold = st.columnReal(4);
        a.kind = spikeKindOrUnknown(st.columnText(5));
        a.tier = static_cast<int>(st.columnInt(6));
        a.text = st.columnText(7);
        out.push_back(std::move(a));
    }
    return out;
}

std::vector<QkClip> RunStore::qkClips(int64_t runId) {
    std::vector<QkClip> out;
    if (!hasFeature(m_version, SchemaFeature::QkClips))
        return out;  // an older file read as it is: no clips
    Statement st(*m_db,
                 "SELECT step, layer, head, s_max, factor FROM qk_clips WHERE run_id = ? "
                 "ORDER BY step, layer, head");
    st.bindInt(1, runId);
    while (st.step()) {
        QkClip c;
        c.step = st.columnInt(0);
        c.layer = static_cast<int32_t>(st.columnInt(1));
        c.head = static_cast<int32_t>(st.columnInt(2));
        c.sMax = st.columnReal(3);
        c.factor = st.columnReal(4);
        out.push_back(c);
    }
    return out;
}

std::vector<RunInfo> RunStore::listRuns() {
    Statement st(*m_db, "SELECT " + runColumns(m_version) + " FROM runs r ORDER BY r.id");
    std::vector<RunInfo> out;
    while (st.step()) out.push_back(readRun(st));
    return out;
}

RunInfo RunStore::run(int64_t id) {
    Statement st(*m_db, "SELECT " + runColumns(m_version) + " FROM runs r WHERE r.id = ?");
    st.bindInt(1, id);
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
        Statement st(*m_db, "SELECT " + runColumns(m_version) + " FROM runs r WHERE r.id = ?");
        st.bindInt(1, std::stoll(key));
        if (st.step()) return readRun(st);
    }
    if (!byId) {
        Statement st(*m_db, "SELECT " + runColumns(m_version) + " FROM runs r WHERE r.name = ?");
        st.bindText(1, key);
        if (st.step()) return readRun(st);
    }
    throw Error(ErrorCode::NotFound, std::string("no run with ") +
                                         (byId     ? "id"
                                          : byName ? "name"
                                                   : "id or name") +
                                         " '" + clipped(key, 80) + "' in " + path());
}

std::vector<StepMetrics> RunStore::stepMetrics(int64_t runId, int64_t fromStep) {
    Statement st(*m_db, std::string("SELECT step, loss, val_loss, grad_norm, lr, alpha, softcap_c, "
                                    "seq_len, tokens_per_s, ") +
                            // A reader does not migrate: read an older file as it is.
                            (hasFeature(m_version, SchemaFeature::AttentionPath) ? "attention_path"
                                                                                 : "NULL") +
                            " FROM step_metrics WHERE run_id = ? AND step >= ? ORDER BY step");
    st.bindInt(1, runId).bindInt(2, fromStep);
    std::vector<StepMetrics> out;
    while (st.step()) {
        StepMetrics m;
        m.step = st.columnInt(0);
        m.loss = st.columnReal(1);
        m.valLoss = st.columnOptReal(2);
        m.gradNorm = st.columnReal(3);
        m.lr = st.columnReal(4);
        m.alpha = st.columnReal(5);
        m.softcapC = st.columnReal(6);
        m.seqLen = st.columnInt(7);
        m.tokensPerSec = st.columnReal(8);
        m.attentionPath = st.columnText(9);
        out.push_back(m);
    }
    return out;
}

std::vector<ProbeStats> RunStore::probeStats(int64_t runId, std::optional<int32_t> head,
                                             int64_t fromStep) {
    const auto& columns = probeColumns();
    std::string sql = "SELECT step, layer, head";
    for (const auto& c : columns) sql += std::string(", ") + c.name;
    sql += " FROM probe_stats WHERE run_id = ?1 AND step >= ?2";
    if (head) sql += " AND head = ?3";
    sql += " ORDER BY step, layer, head";
    Statement st(*m_db, sql);
    st.bindInt(1, runId).bindInt(2, fromStep);
    if (head) st.bindInt(3, *head);
    std::vector<ProbeStats> out;
    while (st.step()) {
        ProbeStats p;
        p.step = st.columnInt(0);
        p.layer = static_cast<int32_t>(st.columnInt(1));
        p.head = static_cast<int32_t>(st.columnInt(2));
        for (size_t i = 0; i < columns.size(); ++i)
            p.*columns[i].field = st.columnReal(3 + static_cast<int>(i));
        out.push_back(p);
    }
    return out;
}

std::vector<LogitHistogram> RunStore::histograms(int64_t runId, int32_t layer, int32_t head) {
    Statement st(*m_db,
                 std::string("SELECT step, counts, underflow, overflow, ") +
                     (hasFeature(m_version, SchemaFeature::HistogramNaN) ? "nan" : "0") +
                     " FROM histograms WHERE run_id = ? AND layer = ? AND head = ? ORDER BY step");
    st.bindInt(1, runId).bindInt(2, layer).bindInt(3, head);
    std::vector<LogitHistogram> out;
    while (st.step()) {
        LogitHistogram h;
        h.step = st.columnInt(0);
        h.layer = layer;
        h.head = head;
        h.counts = decodeInt64s(st.columnBlob(1));
        h.underflow = st.columnInt(2);
        h.overflow = st.columnInt(3);
        h.nan = st.columnInt(4);
        out.push_back(std::move(h));
    }
    return out;
}

std::vector<int64_t> RunStore::histogramSteps(int64_t runId) {
    Statement st(*m_db, "SELECT DISTINCT step FROM histograms WHERE run_id = ? ORDER BY step");
    st.bindInt(1, runId);
    std::vector<int64_t> out;
    while (st.step()) out.push_back(st.columnInt(0));
    return out;
}

std::vector<AttentionMap> RunStore::attentionMaps(int64_t runId, int64_t step) {
    // A reader does not migrate: a file from before version 6 has no bytes or reasons.
    Statement st(*m_db,
                 std::string("SELECT layer, head, size, weights, ") +
                     (hasFeature(m_version, SchemaFeature::MapReasons) ? "tokens, reason"
                                                                       : "NULL, 'periodic'") +
                     " FROM attention_maps WHERE run_id = ? AND step = ? "
                     "ORDER BY layer, head");
    st.bindInt(1, runId).bindInt(2, step);
    std::vector<AttentionMap> out;
    while (st.step()) {
        AttentionMap m;
        m.step = step;
        m.layer = static_cast<int32_t>(st.columnInt(0));
        m.head = static_cast<int32_t>(st.columnInt(1));
        m.size = static_cast<int32_t>(st.columnInt(2));
        m.weights = decodeFloats(st.columnBlob(3));
        const auto tokens = st.columnBlob(4);
        m.tokens.assign(tokens.begin(), tokens.end());
        m.reason = mapReasonFromString(st.columnText(5));
        out.push_back(std::move(m));
    }
    return out;
}

std::vector<int64_t> RunStore::attentionMapSteps(int64_t runId) {
    Statement st(*m_db, "SELECT DISTINCT step FROM attention_maps WHERE run_id = ? ORDER BY step");
    st.bindInt(1, runId);
    std::vector<int64_t> out;
    while (st.step()) out.push_back(st.columnInt(0));
    return out;
}

std::vector<Spike> RunStore::spikes(int64_t runId) {
    Statement st(*m_db,
                 "SELECT step, metric, value, z_score, kind, tier, probe_step, probe_max_logit, "
                 "baseline_max_logit, probe_qk_norm, baseline_qk_norm, diagnosis FROM spikes "
                 "WHERE run_id = ? ORDER BY step, id");
    st.bindInt(1, runId);
    std::vector<Spike> out;
    while (st.step()) {
        Spike s;
        s.step = st.columnInt(0);
        s.metric = st.columnText(1);
        s.value = st.columnReal(2);
        s.zScore = st.columnReal(3);
        s.kind = spikeKindOrUnknown(st.columnText(4));
        s.tier = static_cast<int>(st.columnInt(5));
        s.probeStep = st.columnInt(6);
        s.probeMaxLogit = st.columnReal(7);
        s.baselineMaxLogit = st.columnReal(8);
        s.probeQkNorm = st.columnReal(9);
        s.baselineQkNorm = st.columnReal(10);
        s.diagnosis = st.columnText(11);
        out.push_back(std::move(s));
    }
    return out;
}

std::vector<EventRecord> RunStore::events(int64_t runId) {
    Statement st(*m_db,
                 "SELECT step, kind, params_json, source FROM events WHERE run_id = ? "
                 "ORDER BY step, id");
    st.bindInt(1, runId);
    std::vector<EventRecord> out;
    while (st.step()) {
        EventRecord e;
        e.step = st.columnInt(0);
        e.kind = st.columnText(1);
        e.paramsJson = st.columnText(2);
        e.source = st.columnText(3);
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<CheckpointInfo> RunStore::checkpoints(int64_t runId) {
    Statement st(*m_db, "SELECT step, path FROM checkpoints WHERE run_id = ? ORDER BY step");
    st.bindInt(1, runId);
    std::vector<CheckpointInfo> out;
    while (st.step())
        out.push_back(resolveCheckpoint(path(), runId, st.columnInt(0), st.columnText(1)));
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
    taken.bindText(1, name).bindInt(2, id);
    if (taken.step())
        throw Error(ErrorCode::InvalidRequest, "a run named '" + name + "' already exists (id " +
                                                   std::to_string(taken.columnInt(0)) + ")");
    Statement st(*m_db, "UPDATE runs SET name = ? WHERE id = ?");
    st.bindText(1, name).bindInt(2, id).exec();
    if (m_db->changes() == 0)
        throw Error(ErrorCode::NotFound, "no run with id " + std::to_string(id) + " in " + path());
    tx.commit();
}

void RunStore::setNotes(int64_t id, const std::string& notes) {
    Statement st(*m_db, "UPDATE runs SET notes = ? WHERE id = ?");
    st.bindText(1, notes).bindInt(2, id).exec();
    if (m_db->changes() == 0)
        throw Error(ErrorCode::NotFound, "no run with id " + std::to_string(id) + " in " + path());
}

void RunStore::setTags(int64_t id, const std::string& tags) {
    Statement st(*m_db, "UPDATE runs SET tags = ? WHERE id = ?");
    st.bindText(1, tags).bindInt(2, id).exec();
    if (m_db->changes() == 0)
        throw Error(ErrorCode::NotFound, "no run with id " + std::to_string(id) + " in " + path());
}

void RunStore::deleteRun(int64_t id) {
    // foreign_keys=ON (set at open) makes ON DELETE CASCADE remove every per-step row.
    Statement st(*m_db, "DELETE FROM runs WHERE id = ?");
    st.bindInt(1, id).exec();
    if (m_db->changes() == 0)
        throw Error(ErrorCode::NotFound, "no run with id " + std::to_string(id) + " in " + path());
}

// ---- saved comparisons ----

void RunStore::saveComparison(const SavedComparison& c) {
    checkName(c.name, "a comparison name");
    const std::string quoted = "comparison '" + clipped(c.name, 60) + "'";
    if (c.runIds.size() < SavedComparison::kMinRuns || c.runIds.size() > SavedComparison::kMaxRuns)
        throw Error(ErrorCode::InvalidRequest,
                    quoted + " has " + std::to_string(c.runIds.size()) + " run id" +
                        (c.runIds.size() == 1 ? "" : "s") + "; a comparison holds " +
                        std::to_string(SavedComparison::kMinRuns) + " to " +
                        std::to_string(SavedComparison::kMaxRuns) + " runs");
    nlohmann::json settings;
    try {
        settings = parseJsonText(c.settingsJson);
    } catch (const Error& e) {
        throw Error(ErrorCode::InvalidRequest,
                    "the settings of " + quoted + " are not valid JSON (" + e.what() + "): " +
                        (c.settingsJson.empty() ? std::string("the text is empty")
                                                : clipped(c.settingsJson, 60)));
    }
    if (!settings.is_object())
        throw Error(
            ErrorCode::InvalidRequest,
            "the settings of " + quoted + " must be a JSON object, not " + shortJson(settings));
    const std::string now = utcNowIso8601();
    // On a read-only store this throws like every other write (SQLite refuses it).
    Statement st(*m_db,
                 "INSERT INTO comparisons(name, run_ids, settings_json, created_at, updated_at) "
                 "VALUES(?1, ?2, ?3, ?4, ?4) ON CONFLICT(name) DO UPDATE SET "
                 "run_ids = excluded.run_ids, settings_json = excluded.settings_json, "
                 "updated_at = excluded.updated_at");
    st.bindText(1, c.name).bindText(2, nlohmann::json(c.runIds).dump());
    st.bindText(3, c.settingsJson).bindText(4, now).exec();
}

std::vector<SavedComparison> RunStore::comparisons() {
    std::vector<SavedComparison> out;
    if (!hasFeature(m_version, SchemaFeature::Comparisons))
        return out;  // an older file read as it is: none
    Statement st(*m_db,
                 "SELECT name, run_ids, settings_json, created_at, updated_at FROM comparisons "
                 "ORDER BY name");
    while (st.step()) out.push_back(readComparison(st));
    return out;
}

SavedComparison RunStore::comparison(const std::string& name) {
    if (hasFeature(m_version, SchemaFeature::Comparisons)) {
        Statement st(*m_db,
                     "SELECT name, run_ids, settings_json, created_at, updated_at FROM "
                     "comparisons WHERE name = ?");
        st.bindText(1, name);
        if (st.step()) return readComparison(st);
    }
    throw Error(ErrorCode::NotFound,
                "no comparison named '" + clipped(name, 80) + "' in " + path());
}

void RunStore::deleteComparison(const std::string& name) {
    if (!hasFeature(m_version,
                    SchemaFeature::Comparisons))  // only a reader of an older file gets here
        throw Error(ErrorCode::NotFound,
                    "no comparison named '" + clipped(name, 80) + "' in " + path());
    Statement st(*m_db, "DELETE FROM comparisons WHERE name = ?");
    st.bindText(1, name).exec();
    if (m_db->changes() == 0)
        throw Error(ErrorCode::NotFound,
                    "no comparison named '" + clipped(name, 80) + "' in " + path());
}

}  // namespace qklab
