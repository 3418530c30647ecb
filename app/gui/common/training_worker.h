// training_worker.h — runs one training run on a worker thread and turns the engine's
// callbacks into queued Qt signals.
//
// The worker object lives in a QThread (RunController owns both). runOne() blocks that thread
// inside RunSession::run(), so its event loop cannot deliver slots while a run trains: the
// controls (pause/resume/stop/intervene) are plain thread-safe methods that the GUI thread
// calls directly and that forward to the trainer's atomic flags. Callbacks are collected into
// a LiveBatch and emitted at most every ~50 ms. Every exception is caught and reported through
// failed(): the app never dies with a run.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/gui_types.h"

namespace qklab {
class RunSession;
}

namespace qklab::gui {

class TrainingWorker : public QObject {
    Q_OBJECT
  public:
    explicit TrainingWorker(QObject* parent = nullptr);
    ~TrainingWorker() override;

    // Thread-safe; no effect when no run is active.
    void pause();
    void resume();
    void stop();
    // Posts an intervention to the running trainer; false (with *error) when nothing is
    // running or the trainer rejects it (e.g. a context longer than the model was built for).
    bool intervene(const Event& event, QString* error = nullptr);
    bool isPaused() const;
    int64_t currentRunId() const { return m_runId.load(); }

    // Lesson hooks, checked on the training thread as each row is reported, so that they act
    // at the exact step rather than a GUI round trip (~50 ms, several steps) later.
    // Replaces the active run's pause conditions (the request's own apply from its start);
    // when one fires the trainer pauses after that step and calloutFired() follows the batch
    // that holds the step.
    void setPauseConditions(std::vector<PauseCondition> conditions);
    // Posts `event` when step atStep - 1 has been reported, so that it applies at atStep
    // (later when the trainer reads steps back in bulk, as on a GPU). Cleared when a run ends.
    void scheduleIntervention(const Event& event, int64_t atStep);

  public slots:
    // Builds the session (validates, writes the run row) and trains to the end. Blocks.
    void runOne(const qklab::gui::RunRequest& request);

  signals:
    void started(qint64 runId, const QString& name, qint64 totalSteps);
    void batchReady(const qklab::gui::LiveBatch& batch);
    void progress(qint64 runId, qint64 step, qint64 totalSteps, double tokensPerSec);
    // Emitted for every run that ran (finished, stopped or diverged); status is toString().
    void finished(qint64 runId, const QString& status, const QString& message);
    // Additionally emitted when the loss became non-finite (an outcome, not an error).
    void diverged(qint64 runId, const QString& message);
    // The run could not be built or crashed; runId is 0 when nothing was written. storage:
    // the run database could not be written (or read), so the app must say so until dismissed.
    void failed(qint64 runId, const QString& message, bool storage);
    // A pause condition fired: the trainer pauses after callout.step.
    void calloutFired(qint64 runId, const qklab::Callout& callout);
    // A scheduled intervention was refused by the trainer.
    void interventionRefused(qint64 runId, const QString& message);

  private:
    class Observer;
    friend class Observer;

    mutable std::mutex m_mutex;  // guards m_session against stop() during teardown
    RunSession* m_session = nullptr;
    std::atomic<bool> m_stopRequested{false};
    std::atomic<bool> m_pauseRequested{false};  // the next flush point sends everything
    std::atomic<int64_t> m_runId{0};
    static constexpr int kBatchIntervalMs = 50;  // how often batches leave the worker

    // The lesson hooks (guarded by m_hookMutex: set on the GUI thread, read on the training one).
    bool checkHooks(const std::function<std::optional<Callout>(PauseWatcher&)>& feed,
                    Callout* fired);
    void postScheduled(int64_t reportedStep);
    std::mutex m_hookMutex;
    std::unique_ptr<PauseWatcher> m_watcher;
    std::vector<std::pair<int64_t, Event>> m_scheduled;
};

}  // namespace qklab::gui
