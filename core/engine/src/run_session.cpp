// run_session.cpp — a Trainer whose every report is recorded in the run store.
#include "qklab/engine/run_session.h"

#include <algorithm>

#include "qklab/analysis/generate_source.h"
#include "qklab/config/resources.h"
#include "qklab/engine/environment.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"

namespace qklab {
namespace {

// Forwards the trainer's reports to the store's writer and to an optional extra observer.
class Recorder : public TrainingObserver {
  public:
    Recorder(RunWriter& writer, TrainingObserver* extra) : m_writer(writer), m_extra(extra) {}
    void onStep(const StepMetrics& m) override {
        m_writer.addStep(m);
        if (m_extra) m_extra->onStep(m);
    }
    void onProbes(int64_t step, const std::vector<ProbeStats>& stats,
                  const std::vector<LogitHistogram>& hists) override {
        for (const auto& s : stats) m_writer.addProbe(s);
        for (const auto& h : hists) m_writer.addHistogram(h);
        if (m_extra) m_extra->onProbes(step, stats, hists);
    }
    void onAttentionMaps(const std::vector<AttentionMap>& maps) override {
        for (const auto& m : maps) m_writer.addAttentionMap(m);
        if (m_extra) m_extra->onAttentionMaps(maps);
    }
    void onSpike(const Spike& s) override {
        m_writer.addSpike(s);
        if (m_extra) m_extra->onSpike(s);
    }
    void onLogitAlarm(const LogitAlarm& a) override {
        m_writer.addLogitAlarm(a);
        if (m_extra) m_extra->onLogitAlarm(a);
    }
    void onForecast(const Forecast& f) override {
        m_writer.addForecast(f);
        if (m_extra) m_extra->onForecast(f);
    }
    void onQkClips(int64_t step, const std::vector<QkClip>& clips) override {
        for (const auto& c : clips) m_writer.addQkClip(c);
        if (m_extra) m_extra->onQkClips(step, clips);
    }
    void onChangeReport(const ChangeReport& r) override {
        m_writer.addChangeReport(r);
        if (m_extra) m_extra->onChangeReport(r);
    }
    void onEvent(const EventRecord& e) override {
        m_writer.addEvent(e);
        if (m_extra) m_extra->onEvent(e);
    }
    void onCheckpoint(const CheckpointInfo& c) override {
        m_writer.addCheckpoint(c);
        if (m_extra) m_extra->onCheckpoint(c);
    }
    void onFlushPoint() override {
        m_writer.flush();  // commit before the GUI hears about it, so its reads see the rows
        if (m_extra) m_extra->onFlushPoint();
    }

  private:
    RunWriter& m_writer;
    TrainingObserver* m_extra;
};

}  // namespace

struct RunSession::Impl {
    std::unique_ptr<Trainer> trainer;
    std::unique_ptr<RunWriter> writer;
};

std::string defaultCheckpointRoot(const std::string& dbPath) {
    return checkpointFolder(dbPath);
}

static std::string checkpointDirFor(const std::string& root, int64_t runId) {
    return root.empty() ? std::string() : root + "/run-" + std::to_string(runId);
}

RunSession::RunSession(const RunConfig& config, const SessionOptions& options)
    : m_impl(std::make_unique<Impl>()) {
    auto& d = *m_impl;
    // Before anything is allocated or stored: a run that cannot fit in memory is bad input
    // (it used to die in the allocator, sometimes after 20 s, sometimes leaving a row).
    if (const std::string problem = memoryProblem(config); !problem.empty())
        throw Error(ErrorCode::InvalidConfig, problem);
    // Build the trainer next: a bad config or a missing data file throws before the store
    // gets a run row.
    d.trainer = std::make_unique<Trainer>(config);
    NewRun run;
    run.name = options.name;
    run.sweep = options.sweep;
    run.configJson = configToJson(config).dump();
    run.seed = config.run.seed;
    run.device = d.trainer->deviceDescription();
    run.torchVersion = torchVersion();
    run.appVersion = appVersion();
    d.writer = std::make_unique<RunWriter>(options.dbPath, run);
    // Always the database's own folder: the store reads and deletes checkpoints only there.
    d.trainer->setCheckpointDir(
        checkpointDirFor(checkpointFolder(options.dbPath), d.writer->runId()));
}

std::unique_ptr<RunSession> RunSession::resume(const std::string& dbPath, int64_t runId) {
    RunStore store(dbPath);
    if (const std::string why = outsideQklabReason(store.run(runId), "resume"); !why.empty())
        throw Error(ErrorCode::InvalidRequest, why);
    // Claimed first, atomically: a second resume of the same run started at the same time
    // is refused here, before either loads anything.
    const RunInfo info = store.claimForResume(runId);
    try {
        return resumeClaimed(store, dbPath, info);
    } catch (...) {
        try {
            store.releaseResumeClaim(info);
        } catch (const Error&) {  // the original failure is what the user needs to see
        }
        throw;
    }
}

std::unique_ptr<RunSession> RunSession::resumeClaimed(RunStore& store, const std::string& dbPath,
                                                      const RunInfo& info) {
    const int64_t runId = info.id;
    // The newest checkpoint whose file exists (a kill can leave a row without its file).
    std::string why;
    const auto last = newestExistingCheckpoint(store, runId, &why);
    if (!last)
        throw Error(ErrorCode::NotFound,
                    "run " + std::to_string(runId) + " has no checkpoint to resume from: " + why);

    // The stored config plus the user's interventions before the checkpoint reproduce the
    // run up to there; the checkpoint holds weights, optimizer and sampler state.
    RunConfig config =
        configFromJsonText(info.configJson, "run " + std::to_string(runId) + " config");
    for (const auto& e : store.events(runId))
        if (e.source == nameOf(EventSource::User) && e.step < last->step)
            config.events.push_back(eventFromRecord(e.step, e.kind, e.paramsJson, e.source));
    std::stable_sort(config.events.begin(), config.events.end(),
                     [](const Event& a, const Event& b) { return a.step < b.step; });

    std::unique_ptr<RunSession> session(new RunSession());
    session->m_impl = std::make_unique<Impl>();
    auto& d = *session->m_impl;
    TrainerOptions options;
    options.resumeFrom = last->path;
    for (ProbeStats& p : store.probeStats(runId))
        if (p.step < last->step) options.storedProbes.push_back(std::move(p));
    for (LogitAlarm& a : store.logitAlarms(runId))
        if (a.step < last->step) options.storedAlarms.push_back(std::move(a));
    d.trainer = std::make_unique<Trainer>(config, options);
    d.trainer->setCheckpointDir(checkpointDirFor(defaultCheckpointRoot(dbPath), runId));
    d.writer = std::make_unique<RunWriter>(dbPath, runId, last->step);
    return session;
}

RunSession::~RunSession() = default;

RunOutcome RunSession::run(TrainingObserver* extra) {
    auto& d = *m_impl;
    Recorder recorder(*d.writer, extra);
    try {
        RunOutcome outcome = d.trainer->run(recorder);
        d.writer->finish(outcome.status, outcome.message);
        return outcome;
    } catch (const std::exception& e) {
        // Anything thrown mid-run (out of memory, a store that cannot be written) stops the run
        // here and fails it with the reason, keeping every committed row. When even the
        // status cannot be stored the error says so: the caller must not believe it was.
        const auto* err = dynamic_cast<const Error*>(&e);
        const std::string reason = err ? e.what() : std::string("training failed: ") + e.what();
        const RunWriter::FailureRecord record = d.writer->fail(reason);
        const std::string message =
            record.stored ? record.message
                          : record.message + "; the run's status could not be stored either (" +
                                record.why + ")";
        throw Error(err ? err->code() : ErrorCode::Internal, message);
    }
}

int64_t RunSession::runId() const {
    return m_impl->writer->runId();
}
Trainer& RunSession::trainer() {
    return *m_impl->trainer;
}

}  // namespace qklab
