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
#include <mutex>

#include "gui_types.h"

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
    bool isRunning() const { return m_running.load(); }
    bool isPaused() const;
    int64_t currentRunId() const { return m_runId.load(); }

    // How often batches leave the worker (ms); tests shorten it.
    void setBatchIntervalMs(int ms) { m_batchIntervalMs = ms; }

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
    // The run could not be built or crashed; runId is 0 when nothing was written.
    void failed(qint64 runId, const QString& message);

  private:
    class Observer;
    friend class Observer;

    mutable std::mutex m_mutex;  // guards m_session against stop() during teardown
    RunSession* m_session = nullptr;
    std::atomic<bool> m_running{false};
    std::atomic<bool> m_stopRequested{false};
    std::atomic<int64_t> m_runId{0};
    int m_batchIntervalMs = 50;
};

}  // namespace qklab::gui
