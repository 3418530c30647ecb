// run_controls_panel.cpp — buttons, progress and queue display.
#include "run/run_controls_panel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QStyle>
#include <QVBoxLayout>

#include "common/run_controller.h"
#include "common/run_data.h"

namespace qklab::gui {

namespace {
QString formatDuration(double seconds) {
    // Past 1e9 s (32 years) the ETA says nothing, and past 9.2e18 the cast below overflows.
    if (seconds < 0 || !std::isfinite(seconds) || seconds >= 1e9) return QStringLiteral("–");
    const qint64 s = qint64(seconds + 0.5);
    if (s < 60) return QStringLiteral("%1 s").arg(s);
    if (s < 3600) return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60);
    return QStringLiteral("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}
}  // namespace

RunControlsPanel::RunControlsPanel(RunController* controller, QWidget* parent)
    : QWidget(parent), m_controller(controller) {
    // One horizontal strip (top of the window): the controls stay visible whatever view or
    // set-up page is open.
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(4, 2, 4, 2);
    m_name = new QLineEdit;
    m_name->setPlaceholderText(tr("run name (automatic)"));
    m_name->setObjectName(QStringLiteral("runName"));
    m_name->setMaximumWidth(170);
    layout->addWidget(m_name);
    m_start = new QPushButton(tr("Start"));
    // Icons from the style: the ⏸/⏵ characters render as boxes with common fonts.
    m_start->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
    m_start->setObjectName(QStringLiteral("startButton"));
    m_start->setToolTip(tr("Train the form's config (queued if a run is training)"));
    m_pause = new QPushButton(tr("Pause"));
    m_pause->setIcon(style()->standardIcon(QStyle::SP_MediaPause));
    m_pause->setObjectName(QStringLiteral("pauseButton"));
    m_stop = new QPushButton(tr("Stop"));
    m_stop->setIcon(style()->standardIcon(QStyle::SP_MediaStop));
    m_stop->setObjectName(QStringLiteral("stopButton"));
    m_stop->setToolTip(
        tr("Stop the training run (it is kept, marked stopped, and can be browsed)"));
    layout->addWidget(m_start);
    layout->addWidget(m_pause);
    layout->addWidget(m_stop);

    m_progress = new QProgressBar;
    m_progress->setObjectName(QStringLiteral("runProgress"));
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progress->setFormat(tr("no run training"));
    m_progress->setMinimumWidth(200);
    layout->addWidget(m_progress, 2);
    m_status = new QLabel(tr("Idle"));
    m_status->setObjectName(QStringLiteral("runStatus"));
    m_status->setMinimumWidth(200);
    m_status->setWordWrap(true);  // a long failure message must not widen the window
    layout->addWidget(m_status, 3);

    m_queue = new QComboBox;
    m_queue->setObjectName(QStringLiteral("runQueue"));
    m_queue->setToolTip(tr("Runs waiting to train, in order"));
    m_queue->setMinimumContentsLength(18);
    m_queue->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_removeQueued = new QPushButton(tr("Unqueue"));
    m_removeQueued->setObjectName(QStringLiteral("unqueueButton"));
    layout->addWidget(m_queue);
    layout->addWidget(m_removeQueued);

    connect(m_start, &QPushButton::clicked, this, &RunControlsPanel::startRun);
    connect(m_pause, &QPushButton::clicked, this, [this] {
        if (m_controller->isPaused())
            m_controller->resume();
        else
            m_controller->pause();
    });
    connect(m_stop, &QPushButton::clicked, m_controller, &RunController::stop);
    connect(m_removeQueued, &QPushButton::clicked, this,
            [this] { m_controller->removeQueued(m_queue->currentIndex()); });
    connect(m_controller, &RunController::progress, this, &RunControlsPanel::onProgress);
    connect(m_controller, &RunController::started, this, &RunControlsPanel::onStarted);
    connect(m_controller, &RunController::pausedChanged, this, [this](bool paused) {
        refreshButtons();
        // The same count as the progress bar beside it: steps done, not the next step's index.
        if (paused)
            m_status->setText(tr("Paused: %1 / %2 steps done")
                                  .arg(m_progress->value())
                                  .arg(m_progress->maximum()));
    });
    connect(m_controller, &RunController::queueChanged, this, &RunControlsPanel::refreshQueue);
    connect(m_controller, &RunController::finished, this,
            [this](qint64 id, const QString& status, const QString& message) {
                onEnded(message.isEmpty() ? tr("Run %1 %2.").arg(id).arg(status)
                                          : tr("Run %1 %2: %3").arg(id).arg(status, message));
            });
    connect(m_controller, &RunController::failed, this,
            [this](qint64, const QString& message) { onEnded(tr("Run failed: %1").arg(message)); });
    refreshQueue();
}

void RunControlsPanel::setStartEnabled(bool enabled) {
    m_formValid = enabled;
    refreshButtons();
}

void RunControlsPanel::setRunName(const QString& name) {
    m_name->setText(name);
}

void RunControlsPanel::startRun() {
    if (!m_configSource || !m_dbSource) return;
    QStringList problems;
    const RunConfig config = m_configSource(&problems);
    if (!problems.isEmpty()) {
        emit error(
            tr("The config is not valid"),
            tr("Fix these before starting:\n\n• %1").arg(problems.join(QStringLiteral("\n• "))));
        return;
    }
    const QString db = m_dbSource();
    if (db.isEmpty()) {
        emit error(tr("No database"),
                   tr("Open or create a run database first (File ▸ Open database)."));
        return;
    }
    RunRequest request;
    request.config = config;
    request.dbPath = db;
    request.name = m_name->text().trimmed();
    m_controller->enqueue(request);
    m_name->clear();
}

void RunControlsPanel::onStarted(qint64 runId, const QString& name, qint64 total) {
    m_progress->setRange(0, int(std::min<qint64>(total, INT_MAX)));
    m_progress->setValue(0);
    m_progress->setFormat(QStringLiteral("%v / %m steps"));
    m_runClock.start();
    m_stepAtClockStart = 0;
    m_status->setText(tr("Run %1%2 starting…")
                          .arg(runId)
                          .arg(name.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(name)));
    refreshButtons();
}

void RunControlsPanel::onProgress(qint64 runId, qint64 step, qint64 total, double tokensPerSec) {
    m_progress->setMaximum(int(std::min<qint64>(total, INT_MAX)));
    m_progress->setValue(int(std::min<qint64>(step, INT_MAX)));
    if (m_controller->isPaused()) return;
    // ETA from the average speed since the run started in this app: smoother than the last
    // step's speed, which jumps at probe and validation steps.
    const double elapsed = m_runClock.isValid() ? m_runClock.elapsed() / 1000.0 : 0;
    const double done = double(step - m_stepAtClockStart);
    const double eta = done > 0 ? elapsed / done * double(total - step) : -1;
    m_status->setText(tr("Run %1: step %2 / %3 · %4 tokens/s · ETA %5")
                          .arg(runId)
                          .arg(step)
                          .arg(total)
                          .arg(QLocale().toString(qRound64(tokensPerSec)))
                          .arg(formatDuration(eta)));
}

void RunControlsPanel::onEnded(const QString& text) {
    m_status->setText(text);
    refreshButtons();
}

void RunControlsPanel::refreshButtons() {
    const bool busy = m_controller->isBusy();
    m_start->setEnabled(m_formValid);
    m_start->setText(busy ? tr("Queue") : tr("Start"));
    m_pause->setEnabled(busy);
    m_pause->setText(m_controller->isPaused() ? tr("Resume") : tr("Pause"));
    m_pause->setIcon(style()->standardIcon(m_controller->isPaused() ? QStyle::SP_MediaPlay
                                                                    : QStyle::SP_MediaPause));
    m_stop->setEnabled(busy);
}

void RunControlsPanel::refreshQueue() {
    m_queue->clear();
    int n = 0;
    for (const RunRequest& r : m_controller->queued()) {
        m_queue->addItem(
            QStringLiteral("%1. %2 — %3")
                .arg(++n)
                .arg(r.name.isEmpty() ? tr("(unnamed)") : r.name, keySettings(r.config)));
    }
    // Hidden when empty: most of the time nothing is queued.
    m_queue->setVisible(n > 0);
    m_removeQueued->setVisible(n > 0);
    refreshButtons();
}

}  // namespace qklab::gui
