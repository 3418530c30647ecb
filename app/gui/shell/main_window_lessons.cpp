// main_window_lessons.cpp — the window's lesson parts: the lesson player dock, replay (its
// player, bar and how replayed rows reach the views), presenter mode and their menu entries.
#include <QAction>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QInputDialog>
#include <QMenu>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>

#include "common/run_controller.h"
#include "lessons/lesson_library.h"
#include "lessons/lesson_player.h"
#include "lessons/lesson_stage.h"
#include "lessons/replay_bar.h"
#include "lessons/replay_player.h"
#include "live/attention_map_panel.h"
#include "live/histogram_panel.h"
#include "live/live_plots_panel.h"
#include "live/spikes_panel.h"
#include "qklab/store/run_store.h"
#include "run/run_browser_panel.h"
#include "shell/main_window.h"
#include "shell/presenter_mode.h"

namespace qklab::gui {

void MainWindow::buildLessonParts() {
    m_lessonPlayer = new LessonPlayer;
    m_lessonDock = new QDockWidget(tr("Lesson"), this);
    m_lessonDock->setObjectName(QStringLiteral("lessonDock"));
    m_lessonDock->setWidget(m_lessonPlayer);
    addDockWidget(Qt::RightDockWidgetArea, m_lessonDock);
    m_lessonDock->hide();  // until a lesson is opened

    m_replay = new ReplayPlayer(this);
    m_replayBar = new ReplayBar(m_replay);
    m_replayDock = new QDockWidget(tr("Replay"), this);
    m_replayDock->setObjectName(QStringLiteral("replayDock"));
    m_replayDock->setWidget(m_replayBar);
    m_replayDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    addDockWidget(Qt::TopDockWidgetArea, m_replayDock);
    // Under the Train strip, not beside it: side by side they were wider than a 1280x720
    // projector in presenter mode.
    if (auto* train = findChild<QDockWidget*>(QStringLiteral("runDock")))
        splitDockWidget(train, m_replayDock, Qt::Vertical);
    m_replayDock->hide();  // while a replay plays

    m_lessonStage = new LessonStage(this, m_lessonPlayer, m_replay);
    m_presenter = new PresenterMode(this);
    connectReplay();
}

void MainWindow::addLessonActions(QMenu* file, QMenu* run, QMenu* view) {
    const auto global = [](QAction* a) { a->setShortcutContext(Qt::ApplicationShortcut); };
    auto* open = new QAction(tr("Open &lesson…"), this);
    open->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L));
    global(open);
    connect(open, &QAction::triggered, this, &MainWindow::chooseLesson);
    QAction* before = nullptr;  // above the separator over Quit
    for (QAction* a : file->actions())
        if (a->isSeparator()) before = a;
    file->insertAction(before, open);
    auto* fresh = new QAction(tr("Fresh &class database"), this);
    fresh->setObjectName(QStringLiteral("freshClassDatabase"));
    fresh->setToolTip(
        tr("Open a new, empty database next to this one, so a class starts from "
           "no runs (the old database is kept)"));
    connect(fresh, &QAction::triggered, this, [this] { openFreshClassDatabase(); });
    file->insertAction(before, fresh);

    run->addSeparator();
    QAction* replay = run->addAction(tr("&Replay run…"), this, &MainWindow::chooseReplay);
    replay->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
    global(replay);

    view->addSeparator();
    QAction* presenter = view->addAction(tr("&Presenter mode"));
    presenter->setObjectName(QStringLiteral("presenterAction"));
    presenter->setCheckable(true);
    presenter->setShortcut(QKeySequence(Qt::Key_F11));
    global(presenter);
    connect(presenter, &QAction::toggled, m_presenter, &PresenterMode::setActive);
    connect(m_presenter, &PresenterMode::activeChanged, presenter, &QAction::setChecked);
    // The window keeps its actions when the menu bar is out of sight (full screen).
    addActions({open, replay, presenter});
}

bool MainWindow::openLesson(const QString& nameOrFile, int startIndex) {
    m_lessonDock->show();
    m_lessonDock->raise();
    const bool ok = m_lessonStage->openLesson(nameOrFile, startIndex);
    if (!ok) statusBar()->showMessage(tr("The lesson %1 does not load").arg(nameOrFile), 15000);
    return ok;
}

QString MainWindow::lessonError() const {
    return m_lessonPlayer->errorText();
}

void MainWindow::setLessonPreferReplay(bool replay) {
    m_lessonStage->setPreferReplay(replay);
}

void MainWindow::chooseLesson() {
    LessonChooser chooser(this);
    if (chooser.exec() != QDialog::Accepted || chooser.chosenPath().isEmpty()) return;
    if (chooser.freshDatabase() && !openFreshClassDatabase()) return;
    m_lessonStage->setPreferReplay(chooser.replayRecorded());
    openLesson(chooser.chosenPath());
}

// One click for a class that starts from nothing: "class-2026-12-02-0915.db" in the folder of
// the database open now (the app's data folder when none is), opened; the old one is kept.
bool MainWindow::openFreshClassDatabase() {
    const QString current = m_browser->databasePath();
    const QDir dir = current.isEmpty()
                         ? QFileInfo(QString::fromStdString(defaultDatabasePath())).absoluteDir()
                         : QFileInfo(current).absoluteDir();
    const QString stem = QStringLiteral("class-") +
                         QDateTime::currentDateTime().toString(QStringLiteral("yyyy-MM-dd-HHmm"));
    QString path = dir.filePath(stem + QStringLiteral(".db"));
    for (int n = 2; QFileInfo::exists(path); ++n)
        path = dir.filePath(stem + QStringLiteral("-%1.db").arg(n));
    if (!dir.exists() && !QDir().mkpath(dir.absolutePath())) {
        showError(tr("Fresh class database"), tr("Cannot create the folder %1").arg(dir.path()));
        return false;
    }
    if (!openDatabase(path)) return false;
    statusBar()->showMessage(tr("A fresh database for the class: %1").arg(path), 15000);
    return true;
}

void MainWindow::chooseReplay() {
    std::vector<RunInfo> runs;
    try {
        RunStore store(m_browser->databasePath().toStdString(), StoreAccess::ReadOnly);
        runs = store.listRuns();
    } catch (const std::exception& e) {
        return showError(tr("Replay"), QString::fromStdString(e.what()));
    }
    if (runs.empty()) return showError(tr("Replay"), tr("This database holds no runs."));
    QStringList items;
    int current = 0;
    for (const RunInfo& r : runs) {
        if (r.id == m_browser->selectedRunId()) current = items.size();
        items << tr("%1  %2  (%3 steps)")
                     .arg(r.id)
                     .arg(QString::fromStdString(r.name))
                     .arg(r.stepsDone);
    }
    bool ok = false;
    const QString item = QInputDialog::getItem(this, tr("Replay run"),
                                               tr("Play this stored run back through the live "
                                                  "views:"),
                                               items, current, false, &ok);
    if (!ok) return;
    QString error;
    m_replay->setPauseConditions({});  // a lesson's conditions do not follow a replay of one's own
    if (!startReplay(runs[size_t(items.indexOf(item))].id, 0, &error))
        showError(tr("Replay"), error);
}

bool MainWindow::startReplay(int64_t runId, double stepsPerSecond, QString* error) {
    try {
        m_replay->load(m_browser->databasePath(), runId);
    } catch (const std::exception& e) {
        if (error) *error = tr("Cannot replay run %1: %2").arg(runId).arg(e.what());
        return false;
    }
    if (!m_replay->hasRun()) {
        if (error) *error = tr("Run %1 has no stored steps to replay.").arg(runId);
        return false;
    }
    m_replayBar->setSpeed(stepsPerSecond, 1.0);
    m_replayDock->show();
    m_tabs->setCurrentWidget(m_live);
    m_replay->play();
    return true;
}

void MainWindow::cutStoreViewsAtReplay() {
    if (!m_replay->hasRun()) return;
    const int64_t step = m_replay->position();
    m_histograms->setStepLimit(step);
    m_attention->setStepLimit(step);
}

void MainWindow::stopReplay() {
    m_replay->clear();
    m_replayDock->hide();
}

// Replayed rows take the live run's way into the views: a reset is a run starting, a batch
// is a batch.
void MainWindow::connectReplay() {
    connect(m_replay, &ReplayPlayer::reset, this,
            [this](qint64 runId, const QString& name, const RunConfig& config) {
                ++m_openGeneration;  // a stored run still loading must not replace the replay
                m_live->startLive(runId, config, name);
                m_live->setRunStatus(runId, tr("replay"));
                const QString label = tr("Run %1 “%2” (replay)").arg(runId).arg(name);
                const QString db =
                    m_replay->dbPath().isEmpty() ? m_browser->databasePath() : m_replay->dbPath();
                m_histograms->setRun(runId, config, db, label);
                m_attention->setRun(runId, config, db, label);
                cutStoreViewsAtReplay();
                m_spikes->setSpikes(runId, {});
                m_spikes->setLogitAlarms(runId, {});
            });
    connect(m_replay, &ReplayPlayer::batchReady, this, &MainWindow::onBatch);
    // The store-read views (histograms, attention maps) hold the rows the live run had
    // stored at the replayed step, no later ones: cut at once for a reset, then following
    // the position at most four times a second.
    auto* follow = new QTimer(this);
    follow->setSingleShot(true);
    follow->setInterval(250);
    connect(follow, &QTimer::timeout, this, [this] { cutStoreViewsAtReplay(); });
    connect(m_replay, &ReplayPlayer::positionChanged, follow, [follow] {
        if (!follow->isActive()) follow->start();
    });
    // Paused (a callout, the bar's pause, the end): cut now, without waiting for the timer.
    connect(m_replay, &ReplayPlayer::playingChanged, this, [this](bool playing) {
        if (!playing) cutStoreViewsAtReplay();
    });
    connect(m_replayBar, &ReplayBar::closeRequested, this, &MainWindow::stopReplay);
    // A run starting live takes the views back.
    connect(m_controller, &RunController::started, this, [this] {
        if (m_replay->hasRun()) stopReplay();
    });
}

}  // namespace qklab::gui
