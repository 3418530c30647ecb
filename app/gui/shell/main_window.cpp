// main_window.cpp — layout of docks/tabs, menus, and the wiring between panels.
#include "shell/main_window.h"

#include <qcustomplot.h>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QMenuBar>
#include <QMessageBox>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <iostream>
#include <memory>

#include "common/async_store.h"
#include "common/file_dialogs.h"
#include "common/input_files.h"
#include "common/plot_export.h"
#include "common/run_controller.h"
#include "common/theme.h"
#include "compare/compare_panel.h"
#include "lessons/replay_player.h"
#include "live/attention_map_panel.h"
#include "live/histogram_panel.h"
#include "live/intervention_panel.h"
#include "live/live_plots_panel.h"
#include "live/sample_panel.h"
#include "live/spikes_panel.h"
#include "run/run_browser_panel.h"
#include "run/run_controls_panel.h"
#include "run/run_list_model.h"
#include "setup/config_form.h"
#include "setup/preset_picker.h"
#include "setup/schedule_preview.h"
#include "shell/presenter_mode.h"
#include "shell/store_alert_banner.h"
#include "sweeps/sweep_dialog.h"
#include "sweeps/sweep_panel.h"

namespace qklab::gui {

namespace {
QDockWidget* makeDock(QMainWindow* window, const QString& title, const QString& name,
                      QWidget* content) {
    auto* dock = new QDockWidget(title, window);
    dock->setObjectName(name);  // saveState() needs stable object names
    dock->setWidget(content);
    return dock;
}

// A side dock's content in a scroll area: a form wider or taller than the dock scrolls
// instead of making the window wider than a 1024x768 screen.
QWidget* scrolling(QWidget* content) {
    auto* area = new QScrollArea;
    area->setWidget(content);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    return area;
}

// Only the shown tab counts towards the window's least size: a hidden view's controls (the
// Sweeps tab's, Compare's) used to keep the window wider than the screen in every view.
void sizeByShownTab(QTabWidget* tabs) {
    for (int i = 0; i < tabs->count(); ++i) {
        const auto policy =
            i == tabs->currentIndex() ? QSizePolicy::Preferred : QSizePolicy::Ignored;
        tabs->widget(i)->setSizePolicy(policy, policy);
    }
}
}  // namespace

MainWindow::MainWindow(QWidget* parent) : LabWindow(parent) {
    registerGuiMetaTypes();
    setWindowTitle(tr("qklab — attention-logit stability lab"));
    m_controller = new RunController(this);
    buildSetupDocks();
    buildCentre();
    m_browser = new RunBrowserPanel;
    addDockWidget(Qt::BottomDockWidgetArea,
                  makeDock(this, tr("Runs"), QStringLiteral("runsDock"), m_browser));
    buildLessonParts();
    // Text the picked run writes, next to the set-up form (its own tab in the left column).
    m_sample = new SamplePanel;
    m_sampleDock = makeDock(this, tr("Sample"), QStringLiteral("sampleDock"), scrolling(m_sample));
    addDockWidget(Qt::LeftDockWidgetArea, m_sampleDock);
    tabifyDockWidget(m_interventionDock, m_sampleDock);
    m_setupDock->raise();

    buildMenus();
    connectPanels();
    connectScriptSignals();
    m_preview->setConfig(m_form->config());
    statusBar()->showMessage(tr("Ready"));
    restoreLayout();
}

// The set-up dock (preset, form, schedule previews), the Train strip over the views, and the
// interventions, which share the left column with the set-up form (tabbed) and come to the
// front when a run starts.
void MainWindow::buildSetupDocks() {
    auto* setup = new QWidget;
    auto* setupLayout = new QVBoxLayout(setup);
    setupLayout->setContentsMargins(4, 4, 4, 4);
    m_presets = new PresetPicker;
    m_form = new ConfigForm;
    m_preview = new SchedulePreview;
    setupLayout->addWidget(m_presets);
    setupLayout->addWidget(m_form, 1);
    setupLayout->addWidget(m_preview);
    m_setupDock = makeDock(this, tr("Set up a run"), QStringLiteral("setupDock"), scrolling(setup));
    addDockWidget(Qt::LeftDockWidgetArea, m_setupDock);

    m_controls = new RunControlsPanel(m_controller);
    auto* controlsDock = makeDock(this, tr("Train"), QStringLiteral("runDock"), m_controls);
    controlsDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    addDockWidget(Qt::TopDockWidgetArea, controlsDock);
    auto* ivBox = new QWidget;
    auto* ivLayout = new QVBoxLayout(ivBox);
    m_interventions = new InterventionPanel(m_controller);
    ivLayout->addWidget(m_interventions);
    ivLayout->addStretch(1);
    m_interventionDock = makeDock(this, tr("Intervene mid-run"), QStringLiteral("interventionDock"),
                                  scrolling(ivBox));
    addDockWidget(Qt::LeftDockWidgetArea, m_interventionDock);
    tabifyDockWidget(m_setupDock, m_interventionDock);
    m_setupDock->raise();
}

// Centre: the views of one run, and the comparison of several, under the store alert.
void MainWindow::buildCentre() {
    m_live = new LivePlotsPanel;
    m_histograms = new HistogramPanel;
    m_attention = new AttentionMapPanel;
    m_spikes = new SpikesPanel;
    m_compare = new ComparePanel;
    m_sweeps = new SweepPanel;
    m_tabList = {
        {QStringLiteral("live"), tr("Live plots"), m_live},
        {QStringLiteral("histograms"), tr("Logit histograms"), m_histograms},
        {QStringLiteral("attention"), tr("Attention maps"), m_attention},
        {QStringLiteral("spikes"), tr("Spikes"), m_spikes},
        {QStringLiteral("compare"), tr("Compare"), m_compare},
        {QStringLiteral("sweeps"), tr("Sweeps"), m_sweeps},
    };
    m_tabs = new QTabWidget;
    for (const Tab& tab : m_tabList) m_tabs->addTab(tab.widget, tab.title);
    sizeByShownTab(m_tabs);
    connect(m_tabs, &QTabWidget::currentChanged, this, [this] { sizeByShownTab(m_tabs); });
    // The store alert sits above the views, where it cannot be missed.
    m_storeAlert = new StoreAlertBanner;
    auto* centre = new QWidget;
    auto* centreLayout = new QVBoxLayout(centre);
    centreLayout->setContentsMargins(0, 0, 0, 0);
    centreLayout->setSpacing(2);
    centreLayout->addWidget(m_storeAlert);
    centreLayout->addWidget(m_tabs, 1);
    setCentralWidget(centre);
}

MainWindow::~MainWindow() = default;

void MainWindow::buildMenus() {
    // Every action has a shortcut, shown in its menu, that works wherever the focus is
    // inside the app (Ctrl+O used to need a click into the window first).
    const auto global = [](QAction* a) { a->setShortcutContext(Qt::ApplicationShortcut); };
    QMenu* file = menuBar()->addMenu(tr("&File"));
    global(file->addAction(tr("&Open database…"), QKeySequence::Open, m_browser,
                           &RunBrowserPanel::chooseDatabase));
    global(file->addAction(tr("&New database…"), QKeySequence::New, m_browser,
                           &RunBrowserPanel::createDatabase));
    QAction* loadPresetAction = file->addAction(tr("Load &preset…"), this, [this] {
        const QString path = chooseFileToOpen(this, tr("Load preset"), presetDialogDirectory(),
                                              tr("Presets (*.json)"));
        if (!path.isEmpty()) loadPreset(path);
    });
    loadPresetAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));
    global(loadPresetAction);
    QAction* exportAction = file->addAction(tr("Export shown run as &CSV…"), this, [this] {
        if (m_live->runId() == 0) return showError(tr("Export"), tr("No run is shown."));
        const QString path =
            chooseFileToSave(this, tr("Export run data"),
                             QStringLiteral("run-%1.csv").arg(m_live->runId()), tr("CSV (*.csv)"));
        QString error;
        if (!path.isEmpty() && !saveRunCsv(m_live->run(), path, &error))
            showError(tr("Export failed"), error);
    });
    exportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    global(exportAction);
    file->addSeparator();
    global(file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close));

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    global(run->addAction(tr("&Start / queue"), QKeySequence(Qt::CTRL | Qt::Key_R), m_controls,
                          &RunControlsPanel::startRun));
    // Space pauses and resumes, as in a video player (text fields keep their spaces: a line
    // edit takes the key before the shortcut).
    global(run->addAction(tr("&Pause / resume"), QKeySequence(Qt::Key_Space), this,
                          &MainWindow::togglePause));
    global(run->addAction(tr("S&top"), QKeySequence(Qt::CTRL | Qt::Key_Period), m_controller,
                          &RunController::stop));
    global(run->addAction(tr("Stop &all (clear queue)"),
                          QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Period), m_controller,
                          &RunController::stopAll));
    run->addSeparator();
    global(run->addAction(tr("New s&weep from form…"),
                          QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_N), this,
                          &MainWindow::newSweepFromForm));
    global(run->addAction(tr("Show s&weeps"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_W), this,
                          [this] { m_tabs->setCurrentWidget(m_sweeps); }));

    QMenu* view = menuBar()->addMenu(tr("&View"));
    int n = 0;
    for (QDockWidget* dock : findChildren<QDockWidget*>()) {
        QAction* toggle = dock->toggleViewAction();
        if (++n <= 9) toggle->setShortcut(QKeySequence(QStringLiteral("Ctrl+%1").arg(n)));
        global(toggle);
        view->addAction(toggle);
    }
    view->addSeparator();
    QAction* dark = view->addAction(tr("&Dark theme"));
    dark->setCheckable(true);
    dark->setChecked(currentTheme() == Theme::Dark);
    dark->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
    global(dark);
    connect(dark, &QAction::toggled, this,
            [this](bool on) { applyTheme(on ? Theme::Dark : Theme::Light, this); });
    addLessonActions(file, run, view);
}

void MainWindow::connectPanels() {
    m_controls->setConfigSource([this](QStringList* problems) { return formConfig(problems); });
    m_controls->setDatabaseSource([this] { return databasePath(); });
    m_presets->setConfigSource([this](QStringList* problems) { return m_form->config(problems); });

    connect(m_form, &ConfigForm::configChanged, this,
            [this] { m_preview->setConfig(m_form->config()); });
    connect(m_form, &ConfigForm::validityChanged, m_controls, &RunControlsPanel::setStartEnabled);
    connect(m_presets, &PresetPicker::presetLoaded, this,
            [this](const RunConfig& c, const QString& path) {
                m_form->setConfig(c);
                QSettings().setValue(QStringLiteral("lastPreset"), path);
                statusBar()->showMessage(tr("Loaded preset %1").arg(path), 5000);
            });

    connect(m_presets, &PresetPicker::error, this, &MainWindow::showError);
    connect(m_controls, &RunControlsPanel::error, this, &MainWindow::showError);
    connect(m_browser, &RunBrowserPanel::error, this, &MainWindow::showError);
    connect(m_compare, &ComparePanel::error, this, &MainWindow::showError);
    connectRuns();
    connectSweeps();
    connect(m_browser, &RunBrowserPanel::databaseChanged, this, [this](const QString& path) {
        setWindowTitle(tr("qklab — %1").arg(path));
        m_sweeps->setDatabase(path);
        m_sample->setDatabase(path);
        m_live->clear();
        m_interventions->setShownRun(RunInfo{});
        m_histograms->clear();
        m_attention->clear();
        m_spikes->clear();
    });
    connect(m_browser, &RunBrowserPanel::configRequested, this, [this](const RunConfig& c) {
        m_form->setConfig(c);
        const int64_t id = m_browser->selectedRunId();
        m_presets->showReusedRun(id > 0 ? tr("run %1").arg(id) : tr("a stored run"), c);
        m_setupDock->raise();
        statusBar()->showMessage(
            tr("Loaded the run's config into the form (interventions as events)"), 8000);
    });
    connect(m_live, &LivePlotsPanel::stepSelected, this, &MainWindow::jumpAll);
    // The first-run panel's one button: lesson 1's run, through the form and Start as a user
    // would do it, so the form and the preset box show what trains.
    connect(m_live, &LivePlotsPanel::firstRunRequested, this, [this] {
        if (loadPreset(QStringLiteral("healthy_attention"))) m_controls->startRun();
    });
    connect(m_spikes, &SpikesPanel::stepSelected, this, &MainWindow::jumpAll);
    connect(m_spikes, &SpikesPanel::plotsRequested, this, [this](qint64 step) {
        m_tabs->setCurrentWidget(m_live);
        jumpAll(step);
    });
    connect(m_histograms, &HistogramPanel::stepSelected, this, &MainWindow::jumpAll);
}

// The training run and the stored runs the views show.
void MainWindow::connectRuns() {
    connect(m_controller, &RunController::started, this,
            [this](qint64 id, const QString& name, qint64) { onRunStarted(id, name); });
    connect(m_controller, &RunController::batchReady, this, &MainWindow::onBatch);
    connect(m_controller, &RunController::finished, this,
            [this](qint64 id, const QString& status, const QString& message) {
                onRunEnded(id, status, message, false);
            });
    connect(m_controller, &RunController::failed, this,
            [this](qint64 id, const QString& message, bool storage) {
                if (storage) onStoreFailure(id, message);
                onRunEnded(id, QStringLiteral("failed"), message, true);
            });

    connect(m_browser, &RunBrowserPanel::runActivated, this, [this](qint64 id) { openRun(id); });
    auto* follow = new QTimer(this);  // the run list polls the store every second
    connect(follow, &QTimer::timeout, this, &MainWindow::followStoredRun);
    follow->start(2000);
    connect(m_browser, &RunBrowserPanel::compareRequested, this,
            [this](const std::vector<int64_t>& ids) { compareRuns(ids); });
    connect(m_compare, &ComparePanel::loaded, this, [this](int runs, double seconds) {
        statusBar()->showMessage(
            tr("Comparing %1 runs (store read %2 s)").arg(runs).arg(seconds, 0, 'f', 3), 8000);
        emit comparisonOpened(runs, seconds);
    });
    connect(this, &MainWindow::runOpened, m_sample, [this](qint64 id) { m_sample->setRun(id); });
}

void MainWindow::connectSweeps() {
    connect(m_sweeps, &SweepPanel::error, this, &MainWindow::showError);
    connect(m_sweeps, &SweepPanel::compareRequested, this,
            [this](const std::vector<int64_t>& ids) { compareRuns(ids); });
    connect(m_sweeps, &SweepPanel::runActivated, this, [this](qint64 id) {
        openRun(id);
        m_tabs->setCurrentWidget(m_live);
    });
    connect(m_sweeps, &SweepPanel::newSweepRequested, this, &MainWindow::newSweepFromForm);
    connect(m_sweeps, &SweepPanel::showRunsRequested, this, [this](const QString& filter) {
        m_browser->setFilterText(filter);
        if (auto* runs = findChild<QDockWidget*>(QStringLiteral("runsDock"))) {
            runs->show();
            runs->raise();
        }
    });
    connect(m_sweeps, &SweepPanel::interruptedSweeps, this, [this](const QStringList& names) {
        statusBar()->showMessage(
            tr("Sweep %1 was interrupted: resume it in the Sweeps tab").arg(names.join(", ")),
            15000);
    });
}

void MainWindow::newSweepFromForm() {
    m_form->revalidateNow();
    SweepDialog dialog(m_form->config(), m_browser->databasePath(), this);
    if (dialog.exec() != QDialog::Accepted) return;
    showSweep(dialog.startedName());
    statusBar()->showMessage(
        tr("Sweep %1 started in the background (%n point(s))", nullptr, dialog.pointCount())
            .arg(dialog.startedName()),
        10000);
}

void MainWindow::showSweep(const QString& nameOrId) {
    m_tabs->setCurrentWidget(m_sweeps);
    m_sweeps->selectSweep(nameOrId);
}

void MainWindow::showError(const QString& title, const QString& message) {
    statusBar()->showMessage(
        title + QStringLiteral(": ") + message.section(QLatin1Char('\n'), 0, 0), 15000);
    if (m_quiet) {
        std::cerr << "qklab: " << title.toStdString() << ": " << message.toStdString() << std::endl;
        return;
    }
    QMessageBox::warning(this, title, message);
}

void MainWindow::togglePause() {
    if (!m_controller->isBusy() && m_replayDock->isVisible()) return m_replay->togglePlay();
    if (m_controller->isPaused())
        m_controller->resume();
    else
        m_controller->pause();
}

bool MainWindow::openDatabase(const QString& path) {
    return m_browser->openDatabase(path);
}

QString MainWindow::databasePath() const {
    return m_browser->databasePath();
}

bool MainWindow::loadPreset(const QString& pathOrName) {
    return m_presets->loadPath(pathOrName);
}

RunConfig MainWindow::formConfig(QStringList* problems) {
    // The form's own list has parse errors and the cross-field validationProblems().
    m_form->revalidateNow();
    if (problems) *problems << m_form->problems();
    return m_form->config();
}

bool MainWindow::applyOverrides(const QStringList& assignments, QString* error) {
    RunConfig c = m_form->config();
    for (const QString& a : assignments) {
        try {
            applyOverride(c, a.toStdString());
        } catch (const std::exception& e) {
            if (error)
                *error = QStringLiteral("--set %1: %2").arg(a, QString::fromStdString(e.what()));
            return false;
        }
    }
    m_form->setConfig(c);
    return true;
}

void MainWindow::showTab(const QString& name) {
    const QString wanted = name.toLower();
    if (wanted == QLatin1String("config")) {
        m_setupDock->show();
        m_setupDock->raise();
        return;
    }
    for (const Tab& tab : m_tabList)
        if (tab.name == wanted) return m_tabs->setCurrentWidget(tab.widget);
}

QStringList MainWindow::tabNames() const {
    QStringList names;
    for (const Tab& tab : m_tabList) names << tab.name;
    return names;
}

QString MainWindow::currentTab() const {
    for (const Tab& tab : m_tabList)
        if (tab.widget == m_tabs->currentWidget()) return tab.name;
    return {};
}

// The attention view has no "all heads": it shows head 0 then.
void MainWindow::selectLayerHead(int layer, int head) {
    m_histograms->selectLayerHead(layer, head);
    m_attention->selectLayerHead(layer, std::max(0, head));
}

QWidget* MainWindow::livePlotOf(const QString& metric) const {
    return m_live->plotForMetric(metric);
}

const RunSnapshot& MainWindow::shownLiveRun() const {
    return m_live->run();
}

void MainWindow::setLessonPlots(const QStringList& metrics) {
    m_live->setLessonMetrics(metrics);
    m_compare->setLessonMetrics(metrics);  // a compare step shows the same few, readable
}

bool MainWindow::postIntervention(const Event& event) {
    return m_interventions->post(event);
}

void MainWindow::compareRuns(const std::vector<int64_t>& runIds) {
    m_compare->setRuns(m_browser->databasePath(), runIds);
    m_tabs->setCurrentWidget(m_compare);
}

void MainWindow::openComparison(const QString& savedName) {
    m_compare->openSaved(savedName);
    m_tabs->setCurrentWidget(m_compare);
}

void MainWindow::followStoredRun() {
    const int64_t id = m_live->runId();
    if (id <= 0 || id == m_controller->activeRunId()) return;  // this app's own run is live
    // A replay shows the run as it was at the replayed step; the stored whole would undo it.
    if (m_replay->hasRun() && id == m_replay->runId()) return;
    const RunListModel& list = *m_browser->model();
    const int row = list.rowOf(id);
    if (row < 0) return;
    const RunInfo& now = list.runs()[static_cast<size_t>(row)];
    const RunInfo& shown = m_live->run().info;
    // Only a run being written (or one that just stopped being written): a finished run
    // shown by a replay is never reloaded under it.
    const bool written = now.status == RunStatus::Running || shown.status == RunStatus::Running;
    if (written && (now.stepsDone != shown.stepsDone || now.status != shown.status)) openRun(id);
}

void MainWindow::showNoRun() {
    ++m_openGeneration;  // a run still being read lands nowhere
    m_live->showRun(RunSnapshot{});
    m_spikes->setSpikes(0, {});
    m_spikes->setLogitAlarms(0, {});
}

void MainWindow::openRun(int64_t runId) {
    // The training run is already shown live: reloading it would only repeat what is there.
    if (runId == m_live->runId() && runId == m_controller->activeRunId()) return;
    const uint64_t generation = ++m_openGeneration;
    const QString db = m_browser->databasePath();
    auto clock = std::make_shared<QElapsedTimer>();
    clock->start();
    statusBar()->showMessage(tr("Opening run %1…").arg(runId));
    readStoreAsync<RunSnapshot>(
        this, db, [runId](RunStore& store) { return loadRunSnapshot(store, runId); },
        [this, generation, db, clock](RunSnapshot snap) {
            if (generation != m_openGeneration) return;  // the user picked another run meanwhile
            const int64_t id = snap.runId;
            const RunConfig config = snap.config;
            const QString label =
                tr("Run %1 “%2”").arg(id).arg(QString::fromStdString(snap.info.name));
            m_spikes->setSpikes(id, snap.spikes);
            m_spikes->setLogitAlarms(id, snap.alarms);
            m_interventions->setShownRun(snap.info);  // off, saying why, for an external run
            const double readSeconds = snap.loadSeconds;
            const size_t steps = snap.steps.size();
            m_live->showRun(std::move(snap));
            m_spikes->setForecasts(id, m_live->run().forecasts, m_live->onsets(),
                                   m_live->latestStep());
            m_histograms->setRun(id, config, db, label);
            m_attention->setRun(id, config, db, label);
            {
                QSignalBlocker block(m_browser);  // the list follows, without reopening
                m_browser->selectRun(id);
            }
            const double seconds = clock->nsecsElapsed() / 1e9;
            statusBar()->showMessage(tr("Opened run %1: %2 steps in %3 s (store read %4 s)")
                                         .arg(id)
                                         .arg(steps)
                                         .arg(seconds, 0, 'f', 3)
                                         .arg(readSeconds, 0, 'f', 3),
                                     10000);
            emit runOpened(id, seconds);
        },
        [this, runId](const QString& error) {
            showError(tr("Cannot open run %1").arg(runId), error);
        });
}

void MainWindow::onRunStarted(qint64 runId, const QString& name) {
    const RunRequest& request = m_controller->activeRequest();
    ++m_openGeneration;  // a stored run still loading must not replace the new live run
    m_live->startLive(runId, request.config, name);
    const QString label = name.isEmpty() ? tr("Run %1 (training)").arg(runId)
                                         : tr("Run %1 “%2” (training)").arg(runId).arg(name);
    m_histograms->setRun(runId, request.config, request.dbPath, label);
    m_attention->setRun(runId, request.config, request.dbPath, label);
    m_spikes->setSpikes(runId, {});
    m_sample->setRun(runId);
    m_browser->refresh();
    {
        // Select the new run in the list without triggering a reload of it.
        QSignalBlocker block(m_browser);
        m_browser->selectRun(runId);
    }
    m_interventionDock->raise();
    statusBar()->showMessage(tr("Run %1 started").arg(runId), 5000);
}

void MainWindow::onBatch(const LiveBatch& batch) {
    m_live->appendBatch(batch);
    if (!batch.spikes.isEmpty())
        m_spikes->addSpikes(batch.runId,
                            std::vector<Spike>(batch.spikes.begin(), batch.spikes.end()));
    if (!batch.alarms.isEmpty())
        m_spikes->addLogitAlarms(batch.runId,
                                 std::vector<LogitAlarm>(batch.alarms.begin(), batch.alarms.end()));
    if (batch.runId == m_live->runId() && !m_live->run().forecasts.empty() &&
        (!batch.forecasts.isEmpty() || !batch.steps.isEmpty()))
        m_spikes->setForecasts(batch.runId, m_live->run().forecasts, m_live->onsets(),
                               m_live->latestStep());
    if (batch.newHistograms) m_histograms->notifyNewData(batch.runId);
    if (batch.newAttentionMaps) m_attention->notifyNewData(batch.runId);
}

void MainWindow::onRunEnded(qint64 runId, const QString& status, const QString& message,
                            bool failed) {
    m_browser->refresh();
    m_sample->refreshRun(runId);  // its final checkpoint
    m_live->setRunStatus(runId, status);
    if (runId == m_live->runId()) {
        const QString name = QString::fromStdString(m_live->run().info.name);
        const QString label =
            tr("Run %1 “%2” (%3)")
                .arg(runId)
                .arg(name.isEmpty() ? QStringLiteral("run-%1").arg(runId) : name, status);
        m_histograms->setRunLabel(runId, label);
        m_attention->setRunLabel(runId, label);
    }
    m_histograms->notifyNewData(runId);
    m_attention->notifyNewData(runId);
    if (failed) {
        showError(tr("Run failed"),
                  runId > 0 ? tr("Run %1 failed:\n%2").arg(runId).arg(message) : message);
        return;
    }
    statusBar()->showMessage(message.isEmpty()
                                 ? tr("Run %1 %2").arg(runId).arg(status)
                                 : tr("Run %1 %2: %3").arg(runId).arg(status, message),
                             20000);
}

void MainWindow::onStoreFailure(qint64 runId, const QString& message) {
    const QString title = runId > 0 ? tr("Run %1 stopped").arg(runId) : tr("A run could not start");
    m_storeAlert->raiseAlert(title, message);
    if (m_quiet)
        std::cerr << "qklab: " << title.toStdString() << ": " << message.toStdString() << std::endl;
}

void MainWindow::jumpAll(qint64 step) {
    m_live->jumpToStep(step);
    m_histograms->jumpToStep(step);
    m_attention->jumpToStep(step);
}

void MainWindow::restoreLayout() {
    QSettings settings;
    // The first start fits the screen: a fixed 1560x960 ran off a 1280x720 projector. A
    // geometry saved on a bigger screen is fitted the same way.
    const QRect available = screen()->availableGeometry();
    if (!restoreGeometry(settings.value(QStringLiteral("geometry")).toByteArray())) {
        // The first start uses the screen: maximized (and that size asked for too, for a
        // session without a window manager, where maximized is only a state), when the
        // window fits it; a maximized window below its minimum size would be cut off.
        const QSize least = minimumSizeHint();
        if (available.width() >= least.width() && available.height() >= least.height()) {
            setGeometry(available);
            setWindowState(windowState() | Qt::WindowMaximized);
        } else {
            resize(std::min(1560, available.width()), std::min(960, available.height()));
        }
    }
    if (width() > available.width() || height() > available.height()) {
        resize(std::min(width(), available.width()), std::min(height(), available.height()));
        move(available.topLeft());
    }
    if (!restoreState(settings.value(QStringLiteral("windowState")).toByteArray())) {
        // First start: most of the height to the views, a readable form, and a run list of
        // about 8 rows on a 1080-px screen (170 px showed 3 or 4); less on a projector.
        if (auto* runs = findChild<QDockWidget*>(QStringLiteral("runsDock")))
            resizeDocks({runs}, {std::min(290, height() / 4)}, Qt::Vertical);
        // 340 px at least: the preset buttons' row without a scroll bar (on a 1024-px screen);
        // 440 from 1260 px up: the interventions' rows without one.
        resizeDocks({m_setupDock}, {std::clamp(width() * 35 / 100, 340, 440)}, Qt::Horizontal);
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
    m_presenter->setActive(false);  // the layout saved below is the everyday one
    if (m_controller->isBusy() && !m_quiet) {
        const auto answer = QMessageBox::question(
            this, tr("A run is training"),
            tr("Stop the training run and quit? The run is kept, marked stopped."),
            QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
        if (answer != QMessageBox::Yes) {
            event->ignore();
            return;
        }
    }
    QSettings settings;
    settings.setValue(QStringLiteral("geometry"), saveGeometry());
    settings.setValue(QStringLiteral("windowState"), saveState());
    m_controller->stopAll();
    event->accept();
}

}  // namespace qklab::gui
