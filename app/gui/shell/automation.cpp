// automation.cpp — option parsing and the scripted start / stop / screenshot / quit sequence.
#include "shell/automation.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QTimer>
#include <iostream>

#include "common/lab_window.h"
#include "common/run_controller.h"
#include "qklab/store/run_store.h"
#include "shell/latency_monitor.h"

namespace qklab::gui {

namespace {

// The command line, one row per option: name, help, value name (empty for a flag).
struct OptionSpec {
    const char* name;
    const char* help;
    const char* value;
};

const OptionSpec kOptions[] = {
    {"preset", "Load this preset: a JSON file, or the name of a shipped one (blowup_no_qknorm).",
     "PRESET"},
    {"set", "Override a config key (repeatable).", "key=value"},
    {"db", "Run database (default: the user's data dir).", "FILE"},
    {"autostart", "Start training the form's config at once.", ""},
    // Not "--name": the xcb platform plugin takes -name/--name (the X11 resource name) out of
    // argv before the app sees it.
    {"run-name",
     "Name of the next run started: the autostarted one, or the one Start trains (it is in the "
     "Train strip's name field until then).",
     "NAME"},
    {"quit-after-steps", "Stop the run after N steps, then quit.", "N"},
    {"quit-after-ms", "Quit after this many milliseconds.", "MS"},
    {"screenshot", "Save a window screenshot before quitting.", "PNG"},
    {"view-shots", "Save one screenshot per tab into DIR (DIR/live.png, …) before quitting.",
     "DIR"},
    {"tab", "Show this view: live, histograms, attention, spikes, compare, sweeps.", "NAME"},
    {"open-run", "Show this stored run.", "ID"},
    {"compare", "Compare these stored runs (2-12 ids, comma separated) in the Compare tab.", "IDS"},
    {"compare-align",
     "With --compare: align the runs at RULE (spike, onset, step:N, threshold:METRIC>VALUE, "
     "event:KIND, intervention; qklab-cli compare --help).",
     "RULE"},
    {"compare-figure", "With --compare: save the comparison's figure (PNG or PDF), then quit.",
     "FILE"},
    {"figure-size",
     "With --compare-figure: slide (1920x1080@144, the default), column (1050xauto@300), full "
     "(2100xauto@300) or WIDTHxHEIGHT@DPI; HEIGHT auto fits the figure.",
     "SIZE"},
    {"sweep", "Open the Sweeps tab on this sweep (name or id).", "NAME"},
    {"sweep-table-share",
     "With --sweep: the point table's share of the tab's height (0.05-0.95; screenshots).",
     "FRACTION"},
    {"latency-report", "Write GUI-thread stall statistics here at quit.", "FILE"},
    {"intervene",
     "Post an intervention once STEP is trained (repeatable); JSON as in a preset's events, "
     "e.g. 100:{\"kind\":\"qk_norm\",\"variant\":\"rms\"}",
     "STEP:JSON"},
    {"overlay", "Histogram view: overlay the first probed step.", ""},
    {"quiet", "No modal dialogs; errors go to stderr.", ""},
    {"theme", "Look: light or dark (default: the last choice, View > Dark theme).", "NAME"},
    {"lesson", "Open this lesson: a shipped lesson's id (02-blowup) or a lesson file.",
     "NAME|FILE"},
    {"lesson-step", "With --lesson: go to this step (1-based).", "N"},
    {"lesson-replay",
     "With --lesson: a training step with a recorded run offers its replay first (Space plays "
     "it; a slow laptop), instead of training live.",
     ""},
    {"presenter", "Start in presenter mode (View > Presenter mode, F11).", ""},
    {"replay", "Replay this stored run (id or name) through the live views.", "RUN"},
    {"replay-speed", "With --replay: steps per second (default: the recorded wall time).", "N"},
    {"shot-on-callout",
     "With --screenshot: take it when a lesson callout shows (or at --quit-after-ms), then quit.",
     ""},
    {"sample",
     "Generate text from these stored runs (comma separated ids), one after another, in the "
     "Sample box: the last run's text on top, the one before it below.",
     "IDS"},
};

void fillOptions(const QCommandLineParser& p, LaunchOptions* o) {
    auto value = [&p](const char* name) { return p.value(QString::fromLatin1(name)); };
    auto isSet = [&p](const char* name) { return p.isSet(QString::fromLatin1(name)); };
    o->presetPath = value("preset");
    o->overrides = p.values(QStringLiteral("set"));
    o->dbPath = value("db");
    o->autostart = isSet("autostart");
    o->runName = value("run-name");
    o->quitAfterSteps = isSet("quit-after-steps") ? value("quit-after-steps").toLongLong() : -1;
    o->quitAfterMs = isSet("quit-after-ms") ? value("quit-after-ms").toInt() : -1;
    o->screenshotPath = value("screenshot");
    if (isSet("view-shots")) o->plotShots << value("view-shots");
    o->tab = value("tab");
    o->openRunId = value("open-run").toLongLong();
    for (const QString& id : value("compare").split(QLatin1Char(','), Qt::SkipEmptyParts))
        o->compareIds << id.trimmed().toLongLong();
    o->compareFigure = value("compare-figure");
    o->compareAlign = value("compare-align");
    o->sweep = value("sweep");
    if (isSet("sweep-table-share")) o->sweepTableShare = value("sweep-table-share").toDouble();
    o->latencyReport = value("latency-report");
    o->interventions = p.values(QStringLiteral("intervene"));
    o->overlay = isSet("overlay");
    o->theme = value("theme");
    o->lesson = value("lesson");
    o->lessonStep = value("lesson-step").toInt();
    o->lessonReplay = isSet("lesson-replay");
    o->presenter = isSet("presenter");
    o->replay = value("replay");
    o->replaySpeed = value("replay-speed").toDouble();
    o->shotOnCallout = isSet("shot-on-callout");
    for (const QString& id : value("sample").split(QLatin1Char(','), Qt::SkipEmptyParts))
        o->sampleIds << id.trimmed().toLongLong();
    // Scripted runs must never wait for a click on a dialog.
    o->quiet = isSet("quiet") || o->autostart || o->quitAfterSteps > 0 || o->quitAfterMs > 0 ||
               !o->screenshotPath.isEmpty();
}

}  // namespace

bool parseLaunchOptions(const QStringList& args, LaunchOptions* o, int* exitCode) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "qklab: see why attention logits blow up and how QK-norm and softcap stop it"));
    p.addHelpOption();
    p.addVersionOption();
    for (const OptionSpec& spec : kOptions)
        p.addOption(QCommandLineOption(QString::fromLatin1(spec.name), QString::fromUtf8(spec.help),
                                       QString::fromLatin1(spec.value)));
    if (!p.parse(args)) {
        std::cerr << "qklab: " << p.errorText().toStdString() << "\n";
        *exitCode = 2;
        return false;
    }
    if (p.isSet(QStringLiteral("help"))) {
        std::cout << p.helpText().toStdString();
        *exitCode = 0;
        return false;
    }
    if (p.isSet(QStringLiteral("version"))) {
        std::cout << "qklab " << QCoreApplication::applicationVersion().toStdString() << "\n";
        *exitCode = 0;
        return false;
    }
    fillOptions(p, o);
    if (p.isSet(QStringLiteral("figure-size"))) {
        const QString text = p.value(QStringLiteral("figure-size"));
        const std::optional<FigureSize> size = parseFigureSize(text);
        if (!size) {
            std::cerr << "qklab: --figure-size '" << text.left(40).toStdString()
                      << "': expected slide, column, full or WIDTHxHEIGHT@DPI (e.g. "
                         "1600x900@144, 2100xauto@300)\n";
            *exitCode = 2;
            return false;
        }
        o->figureSize = *size;
    }
    if (!o->theme.isEmpty() && o->theme != QLatin1String("light") &&
        o->theme != QLatin1String("dark")) {
        std::cerr << "qklab: --theme '" << o->theme.left(40).toStdString()
                  << "': expected light or dark\n";
        *exitCode = 2;
        return false;
    }
    return true;
}

AutomationDriver::AutomationDriver(LabWindow* window, const LaunchOptions& options, QObject* parent)
    : QObject(parent), m_window(window), m_options(options) {
    m_latency = new LatencyMonitor(this);
}

bool AutomationDriver::begin() {
    m_window->setQuiet(m_options.quiet);
    if (!openDatabaseAndPreset()) {
        m_exitCode = 2;
        return false;
    }
    // --run-name names the next run, started here (--autostart) or by the user's Start.
    if (!m_options.runName.isEmpty()) m_window->setNextRunName(m_options.runName);
    if (!m_options.tab.isEmpty()) m_window->showTab(m_options.tab);
    if (m_options.overlay) m_window->setHistogramOverlay(true);
    if (!beginLesson()) return false;
    m_latency->start();
    watchRuns();
    if (m_options.autostart)
        QTimer::singleShot(0, this, &AutomationDriver::autostart);
    else if (m_options.openRunId > 0)
        openRequestedRun();
    beginComparison();
    if (!m_options.sweep.isEmpty()) {
        m_window->showSweep(m_options.sweep);
        if (m_options.sweepTableShare > 0)  // once the window has its size
            QTimer::singleShot(200, this,
                               [this] { m_window->setSweepTableShare(m_options.sweepTableShare); });
    }
    if (m_options.quitAfterMs > 0)
        QTimer::singleShot(m_options.quitAfterMs, this, &AutomationDriver::finishAndQuit);
    beginSamples();
    if (!m_options.autostart && m_options.quitAfterMs <= 0 && !m_options.screenshotPath.isEmpty() &&
        !m_options.shotOnCallout && m_options.sampleIds.isEmpty()) {
        // Only a screenshot of a stored run: give the async load a moment.
        QTimer::singleShot(2000, this, &AutomationDriver::finishAndQuit);
    }
    return true;
}

// --db (or the user's default database), --preset (or the last one, when it is still there),
// --set. False when one of them fails (the message is printed).
bool AutomationDriver::openDatabaseAndPreset() {
    QString db = m_options.dbPath;
    if (db.isEmpty()) {
        db = QString::fromStdString(defaultDatabasePath());
        QDir().mkpath(QFileInfo(db).absolutePath());
    }
    if (!m_window->openDatabase(db)) return false;
    if (m_options.presetPath.isEmpty()) {
        // The last preset is a convenience: silently skipped when it has gone away. Without
        // one (a first start) the box names the shipped preset of all defaults, which is what
        // the form holds, instead of standing empty.
        const QString last = QSettings().value(QStringLiteral("lastPreset")).toString();
        if (!last.isEmpty() && QFileInfo::exists(last))
            m_window->loadPreset(last);
        else
            m_window->loadPreset(QStringLiteral("default"));
    } else if (!m_window->loadPreset(m_options.presetPath)) {
        return false;
    }
    QString error;
    if (m_window->applyOverrides(m_options.overrides, &error)) return true;
    std::cerr << "qklab: " << error.toStdString() << "\n";
    return false;
}

void AutomationDriver::watchRuns() {
    // The benchmark measures the GUI thread *with* the big run loaded: the stall while it is
    // being shown is reported separately as the open time.
    connect(m_window, &LabWindow::runOpened, this, [this](qint64 id, double seconds) {
        std::cout << "opened run " << id << " in " << seconds << " s" << std::endl;
        m_latency->reset();
    });
    RunController* c = m_window->controller();
    connect(c, &RunController::progress, this,
            [this](qint64 id, qint64 step, qint64, double) { onProgress(id, step); });
    connect(c, &RunController::idle, this, &AutomationDriver::onRunEnded);
    connect(c, &RunController::failed, this, [this] { m_exitCode = 1; });
}

// --autostart: the Train strip's Start, with --run-name in its name field (begin() put it there).
void AutomationDriver::autostart() {
    m_window->startRun();
    if (m_window->controller()->isBusy()) return;
    std::cerr << "qklab: the run could not be started\n";
    m_exitCode = 2;
    finishAndQuit();
}

// --compare, and --compare-figure once the comparison is shown.
void AutomationDriver::beginComparison() {
    if (!m_options.compareFigure.isEmpty()) {
        connect(m_window, &LabWindow::comparisonOpened, this, [this] {
            // One event-loop turn later the plots have their size and data.
            QTimer::singleShot(300, this, [this] {
                QString error;
                if (!m_window->saveComparisonFigure(m_options.compareFigure, &error,
                                                    m_options.figureSize)) {
                    std::cerr << "qklab: " << error.toStdString() << "\n";
                    m_exitCode = 1;
                }
                finishAndQuit();
            });
        });
    }
    if (!m_options.compareIds.isEmpty()) {
        m_window->compareRuns(
            std::vector<int64_t>(m_options.compareIds.begin(), m_options.compareIds.end()));
        QString error;
        if (!m_options.compareAlign.isEmpty() &&
            !m_window->alignComparison(m_options.compareAlign, &error)) {
            std::cerr << "qklab: --compare-align: " << error.toStdString() << "\n";
            m_exitCode = 2;
            finishAndQuit();
        }
    }
}

// --presenter, --lesson (and its step), --replay, --shot-on-callout.
bool AutomationDriver::beginLesson() {
    if (m_options.presenter) m_window->setPresenterMode(true);
    if (!m_options.lesson.isEmpty()) {
        m_window->setLessonPreferReplay(m_options.lessonReplay);
        const bool ok =
            m_window->openLesson(m_options.lesson, std::max(0, m_options.lessonStep - 1));
        if (!ok) {
            std::cerr << "qklab: " << m_window->lessonError().toStdString() << "\n";
            if (m_options.quiet) {
                m_exitCode = 2;
                return false;
            }
        }
    }
    if (!m_options.replay.isEmpty()) {
        QString error;
        int64_t id = 0;
        try {
            RunStore store(m_window->databasePath().toStdString(), StoreAccess::ReadOnly);
            id = store.findRun(m_options.replay.toStdString()).id;
        } catch (const std::exception& e) {
            error = QString::fromStdString(e.what());
        }
        if (id == 0 || !m_window->startReplay(id, m_options.replaySpeed, &error)) {
            std::cerr << "qklab: --replay " << m_options.replay.toStdString() << ": "
                      << error.toStdString() << "\n";
            m_exitCode = 2;
            return false;
        }
        if (!m_options.tab.isEmpty()) m_window->showTab(m_options.tab);  // replay showed live
    }
    if (m_options.shotOnCallout)
        connect(m_window, &LabWindow::lessonCalloutShown, this,
                [this] { QTimer::singleShot(1500, this, &AutomationDriver::finishAndQuit); });
    return true;
}

// --sample: each run is picked in the Sample box, generated from once its checkpoint is
// found, and the next follows when the text is written; a screenshot waits for the last.
void AutomationDriver::beginSamples() {
    if (m_options.sampleIds.isEmpty()) return;
    m_window->showSampleBox();
    connect(m_window, &LabWindow::sampleRunReady, this, [this](qint64 id, bool ready) {
        if (!m_samplePending) return;
        m_samplePending = false;
        if (ready) return m_window->generateSample();
        std::cerr << "qklab: --sample " << id << ": " << m_window->sampleNotice().toStdString()
                  << "\n";
        m_exitCode = 2;
        sampleNext();
    });
    connect(m_window, &LabWindow::sampleFinished, this, [this] { sampleNext(); });
    if (m_options.openRunId <= 0) return QTimer::singleShot(0, this, &AutomationDriver::sampleNext);
    // Opening a run picks it in the Sample box too: start once that has happened.
    connect(m_window, &LabWindow::runOpened, this, [this] {
        if (m_nextSample == 0 && !m_samplePending) sampleNext();
    });
}

void AutomationDriver::sampleNext() {
    if (m_nextSample >= m_options.sampleIds.size()) {
        if (!m_options.screenshotPath.isEmpty() && m_options.quitAfterMs <= 0) finishAndQuit();
        return;
    }
    m_samplePending = true;
    m_window->pickSampleRun(m_options.sampleIds[m_nextSample++]);
}

void AutomationDriver::openRequestedRun() {
    if (m_openedRun || m_options.openRunId <= 0) return;
    m_openedRun = true;
    m_window->openRun(m_options.openRunId);
    if (!m_options.tab.isEmpty()) m_window->showTab(m_options.tab);
}

void AutomationDriver::onProgress(qint64, qint64 step) {
    // Measure the steady state, not window creation and the first layout pass.
    if (!m_sawProgress) {
        m_sawProgress = true;
        if (m_options.openRunId <= 0) m_latency->reset();
    }
    // A run to show next to the training one (benchmark: a big run loaded while another trains).
    if (m_options.openRunId > 0 && !m_openedRun) openRequestedRun();
    // Scripted interventions go through the same panel path as a click would.
    while (m_nextIntervention < m_options.interventions.size()) {
        const QString spec = m_options.interventions[m_nextIntervention];
        if (step < spec.section(QLatin1Char(':'), 0, 0).toLongLong()) break;
        ++m_nextIntervention;
        try {
            // The same JSON as an entry of a preset's "events", without the step.
            auto j = nlohmann::json::parse(spec.section(QLatin1Char(':'), 1).toStdString());
            j["step"] = 0;
            Event e = eventFromJson(j, "--intervene");
            e.source = EventSource::User;
            if (!m_window->postIntervention(e))
                std::cerr << "qklab: intervention not applied: " << spec.toStdString() << "\n";
        } catch (const std::exception& ex) {
            std::cerr << "qklab: bad --intervene " << spec.toStdString() << ": " << ex.what()
                      << "\n";
        }
    }
    if (m_options.quitAfterSteps > 0 && step >= m_options.quitAfterSteps && !m_stopping) {
        m_stopping = true;
        m_window->controller()->stopAll();
    }
}

void AutomationDriver::onRunEnded() {
    if (m_options.autostart &&
        (m_options.quitAfterSteps > 0 || !m_options.screenshotPath.isEmpty() ||
         !m_options.plotShots.isEmpty()) &&
        m_options.quitAfterMs <= 0) {
        finishAndQuit();
    }
}

void AutomationDriver::finishAndQuit() {
    if (m_quitting) return;
    m_quitting = true;
    // Taken now: the screenshots below render the whole window several times, which is the
    // driver's work, not the app's.
    m_latencySummary = m_latency->summary();
    m_latencyStats = m_latency->stats();
    // Views that read the store (histograms, attention maps) reload once more so the shots
    // include the rows the writer flushed at the end of the run.
    m_window->reloadStoreViews();
    QTimer::singleShot(1200, this, [this] {
        m_window->replotLiveNow();
        QApplication::processEvents();
        if (!m_options.plotShots.isEmpty()) saveTabShots(m_options.plotShots.first());
        if (!m_options.screenshotPath.isEmpty() &&
            !m_window->grab().save(m_options.screenshotPath)) {
            std::cerr << "qklab: could not save " << m_options.screenshotPath.toStdString() << "\n";
            m_exitCode = m_exitCode ? m_exitCode : 4;
        }
        const int points = m_window->lossPointCount();
        std::cout << "loss points: " << points << "\n"
                  << "run shown: " << m_window->shownLiveRun().runId << "\n"
                  << m_latencySummary.toStdString() << std::endl;
        if (!m_options.latencyReport.isEmpty()) writeLatencyReport();
        if (m_options.quitAfterSteps > 0 && points == 0 && m_exitCode == 0) m_exitCode = 3;
        QCoreApplication::exit(m_exitCode);
    });
}

// --view-shots DIR: DIR/<tab>.png for every tab, then the tab shown before.
void AutomationDriver::saveTabShots(const QString& dir) {
    QDir().mkpath(dir);
    const QString shown = m_window->currentTab();
    for (const QString& tab : m_window->tabNames()) {
        m_window->showTab(tab);
        QApplication::processEvents();
        m_window->grab().save(QDir(dir).filePath(tab + QStringLiteral(".png")));
    }
    m_window->showTab(shown);
    QApplication::processEvents();
}

void AutomationDriver::writeLatencyReport() {
    QFile f(m_options.latencyReport);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Text)) return;
    const LatencyStats& s = m_latencyStats;
    f.write(QStringLiteral("{\"seconds\": %1, \"samples\": %2, \"max_stall_ms\": %3, "
                           "\"p99_stall_ms\": %4, \"stalls_over_50ms\": %5, "
                           "\"max_busy_ms\": %6, \"busy_over_50ms\": %7}\n")
                .arg(s.seconds)
                .arg(s.samples)
                .arg(s.maxStallMs)
                .arg(s.p99StallMs)
                .arg(s.stallsOver50Ms)
                .arg(s.maxBusyMs)
                .arg(s.busyOver50Ms)
                .toUtf8());
}

}  // namespace qklab::gui
