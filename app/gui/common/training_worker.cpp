// training_worker.cpp — the bridge between the blocking engine and the GUI event loop.
#include "common/training_worker.h"

#include <QElapsedTimer>
#include <cmath>
#include <exception>

#include "qklab/engine/run_session.h"
#include "qklab/util/error.h"

namespace qklab::gui {

// Sees every engine callback on the training thread. Rows are appended to one batch and the
// batch leaves as a single queued signal when the interval has passed, so the GUI gets ~20
// updates per second however fast the model trains.
class TrainingWorker::Observer : public TrainingObserver {
  public:
    Observer(TrainingWorker* worker, int64_t runId, int64_t totalSteps)
        : m_worker(worker), m_totalSteps(totalSteps) {
        m_batch.runId = runId;
        m_timer.start();
    }

    void onStep(const StepMetrics& m) override {
        m_batch.steps.push_back(m);
        m_lastStep = m.step;
        if (std::isfinite(m.tokensPerSec)) m_tokensPerSec = m.tokensPerSec;
        watch([&](PauseWatcher& w) { return w.onStep(m); });
        m_worker->postScheduled(m.step);
        // The step's last report: a callout fired during it leaves with all of its rows.
        if (m_pendingCallout) {
            emitNow();
            emit m_worker->calloutFired(m_batch.runId, *m_pendingCallout);
            m_pendingCallout.reset();
        }
        maybeEmit();
    }
    void onProbes(int64_t step, const std::vector<ProbeStats>& rows,
                  const std::vector<LogitHistogram>& hists) override {
        for (const auto& r : rows) m_batch.probes.push_back(r);
        if (!hists.empty()) m_batch.newHistograms = true;
        watch([&](PauseWatcher& w) { return w.onProbes(step, rows); });
        maybeEmit();
    }
    void onAttentionMaps(const std::vector<AttentionMap>& maps) override {
        if (!maps.empty()) m_batch.newAttentionMaps = true;
    }
    void onSpike(const Spike& s) override {
        m_batch.spikes.push_back(s);
        watch([&](PauseWatcher& w) { return w.onSpike(s); });
    }
    void onLogitAlarm(const LogitAlarm& a) override {
        m_batch.alarms.push_back(a);
        watch([&](PauseWatcher& w) { return w.onLogitAlarm(a); });
    }
    void onQkClips(int64_t, const std::vector<QkClip>& clips) override {
        for (const auto& c : clips) m_batch.clips.push_back(c);
    }
    void onEvent(const EventRecord& e) override { m_batch.events.push_back(e); }
    void onChangeReport(const ChangeReport& r) override { m_batch.changeReports.push_back(r); }
    void onForecast(const Forecast& f) override {
        m_batch.forecasts.push_back(f);
        watch([&](PauseWatcher& w) { return w.onForecast(f); });
    }
    // A paused (or stopping) trainer waits after this: what it reported must be on screen.
    void onFlushPoint() override {
        if (m_worker->m_pauseRequested.load() || m_worker->m_stopRequested.load())
            emitNow();
        else
            maybeEmit();
    }

    void emitNow() {
        if (!m_batch.empty()) {
            const int64_t runId = m_batch.runId;
            emit m_worker->batchReady(m_batch);
            m_batch = LiveBatch{};
            m_batch.runId = runId;
        }
        if (m_lastStep >= 0) {
            emit m_worker->progress(m_batch.runId, m_lastStep + 1, m_totalSteps, m_tokensPerSec);
        }
        m_timer.restart();
    }

  private:
    // A lesson's pause condition fired: the trainer was asked to pause and stops after this
    // step; the callout leaves with the step's last report (onStep), after the step's rows.
    void watch(const std::function<std::optional<Callout>(PauseWatcher&)>& feed) {
        Callout fired;
        if (!m_pendingCallout && m_worker->checkHooks(feed, &fired)) m_pendingCallout = fired;
    }
    void maybeEmit() {
        if (m_timer.elapsed() >= TrainingWorker::kBatchIntervalMs) emitNow();
    }

    TrainingWorker* m_worker;
    int64_t m_totalSteps;
    LiveBatch m_batch;
    QElapsedTimer m_timer;
    int64_t m_lastStep = -1;
    double m_tokensPerSec = 0;
    std::optional<Callout> m_pendingCallout;
};

TrainingWorker::TrainingWorker(QObject* parent) : QObject(parent) {}

TrainingWorker::~TrainingWorker() = default;

void TrainingWorker::pause() {
    m_pauseRequested = true;
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_session) m_session->trainer().requestPause();
}

void TrainingWorker::resume() {
    m_pauseRequested = false;
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_session) m_session->trainer().requestResume();
}

void TrainingWorker::stop() {
    m_stopRequested = true;
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_session) {
        // A paused trainer must wake up to see the stop flag.
        m_session->trainer().requestStop();
        m_session->trainer().requestResume();
    }
}

void TrainingWorker::setPauseConditions(std::vector<PauseCondition> conditions) {
    std::lock_guard<std::mutex> lock(m_hookMutex);
    m_watcher =
        conditions.empty() ? nullptr : std::make_unique<PauseWatcher>(std::move(conditions));
}

void TrainingWorker::scheduleIntervention(const Event& event, int64_t atStep) {
    std::lock_guard<std::mutex> lock(m_hookMutex);
    m_scheduled.emplace_back(atStep, event);
}

// Training thread: feeds the watcher; on a callout pauses the trainer (the GUI's controller
// learns of it through calloutFired).
bool TrainingWorker::checkHooks(const std::function<std::optional<Callout>(PauseWatcher&)>& feed,
                                Callout* fired) {
    std::optional<Callout> c;
    {
        std::lock_guard<std::mutex> lock(m_hookMutex);
        if (!m_watcher) return false;
        c = feed(*m_watcher);
    }
    if (!c) return false;
    *fired = *c;
    m_pauseRequested = true;
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_session) m_session->trainer().requestPause();
    return true;
}

void TrainingWorker::postScheduled(int64_t reportedStep) {
    std::vector<Event> due;
    {
        std::lock_guard<std::mutex> lock(m_hookMutex);
        for (auto it = m_scheduled.begin(); it != m_scheduled.end();) {
            if (reportedStep + 1 >= it->first) {
                due.push_back(it->second);
                it = m_scheduled.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (const Event& e : due) {
        QString error;
        if (!intervene(e, &error)) emit interventionRefused(m_runId.load(), error);
    }
}

bool TrainingWorker::isPaused() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_session && m_session->trainer().isPaused();
}

bool TrainingWorker::intervene(const Event& event, QString* error) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_session) {
        if (error) *error = tr("Nothing is training: start a run first.");
        return false;
    }
    // The trainer validates the event on the caller's (GUI) thread and throws on a bad one;
    // an exception escaping here would take the whole app down.
    try {
        m_session->trainer().postIntervention(event);
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

void TrainingWorker::runOne(const RunRequest& request) {
    // m_stopRequested is cleared at the end, not here: a stop pressed between queueing and
    // this slot running must still stop the run.
    int64_t runId = 0;
    try {
        SessionOptions options;
        options.dbPath = request.dbPath.toStdString();
        options.name = request.name.toStdString();
        RunSession session(request.config, options);
        runId = session.runId();
        m_runId = runId;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_session = &session;
            if (m_stopRequested) session.trainer().requestStop();
        }
        setPauseConditions(request.pauses);
        emit started(runId, request.name, request.config.schedule.steps);

        Observer observer(this, runId, request.config.schedule.steps);
        RunOutcome outcome;
        try {
            outcome = session.run(&observer);
        } catch (...) {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_session = nullptr;
            throw;
        }
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_session = nullptr;
        }
        observer.emitNow();
        const QString message = QString::fromStdString(outcome.message);
        if (outcome.status == RunStatus::Diverged) emit diverged(runId, message);
        emit finished(runId, QString::fromLatin1(toString(outcome.status)), message);
    } catch (const Error& e) {
        const bool storage = e.code() == ErrorCode::Database || e.code() == ErrorCode::Io ||
                             e.code() == ErrorCode::NotQklabDatabase;
        emit failed(runId, QString::fromStdString(e.what()), storage);
    } catch (const std::exception& e) {
        emit failed(runId, QStringLiteral("Training crashed: %1").arg(e.what()), false);
    } catch (...) {
        emit failed(runId, QStringLiteral("Training crashed with an unknown error"), false);
    }
    {
        std::lock_guard<std::mutex> lock(m_hookMutex);
        m_watcher.reset();
        m_scheduled.clear();
    }
    m_runId = 0;
    m_stopRequested = false;
    m_pauseRequested = false;
}

}  // namespace qklab::gui
