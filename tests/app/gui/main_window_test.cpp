// main_window_test.cpp — the whole window, in process: what the views show and what the run
// list names must agree (issue 11, item 2), whatever the filter says.
#include "shell/main_window.h"

#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include "common/gui_types.h"
#include "common/run_controller.h"
#include "gui_test_util.h"
#include "live/attention_map_panel.h"
#include "live/histogram_panel.h"
#include "live/live_plots_panel.h"
#include "live/spikes_panel.h"
#include "qklab/analysis/lesson.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "run/run_browser_panel.h"
#include "run/run_controls_panel.h"
#include "run/run_list_model.h"
#include "setup/config_form.h"
#include "shell/automation.h"

using namespace qklab;
using namespace qklab::gui;

class MainWindowTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;

    static void storeRun(const QString& db, const std::string& name) {
        NewRun run;
        run.name = name;
        run.configJson = configToJson(test::tinyConfig()).dump();
        RunWriter w(db.toStdString(), run);
        StepMetrics m;
        m.step = 0;
        m.loss = 5.0;
        w.addStep(m);
        w.finish(RunStatus::Finished);
    }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QVERIFY(m_dir.isValid());
        // Keep the user's window layout out of the test and the test's out of theirs.
        QCoreApplication::setOrganizationName(QStringLiteral("qklab-tests"));
    }

    // Filter by "blowup", look at run 1, start a run named otherwise: the new run is shown,
    // so it is the selected row and the filter is cleared (it used to hide the new run while
    // run 1 stayed highlighted and named).
    void selectionAlwaysNamesTheShownRun() {
        const QString db = m_dir.filePath(QStringLiteral("agree.db"));
        storeRun(db, "blowup-1");
        MainWindow w;
        w.setQuiet(true);
        QVERIFY(w.openDatabase(db));
        RunBrowserPanel* browser = w.part<RunBrowserPanel>();
        auto* filter = browser->findChild<QLineEdit*>(QStringLiteral("runFilter"));
        auto* table = browser->findChild<QTableView*>(QStringLiteral("runTable"));
        QVERIFY(filter && table);

        filter->setText(QStringLiteral("blowup"));
        QSignalSpy opened(&w, &MainWindow::runOpened);
        table->setCurrentIndex(table->model()->index(0, 0));  // the user clicks run 1
        QVERIFY(opened.wait(10000));
        QCOMPARE(w.part<LivePlotsPanel>()->runId(), int64_t(1));
        QCOMPARE(browser->selectedRunId(), int64_t(1));

        w.part<ConfigForm>()->setConfig(test::tinyConfig(12));
        w.part<RunControlsPanel>()->setRunName(QStringLiteral("fresh"));
        w.part<RunControlsPanel>()->startRun();
        QTRY_VERIFY_WITH_TIMEOUT(w.part<LivePlotsPanel>()->runId() == 2, 20000);
        QCOMPARE(browser->selectedRunId(), int64_t(2));
        QVERIFY(browser->filterText().isEmpty());
        const auto details = browser->findChildren<QLabel*>();
        bool noted = false;
        for (QLabel* l : details) noted = noted || l->text().contains(QStringLiteral("cleared"));
        QVERIFY2(noted, "the details line says the filter was cleared");

        // A filter that hides the shown run leaves no other run highlighted, and says so.
        filter->setText(QStringLiteral("blowup"));
        QCOMPARE(browser->selectedRunId(), int64_t(0));
        bool hiddenNoted = false;
        for (QLabel* l : browser->findChildren<QLabel*>())
            hiddenNoted = hiddenNoted || l->text().contains(QStringLiteral("hidden by the filter"));
        QVERIFY(hiddenNoted);
        // Clearing it highlights the shown run again, without reloading it.
        filter->clear();
        QCOMPARE(browser->selectedRunId(), w.part<LivePlotsPanel>()->runId());

        QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isBusy(), 60000);
        QCOMPARE(browser->selectedRunId(), int64_t(2));
        QCOMPARE(w.part<LivePlotsPanel>()->runId(), int64_t(2));
        // Every view's header says the run ended (it said "(training)" until reopened).
        QCOMPARE(w.part<AttentionMapPanel>()->runLabel(),
                 QStringLiteral("Run 2 “fresh” (finished)"));
        QCOMPARE(w.part<HistogramPanel>()->runLabel(), QStringLiteral("Run 2 “fresh” (finished)"));

        // Issue 11, item 4: with a run and its legends shown, the window still fits a
        // 1280x720 projector (its minimum size used to be wider, and the first start 1560x960).
        // A summary of several spikes used to be one line as wide as the screen.
        std::vector<Spike> spikes;
        for (int i = 0; i < 6; ++i) {
            Spike sp;
            sp.step = 10 + i;
            sp.metric = "loss,grad_norm";
            sp.value = 9;
            sp.kind = SpikeKind::DataOrAccumulation;
            sp.tier = 1 + i % 4;
            spikes.push_back(sp);
        }
        w.part<SpikesPanel>()->setSpikes(2, spikes);
        const QSize least = w.minimumSizeHint().expandedTo(w.minimumSize());
        QVERIFY2(least.width() <= 1280 && least.height() <= 720,
                 qPrintable(QStringLiteral("%1x%2").arg(least.width()).arg(least.height())));
    }

    // Issue 37: --run-name without --autostart names the run the user starts next (it was
    // ignored), and only that one.
    void runNameNamesTheNextRunStarted() {
        const QString db = m_dir.filePath(QStringLiteral("run-name.db"));
        LaunchOptions options;
        int exitCode = -1;
        QVERIFY(parseLaunchOptions(
            {QStringLiteral("qklab"), QStringLiteral("--quiet"), QStringLiteral("--db"), db,
             QStringLiteral("--run-name"), QStringLiteral("my first run")},
            &options, &exitCode));
        MainWindow w;
        AutomationDriver driver(&w, options);
        QVERIFY(driver.begin());
        QVERIFY(!w.controller()->isBusy());  // nothing starts by itself
        w.part<ConfigForm>()->setConfig(test::tinyConfig(2));
        for (int run = 0; run < 2; ++run) {  // the user's Start, twice
            w.part<RunControlsPanel>()->startRun();
            QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isBusy(), 60000);
        }
        RunStore store(db.toStdString(), StoreAccess::ReadOnly);
        const std::vector<RunInfo> runs = store.listRuns();
        QCOMPARE(int(runs.size()), 2);
        QCOMPARE(QString::fromStdString(store.findRun("1").name), QStringLiteral("my first run"));
        QVERIFY(QString::fromStdString(store.findRun("2").name) != QStringLiteral("my first run"));
    }

    // A lesson step's "view" is a tab or the set-up form: the window's tab table and the
    // lessons' view table (lessonViews()) name the same views, and showTab() shows each one.
    void showsEveryLessonView() {
        MainWindow w;
        QStringList lessonNames;
        for (const LessonView& v : lessonViews()) lessonNames << QString::fromStdString(v.name);
        QStringList shown = w.tabNames() << QStringLiteral("config");
        lessonNames.sort();
        shown.sort();
        QCOMPARE(shown, lessonNames);
        for (const QString& tab : w.tabNames()) {
            w.showTab(tab == QLatin1String("live") ? QStringLiteral("spikes")
                                                   : QStringLiteral("live"));
            w.showTab(tab);
            QCOMPARE(w.currentTab(), tab);
        }
        auto* setup = w.findChild<QDockWidget*>(QStringLiteral("setupDock"));
        QVERIFY(setup);
        setup->hide();
        w.showTab(QStringLiteral("config"));
        QVERIFY(!setup->isHidden());
    }

    // An alarm's "step 10" link on the Spikes tab goes to the plots, not only moves them.
    void anAlarmLinkShowsThePlots() {
        MainWindow w;
        w.showTab(QStringLiteral("spikes"));
        emit w.part<SpikesPanel>()->plotsRequested(10);
        QCOMPARE(w.currentTab(), QStringLiteral("live"));
    }
};

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
