// run_controller.cpp — queueing runs and forwarding the worker's signals.
#include "common/run_controller.h"

#include "common/training_worker.h"

namespace qklab::gui {

RunController::RunController(QObject* parent) : QObject(parent) {
    registerGuiMetaTypes();
    m_thread.setObjectName(QStringLiteral("qklab-training"));
    m_worker = new TrainingWorker;  // no parent: it moves to the thread
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);

    connect(m_worker, &TrainingWorker::started, this, &RunController::started);
    connect(m_worker, &TrainingWorker::batchReady, this, &RunController::batchReady);
    connect(m_worker, &TrainingWorker::progress, this, &RunController::progress);
    connect(m_worker, &TrainingWorker::diverged, this, &RunController::diverged);
    connect(m_worker, &TrainingWorker::finished, this,
            [this](qint64 id, const QString& status, const QString& message) {
                emit finished(id, status, message);
                onRunEnded();
            });
    connect(m_worker, &TrainingWorker::failed, this,
            [this](qint64 id, const QString& message, bool storage) {
                emit failed(id, message, storage);
                onRunEnded();
            });
    connect(m_worker, &TrainingWorker::calloutFired, this,
            [this](qint64 id, const Callout& callout) {
                if (m_busy && !m_paused) {
                    m_paused = true;
                    emit pausedChanged(true);
                }
                emit calloutFired(id, callout);
            });
    connect(m_worker, &TrainingWorker::interventionRefused, this,
            &RunController::interventionRefused);
    m_thread.start();
}

RunController::~RunController() {
    stopAll();
    m_thread.quit();
    m_thread.wait();
}

void RunController::enqueue(const RunRequest& request) {
    m_queue.append(request);
    emit queueChanged();
    if (!m_busy) startNext();
}

void RunController::removeQueued(int index) {
    if (index < 0 || index >= m_queue.size()) return;
    m_queue.removeAt(index);
    emit queueChanged();
}

bool RunController::isPaused() const {
    return m_busy && m_paused;
}

int64_t RunController::activeRunId() const {
    return m_busy ? m_worker->currentRunId() : 0;
}

void RunController::pause() {
    if (!m_busy || m_paused) return;
    m_worker->pause();
    m_paused = true;
    emit pausedChanged(true);
}

void RunController::resume() {
    if (!m_busy || !m_paused) return;
    m_worker->resume();
    m_paused = false;
    emit pausedChanged(false);
}

void RunController::stop() {
    if (!m_busy) return;
    m_worker->stop();
    if (m_paused) {
        m_paused = false;
        emit pausedChanged(false);
    }
}

void RunController::stopAll() {
    if (!m_queue.isEmpty()) {
        m_queue.clear();
        emit queueChanged();
    }
    stop();
}

bool RunController::intervene(const Event& event, QString* error) {
    if (!m_busy) {
        if (error) *error = tr("Nothing is training: start a run first.");
        return false;
    }
    return m_worker->intervene(event, error);
}

bool RunController::setPauseConditions(std::vector<PauseCondition> conditions) {
    if (!m_busy) return false;
    m_worker->setPauseConditions(std::move(conditions));
    return true;
}

bool RunController::interveneAt(const Event& event, int64_t atStep) {
    if (!m_busy) return false;
    m_worker->scheduleIntervention(event, atStep);
    return true;
}

void RunController::startNext() {
    if (m_busy || m_queue.isEmpty()) return;
    m_active = m_queue.takeFirst();
    m_busy = true;
    m_paused = false;
    emit queueChanged();
    const RunRequest request = m_active;
    TrainingWorker* worker = m_worker;
    QMetaObject::invokeMethod(
        worker, [worker, request] { worker->runOne(request); }, Qt::QueuedConnection);
}

void RunController::onRunEnded() {
    m_busy = false;
    if (m_paused) {
        m_paused = false;
        emit pausedChanged(false);
    }
    if (m_queue.isEmpty()) {
        emit queueChanged();
        emit idle();
    } else {
        startNext();
    }
}

}  // namespace qklab::gui
