// run_writer.cpp — RunWriter, the single writer of one run.
//
// The trainer adds rows as it produces them; flush() commits everything buffered in one
// transaction and keeps the run row's summary (steps_done, final_loss, max logits) current,
// so the run list never has to aggregate per-step tables. A process killed between flushes
// loses only its last uncommitted batch: WAL makes every committed batch durable and readable.
#include "qklab/store/run_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "checkpoint_paths.h"
#include "disk_reserve.h"
#include "qklab/store/run_store.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"
#include "qklab/util/version.h"
#include "record_rows.h"
#include "schema.h"
#include "sqlite_db.h"
#include "sqlite_files.h"

namespace qklab {

namespace {

// NaN never wins a maximum: one NaN probe must not hide the largest finite logit seen.
void raiseMax(std::optional<double>& current, double value) {
    if (std::isnan(value)) return;
    if (!current || value > *current) current = value;
}

constexpr const char* kFiniteLoss =
    "loss IS NOT NULL AND loss BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308";

}  // namespace

struct RunWriter::Impl {
    std::unique_ptr<Database> db;  // first member: statements below are finalized before it
    std::string dbPath;
    int64_t runId = 0;
    bool finished = false;
    // The WAL and -shm this connection writes through (sqlite_files.h). Once they are no
    // longer the files on disk, nothing more is written through this connection: `lost`.
    std::optional<JournalIdentity> journal;
    bool lost = false;
    DiskReserve reserve;  // this writer's own room to store why it failed (disk_reserve.h)

    std::vector<StepMetrics> steps;
    std::vector<ProbeStats> probes;
    std::vector<LogitHistogram> histograms;
    std::vector<AttentionMap> maps;
    std::vector<Spike> spikes;
    std::vector<LogitAlarm> alarms;
    std::vector<QkClip> clips;
    std::vector<ChangeReport> changeReports;
    std::vector<Forecast> forecasts;
    std::vector<CustomScalar> customs;
    std::vector<EventRecord> events;
    std::vector<CheckpointInfo> checkpoints;

    // The run row's summary as last committed.
    int64_t stepsDone = 0;
    std::optional<double> finalLoss, maxRaw, maxCapped;

    // Prepared once, reused by every flush.
    std::unique_ptr<Statement> insStep, insProbe, insHist, insMap, insSpike, insEvent, insCkpt;
    std::unique_ptr<Statement> insAlarm, insClip, insCustom, insChange, insForecast;
    std::unique_ptr<Statement> updSummary;

    Statement& prepared(std::unique_ptr<Statement>& slot, const std::string& sql) {
        if (!slot) slot = std::make_unique<Statement>(*db, sql);
        return *slot;
    }

    // The rows of one record, bound from its column table.
    template <class Record>
    void insertAll(std::unique_ptr<Statement>& slot, const RecordTable<Record>& table,
                   const std::vector<Record>& rows) {
        if (!rows.empty()) insertRows(prepared(slot, insertSql(table)), table, runId, rows);
    }

    bool empty() const {
        return steps.empty() && probes.empty() && histograms.empty() && maps.empty() &&
               spikes.empty() && alarms.empty() && clips.empty() && customs.empty() &&
               changeReports.empty() && forecasts.empty() && events.empty() && checkpoints.empty();
    }

    void writeRows();
    void dropCheckpointsBefore(int64_t step);
    void clearBuffers();
    // Before the first write: room to report a full disk, or Error{Io} when there is none.
    void reserveRoom();
    // After opening: remember the journal files.
    void watchJournal();
    // Throws Error{Database} (and marks the connection lost) when the journal was replaced.
    void checkJournal();
};

void RunWriter::Impl::reserveRoom() {
    if (!db->isMemory()) reserve = DiskReserve(db->path());
}

void RunWriter::Impl::watchJournal() {
    dbPath = db->path();
    if (db->isMemory()) return;
    journal = JournalIdentity::of(dbPath);
}

void RunWriter::Impl::checkJournal() {
    if (lost)
        throw Error(ErrorCode::Database, "run " + std::to_string(runId) + " no longer writes to " +
                                             dbPath + " (its journal was replaced)");
    if (!journal) return;
    const std::string change = journal->changeSince(dbPath);
    if (change.empty()) return;
    lost = true;
    throw Error(ErrorCode::Database,
                change + " while run " + std::to_string(runId) +
                    " was writing to it: this process lost SQLite's locks on the database "
                    "(something in it opened and closed the file) and another process then "
                    "removed the journal this run wrote through. The run stops here so that "
                    "the database is not corrupted; its last rows may be missing from the file.");
}

void RunWriter::Impl::clearBuffers() {
    steps.clear();
    probes.clear();
    histograms.clear();
    maps.clear();
    spikes.clear();
    alarms.clear();
    clips.clear();
    changeReports.clear();
    forecasts.clear();
    customs.clear();
    events.clear();
    checkpoints.clear();
}

// A run keeps only its newest checkpoint. Older ones go only after the newest one's row is
// committed: their rows first (no row may point at a deleted file), then their files. A kill
// in between leaves an orphan file, never a run without a usable checkpoint. Only files that
// resolve into the run's own checkpoint folder are deleted (an imported or hand-edited row may
// name any file). Best effort: cleanup never fails a flush.
void RunWriter::Impl::dropCheckpointsBefore(int64_t step) {
    try {
        const auto resolved = [&](int64_t s, const std::string& stored) {
            return resolveCheckpoint(db->path(), runId, s, stored).path;
        };
        const int version = latestSchemaVersion();  // a writer's file is migrated
        const auto keep = readRowsWhere(*db, version, checkpointTable(), runId, "step = ?", step);
        const std::string newest = keep.empty() ? "" : resolved(step, keep.front().path);
        std::vector<std::string> paths;
        for (const StoredCheckpoint& c :
             readRowsWhere(*db, version, checkpointTable(), runId, "step < ?", step))
            paths.push_back(resolved(c.step, c.path));
        Statement del(*db, "DELETE FROM checkpoints WHERE run_id = ? AND step < ?");
        del.bindAll(runId, step).exec();
        for (const auto& p : paths)
            if (!p.empty() && p != newest) std::remove(p.c_str());
    } catch (const Error&) {
    }
}

void RunWriter::Impl::writeRows() {
    insertAll(insStep, stepMetricTable(), steps);
    insertAll(insProbe, probeStatTable(), probes);
    insertAll(insHist, histogramTable(), histograms);
    insertAll(insMap, attentionMapTable(), maps);
    insertAll(insSpike, spikeTable(), spikes);
    insertAll(insAlarm, logitAlarmTable(), alarms);
    insertAll(insClip, qkClipTable(), clips);
    insertAll(insCustom, customScalarTable(), customs);
    insertAll(insChange, changeReportTable(), changeReports);
    insertAll(insForecast, forecastTable(), forecasts);
    insertAll(insEvent, eventTable(), events);
    std::vector<StoredCheckpoint> stored;
    for (const CheckpointInfo& c : checkpoints)  // relative: readable from any working directory
        stored.push_back(
            {c.step, storedCheckpointPath(db->path(), runId, c.path), utcNowIso8601()});
    insertAll(insCkpt, checkpointTable(), stored);
}

std::string storedUserConfig(const std::string& text) {
    if (text.empty()) return text;
    const std::string quoted = quoteNonFiniteNumbers(text);
    nlohmann::json j;
    try {
        j = parseStoredJson(quoted, "user_config");
    } catch (const Error& e) {
        throw Error(ErrorCode::InvalidRequest, e.what());
    }
    if (!j.is_object())
        throw Error(ErrorCode::InvalidRequest,
                    "user_config is not a JSON object: '" + shortJson(j) + "'");
    return quoted;
}

// ---- RunWriter ----

RunWriter::RunWriter(const std::string& dbPath, const NewRun& run) : m_impl(new Impl) {
    Impl& d = *m_impl;
    if (!run.name.empty()) checkRunName(run.name);
    const std::string userConfig = storedUserConfig(run.userConfigJson);
    d.db = openRunDatabase(dbPath);
    d.reserveRoom();  // a run that could not say why it failed is not started
    // One write transaction: the uniqueness check and the insert see the same database.
    Transaction tx(*d.db);
    if (!run.name.empty()) {
        Statement taken(*d.db, "SELECT id FROM runs WHERE name = ?");
        taken.bindAll(run.name);
        if (taken.step())
            throw Error(ErrorCode::InvalidRequest,
                        "a run named '" + run.name + "' already exists in " + dbPath + " (id " +
                            std::to_string(taken.columnInt("id")) + "); choose another name");
    }
    // An unnamed run is inserted under a placeholder (invisible until commit) and renamed
    // "run-<id>" once its id is known.
    Statement ins(*d.db,
                  "INSERT INTO runs(name, status, config_json, seed, device, torch_version, "
                  "app_version, created_at, pid, host, uuid, sweep_id, sweep_point, "
                  "sweep_coords, source, user_config) VALUES(?, 'running', ?,?,?,?,?,?,?,?,?,?,?,?,"
                  "?,?)");
    using Sweep = std::optional<int64_t>;
    const auto& sweep = run.sweep;
    ins.bindAll(run.name.empty() ? "\x01pending" : run.name, run.configJson, run.seed, run.device,
                run.torchVersion, run.appVersion.empty() ? appVersion() : run.appVersion,
                utcNowIso8601(), getpid(), thisHostName(), newUuid(),
                sweep ? Sweep(sweep->sweepId) : Sweep(), sweep ? Sweep(sweep->point) : Sweep(),
                sweep ? std::optional<std::string>(sweep->coordsJson) : std::nullopt, run.source,
                userConfig);
    ins.exec();
    d.runId = d.db->lastInsertId();
    if (run.name.empty()) {
        Statement taken(*d.db, "SELECT 1 FROM runs WHERE name = ?");
        std::string name = "run-" + std::to_string(d.runId);
        for (int k = 2;; ++k) {  // someone may have named a run "run-7" by hand
            taken.reset();
            taken.bindAll(name);
            if (!taken.step()) break;
            name = "run-" + std::to_string(d.runId) + "-" + std::to_string(k);
        }
        Statement rename(*d.db, "UPDATE runs SET name = ? WHERE id = ?");
        rename.bindAll(name, d.runId).exec();
    }
    tx.commit();
    d.watchJournal();
}

RunWriter::RunWriter(const std::string& dbPath, int64_t runId, int64_t fromStep)
    : m_impl(new Impl) {
    Impl& d = *m_impl;
    d.db = openRunDatabase(dbPath);
    d.runId = runId;
    d.reserveRoom();
    Transaction tx(*d.db);
    {
        Statement exists(*d.db, "SELECT 1 FROM runs WHERE id = ?");
        exists.bindAll(runId);
        if (!exists.step())
            throw Error(ErrorCode::NotFound, "cannot resume run " + std::to_string(runId) +
                                                 ": no such run in " + dbPath);
    }
    // Every record from fromStep on is made again by the resumed run. A clip at step s scaled
    // the weights after s's update, before the checkpoint of s + 1: clips from fromStep on are
    // done again. Events before fromStep are history (the trainer reports config events only
    // when they take effect, so those at or after fromStep are reported again as the run
    // reaches them). The checkpoint at fromStep is the one being resumed from: it is kept.
    forEachRecordTable([&](const auto& t) {
        const bool kept = std::string(t.table) == checkpointTable().table;
        Statement st(*d.db, std::string("DELETE FROM ") + t.table + " WHERE run_id = ? AND step " +
                                (kept ? ">" : ">=") + " ?");
        st.bindAll(runId, fromStep).exec();
    });

    // Recompute the summary from what is left, so later flushes extend the right values.
    {
        Statement st(*d.db,
                     std::string("SELECT (SELECT max(step) + 1 FROM step_metrics WHERE run_id = "
                                 "?1) AS steps, (SELECT loss FROM step_metrics WHERE run_id = ?1 "
                                 "AND ") +
                         kFiniteLoss +
                         " ORDER BY step DESC LIMIT 1) AS final_loss,"
                         " (SELECT max(logit_max_raw) FROM probe_stats WHERE run_id = ?1 AND "
                         "head = -1) AS max_raw,"
                         " (SELECT max(logit_max_capped) FROM probe_stats WHERE run_id = ?1 AND "
                         "head = -1) AS max_capped");
        st.bindAll(runId);
        st.step();
        d.stepsDone = st.columnOptInt("steps").value_or(0);
        d.finalLoss = st.columnOptReal("final_loss");
        d.maxRaw = st.columnOptReal("max_raw");
        d.maxCapped = st.columnOptReal("max_capped");
    }
    Statement upd(*d.db,
                  "UPDATE runs SET status = 'running', finished_at = NULL, status_message = '', "
                  "pid = ?, host = ?, steps_done = ?, final_loss = ?, max_logit_raw = ?, "
                  "max_logit_capped = ? WHERE id = ?");
    upd.bindAll(getpid(), thisHostName(), d.stepsDone, d.finalLoss, d.maxRaw, d.maxCapped, runId);
    upd.exec();
    tx.commit();
    d.watchJournal();
}

RunWriter::~RunWriter() {
    if (m_impl->lost) return;  // nothing more goes through a connection that lost its journal
    try {
        flush();
        // A writer dropped without finish() (an exception unwound the trainer) would otherwise
        // look "running" for as long as this process lives, e.g. the whole GUI session.
        if (!m_impl->finished) {
            Statement st(*m_impl->db,
                         "UPDATE runs SET status = 'interrupted', status_message = "
                         "'the writer was closed before the run finished' WHERE id = ? AND "
                         "status = 'running'");
            st.bindAll(m_impl->runId).exec();
        }
    } catch (...) {
        // Destructors never throw; the rows stay buffered and are lost, as with a kill.
    }
}

int64_t RunWriter::runId() const {
    return m_impl->runId;
}

void RunWriter::addStep(const StepMetrics& m) {
    m_impl->steps.push_back(m);
}

void RunWriter::addProbe(const ProbeStats& p) {
    m_impl->probes.push_back(p);
}

void RunWriter::addHistogram(const LogitHistogram& h) {
    m_impl->histograms.push_back(h);
}

void RunWriter::addAttentionMap(const AttentionMap& m) {
    if (m.size < 0 || m.weights.size() != static_cast<size_t>(m.size) * m.size)
        throw Error(ErrorCode::Internal, "attention map of step " + std::to_string(m.step) +
                                             " has " + std::to_string(m.weights.size()) +
                                             " weights for size " + std::to_string(m.size));
    m_impl->maps.push_back(m);
}

void RunWriter::addSpike(const Spike& s) {
    m_impl->spikes.push_back(s);
}

void RunWriter::addLogitAlarm(const LogitAlarm& a) {
    m_impl->alarms.push_back(a);
}

void RunWriter::addQkClip(const QkClip& c) {
    m_impl->clips.push_back(c);
}

void RunWriter::addChangeReport(const ChangeReport& r) {
    m_impl->changeReports.push_back(r);
}

void RunWriter::addForecast(const Forecast& f) {
    m_impl->forecasts.push_back(f);
}

void RunWriter::addCustomScalar(const CustomScalar& c) {
    m_impl->customs.push_back(c);
}

void RunWriter::addEvent(const EventRecord& e) {
    m_impl->events.push_back(e);
}

void RunWriter::addCheckpoint(const CheckpointInfo& c) {
    m_impl->checkpoints.push_back(c);
}

void RunWriter::flush() {
    Impl& d = *m_impl;
    if (d.empty()) return;

    // The new summary is computed aside and adopted only after COMMIT succeeds: a failed
    // flush leaves both the buffers and the summary as they were, ready for a retry.
    int64_t stepsDone = d.stepsDone;
    std::optional<double> finalLoss = d.finalLoss, maxRaw = d.maxRaw, maxCapped = d.maxCapped;
    for (const StepMetrics& m : d.steps) {
        stepsDone = std::max(stepsDone, m.step + 1);
        if (std::isfinite(m.loss)) finalLoss = m.loss;
    }
    for (const ProbeStats& p : d.probes) {
        if (p.head != -1) continue;  // the run's summary is over whole-layer rows
        raiseMax(maxRaw, p.logitMaxRaw);
        raiseMax(maxCapped, p.logitMaxCapped);
    }

    int64_t newestCheckpoint = -1;
    for (const CheckpointInfo& c : d.checkpoints)
        newestCheckpoint = std::max(newestCheckpoint, c.step);

    d.checkJournal();  // before: nothing is written into a journal nobody else reads
    Transaction tx(*d.db);
    d.writeRows();
    Statement& st = d.prepared(d.updSummary,
                               "UPDATE runs SET steps_done = ?, final_loss = ?, max_logit_raw = ?, "
                               "max_logit_capped = ? WHERE id = ?");
    st.bindAll(stepsDone, finalLoss, maxRaw, maxCapped, d.runId).exec();
    tx.commit();
    d.checkJournal();  // after: a commit into a replaced journal never reached the file

    d.stepsDone = stepsDone;
    d.finalLoss = finalLoss;
    d.maxRaw = maxRaw;
    d.maxCapped = maxCapped;
    d.clearBuffers();
    if (newestCheckpoint >= 0) d.dropCheckpointsBefore(newestCheckpoint);
}

void RunWriter::finish(RunStatus status, const std::string& message) {
    flush();
    m_impl->checkJournal();
    Statement st(*m_impl->db,
                 "UPDATE runs SET status = ?, status_message = ?, finished_at = ? WHERE id = ?");
    st.bindAll(toString(status), message, utcNowIso8601(), m_impl->runId).exec();
    m_impl->checkJournal();  // "finished" only when it reached the file
    m_impl->finished = true;
}

RunWriter::FailureRecord RunWriter::fail(const std::string& reason) {
    Impl& d = *m_impl;
    d.finished = true;  // the destructor neither flushes nor marks the run interrupted
    FailureRecord record;
    // What the trainer reported before it failed is kept when it can still be committed.
    int64_t firstLost = -1, lastLost = -1;
    try {
        flush();
    } catch (const std::exception&) {
        for (const StepMetrics& m : d.steps) {
            firstLost = firstLost < 0 ? m.step : std::min(firstLost, m.step);
            lastLost = std::max(lastLost, m.step);
        }
        d.clearBuffers();
    }
    record.message = reason;
    if (firstLost >= 0)
        record.message +=
            lastLost > firstLost
                ? " (the rows of steps " + std::to_string(firstLost) + "-" +
                      std::to_string(lastLost) + " were not stored)"
                : " (the rows of step " + std::to_string(firstLost) + " were not stored)";
    if (d.lost) {
        record.why = "nothing more is written through a connection whose journal was replaced";
        return record;
    }
    d.reserve.release();  // a full disk: the room to say so
    try {
        Transaction tx(*d.db);
        Statement st(*d.db,
                     "UPDATE runs SET status = 'failed', status_message = ?, finished_at = ? "
                     "WHERE id = ?");
        st.bindAll(record.message, utcNowIso8601(), d.runId).exec();
        tx.commit();
        d.checkJournal();
        record.stored = true;
    } catch (const std::exception& e) {
        record.why = e.what();
    }
    return record;
}

}  // namespace qklab
