// run_controller.h — the GUI-thread owner of the training thread and the run queue.
//
// Several runs may be queued; one trains at a time (they would only compete for the same
// cores). The controller starts the next request when the worker reports the end of the
// current one, and re-emits the worker's signals so panels never touch the worker thread.
#pragma once

#include <QList>
#include <QObject>
#include <QThread>

#include "common/gui_types.h"

namespace qklab::gui {

class TrainingWorker;

class RunController : public QObject {
    Q_OBJECT
  public:
    explicit RunController(QObject* parent = nullptr);
    ~RunController() override;  // stops the active run and joins the thread

    void enqueue(const RunRequest& request);
    void removeQueued(int index);
    QList<RunRequest> queued() const { return m_queue; }

    bool isBusy() const { return m_busy; }
    bool isPaused() const;
    int64_t activeRunId() const;
    const RunRequest& activeRequest() const { return m_active; }

    void pause();
    void resume();
    void stop();     // the active run only; the queue continues
    void stopAll();  // the active run and everything queued
    bool intervene(const Event& event, QString* error = nullptr);
    // Lesson hooks on the active run (see TrainingWorker); false when nothing trains.
    bool setPauseConditions(std::vector<PauseCondition> conditions);
    bool interveneAt(const Event& event, int64_t atStep);

    TrainingWorker* worker() const { return m_worker; }

  signals:
    void queueChanged();
    void started(qint64 runId, const QString& name, qint64 totalSteps);
    void batchReady(const qklab::gui::LiveBatch& batch);
    void progress(qint64 runId, qint64 step, qint64 totalSteps, double tokensPerSec);
    void pausedChanged(bool paused);
    void finished(qint64 runId, const QString& status, const QString& message);
    void diverged(qint64 runId, const QString& message);
    void failed(qint64 runId, const QString& message, bool storage);
    void idle();  // nothing training and nothing queued
    // A pause condition fired and the run paused itself (pausedChanged(true) came first).
    void calloutFired(qint64 runId, const qklab::Callout& callout);
    void interventionRefused(qint64 runId, const QString& message);

  private:
    void startNext();
    void onRunEnded();

    QThread m_thread;
    TrainingWorker* m_worker = nullptr;
    QList<RunRequest> m_queue;
    RunRequest m_active;
    bool m_busy = false;
    bool m_paused = false;
};

}  // namespace qklab::gui
