// external_run_view_test.cpp — a run logged from the user's own loop through the Python package
// (source "python: hf-llama", issue 26) in the app: interventions and Generate are off with
// the reason while it is shown and on for a run qklab trains; its custom scalars are plotted
// exactly as stored, only for it, and Compare draws the chosen one per run; the metrics it did
// not log have no points; the live header and the run list say where it came from and show its
// own config. The external run is
// written with RunWriter as the package writes it, so every value is known.
#include <qcustomplot.h>

#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "common/gui_types.h"
#include "common/run_controller.h"
#include "compare/compare_panel.h"
#include "compare/compare_plots.h"
#include "gui_test_util.h"
#include "live/custom_scalars_plot.h"
#include "live/intervention_panel.h"
#include "live/live_plots_panel.h"
#include "live/sample_panel.h"
#include "qklab/config/events.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "run/run_browser_panel.h"
#include "run/run_controls_panel.h"
#include "run/run_list_model.h"
#include "setup/config_form.h"
#include "shell/main_window.h"

using namespace qklab;
using namespace qklab::gui;

namespace {
const QString kSource = QStringLiteral("python: hf-llama");
const QString kOutside = QStringLiteral("trained outside qklab (python: hf-llama)");
constexpr int64_t kQklabRun = 1, kExternalRun = 2, kUnwatchedRun = 3;

double tokensAt(int64_t step) {
    return 1024.0 * double(step + 1);
}
double accuracyAt(int64_t step) {
    return 0.05 + 0.01 * double(step);
}
}  // namespace

class ExternalRunViewTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    QString m_db;

    // As the Python package stores a run of the user's: loss and lr only (every other step
    // metric NULL), two custom scalars, "train/acc" not logged at step 5.
    static void storeExternalRun(const QString& db) {
        NewRun run;
        run.name = "my-llama";
        run.configJson = configToJson(test::tinyConfig()).dump();
        run.source = kSource.toStdString();
        run.userConfigJson = R"({"model": "llama", "lr": 0.03, "betas": [0.9, 0.95]})";
        RunWriter w(db.toStdString(), run);
        const double nan = std::nan("");
        for (int64_t s = 0; s < 10; ++s) {
            StepMetrics m;
            m.step = s;
            m.loss = 5.0 - 0.1 * double(s);
            m.lr = 0.03;
            m.gradNorm = m.alpha = m.softcapC = m.tokensPerSec = nan;
            m.logZMean = m.logZMax = m.outLogitMax = m.zLossTerm = m.updateNorm = m.muNorm = nan;
            w.addStep(m);
            w.addCustomScalar({s, "tokens_seen", tokensAt(s)});
            w.addCustomScalar({s, "train/acc", s == 5 ? nan : accuracyAt(s)});
        }
        w.finish(RunStatus::Finished);
    }

    // A run the package logged without watch(): its stored config holds no model (issue 38).
    static void storeUnwatchedRun(const QString& db) {
        NewRun run;
        run.name = "unwatched";
        run.configJson = R"({"probes": {"every": 0}})";
        run.source = "python";
        RunWriter w(db.toStdString(), run);
        w.finish(RunStatus::Finished);
    }

    static void storeQklabRun(const QString& db, const std::string& name = "proxy") {
        NewRun run;
        run.name = name;
        run.configJson = configToJson(test::tinyConfig()).dump();
        RunWriter w(db.toStdString(), run);
        StepMetrics m;
        m.loss = 5.0;
        m.gradNorm = 1.0;
        w.addStep(m);
        w.finish(RunStatus::Finished);
    }

    static RunSnapshot snapshot(const QString& db, int64_t runId) {
        RunStore store(db.toStdString(), StoreAccess::ReadOnly);
        return loadRunSnapshot(store, runId);
    }

    static void openAndWait(MainWindow& w, int64_t runId) {
        QSignalSpy opened(&w, &MainWindow::runOpened);
        w.openRun(runId);
        QVERIFY(opened.wait(10000));
    }

    // Every intervention button: enabled or not, and its tooltip names the reason when off
    // because of the shown run.
    static void checkInterventions(InterventionPanel* panel, bool enabled, bool outside) {
        for (const EventKindInfo& info : eventKinds()) {
            QPushButton* b = panel->button(info.kind);
            QVERIFY(b);
            QCOMPARE(b->isEnabled(), enabled);
            QCOMPARE(b->toolTip().contains(kOutside), outside);
            QCOMPARE(b->toolTip().contains(QStringLiteral("cannot intervene in")), outside);
        }
        QCOMPARE(panel->statusText().contains(kOutside), outside);
    }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QCoreApplication::setOrganizationName(QStringLiteral("qklab-tests"));
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("external.db"));
        storeQklabRun(m_db);
        storeExternalRun(m_db);
        storeUnwatchedRun(m_db);
    }

    void customScalarsArePlottedAsStored() {
        LivePlotsPanel panel;
        panel.showRun(snapshot(m_db, kExternalRun));
        CustomScalarsPlot& custom = panel.customScalars();
        QCOMPARE(custom.names(), (QStringList{QStringLiteral("tokens_seen"), "train/acc"}));
        QVERIFY(panel.shownPlots().contains(custom.plot()));
        QVERIFY(!custom.plot()->isHidden());
        QVERIFY(!custom.choice()->isHidden());

        QCPGraph* tokens = custom.graphOf(QStringLiteral("tokens_seen"));
        QCOMPARE(tokens->dataCount(), 10);
        for (int s = 0; s < 10; ++s) {
            QCOMPARE(tokens->data()->at(s)->key, double(s));
            QCOMPARE(tokens->data()->at(s)->value, tokensAt(s));
        }
        // The step it was not logged at has no point, not a zero.
        QCPGraph* accuracy = custom.graphOf(QStringLiteral("train/acc"));
        QCOMPARE(accuracy->dataCount(), 9);
        for (int i = 0; i < accuracy->dataCount(); ++i) {
            const auto p = accuracy->data()->at(i);
            QVERIFY(p->key != 5.0);
            QCOMPARE(p->value, accuracyAt(int64_t(p->key)));
        }
        // Tokens (1e3..1e4) beside an accuracy (0.05..0.14) on a log axis; one alone, linear.
        QCOMPARE(custom.plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
        custom.choice()->setCurrentIndex(custom.choice()->findData(QStringLiteral("train/acc")));
        QCOMPARE(custom.shownName(), QStringLiteral("train/acc"));
        QVERIFY(accuracy->visible() && !tokens->visible());
        QCOMPARE(custom.plot()->yAxis->scaleType(), QCPAxis::stLinear);
    }

    void unloggedMetricsHaveNoPoints() {
        LivePlotsPanel panel;
        panel.showRun(snapshot(m_db, kExternalRun));
        // The gradient plot, the output-logit plot and the lanes but the LR it logged.
        for (const char* metric : {"grad_norm", "logz_mean", "alpha"}) {
            QCustomPlot* plot = panel.plotForMetric(QString::fromLatin1(metric));
            for (int g = 0; g < plot->graphCount(); ++g) {
                if (plot->graph(g)->name() == QStringLiteral("LR")) continue;
                for (auto p = plot->graph(g)->data()->constBegin();
                     p != plot->graph(g)->data()->constEnd(); ++p)
                    QVERIFY2(std::isnan(p->value), qPrintable(plot->graph(g)->name()));
            }
        }
        QCOMPARE(panel.lossPointCount(), 10);
    }

    void qklabRunsKeepTheirSevenPlots() {
        LivePlotsPanel panel;
        panel.showRun(snapshot(m_db, kExternalRun));
        panel.showRun(snapshot(m_db, kQklabRun));
        QCOMPARE(panel.shownPlots().size(), 7);
        QVERIFY(panel.customScalars().empty());
        QVERIFY(panel.customScalars().plot()->isHidden());
        QVERIFY(panel.customScalars().choice()->isHidden());
        auto* header = panel.findChild<QLabel*>(QStringLiteral("liveHeader"));
        QVERIFY(!header->text().contains(QStringLiteral("outside qklab")));
        QVERIFY(header->toolTip().isEmpty());
    }

    void headerSaysWhereTheRunCameFrom() {
        LivePlotsPanel panel;
        panel.showRun(snapshot(m_db, kExternalRun));
        auto* header = panel.findChild<QLabel*>(QStringLiteral("liveHeader"));
        QVERIFY2(header->text().contains(QStringLiteral("trained outside qklab: python: hf-llama")),
                 qPrintable(header->text()));
        // qklab's stored learning rate of such a run is a default it never trained with.
        QVERIFY2(!header->text().contains(QStringLiteral("lr ")), qPrintable(header->text()));
        QVERIFY(header->toolTip().contains(QStringLiteral("User config")));
        QVERIFY(header->toolTip().contains(QStringLiteral("\"lr\": 0.03")));
    }

    void runListShowsSourceAndUserConfig() {
        RunBrowserPanel browser;
        QVERIFY(browser.openDatabase(m_db));
        RunListModel* model = browser.model();
        const int source = RunListModel::columnOf("source");
        const int settings = RunListModel::columnOf(RunListModel::kSettingsColumn);
        const int row = model->rowOf(kExternalRun);
        QCOMPARE(model->index(row, source).data().toString(), kSource);
        QCOMPARE(model->index(model->rowOf(kQklabRun), source).data().toString(),
                 QStringLiteral("qklab"));
        const QString lr = QStringLiteral("lr ");
        QVERIFY(!model->index(row, settings).data().toString().contains(lr));
        // Only what qklab observed of the model: a run it never watched has no model.
        QCOMPARE(model->index(model->rowOf(kUnwatchedRun), settings).data().toString(),
                 QStringLiteral("model not watched"));
        QVERIFY(model->index(model->rowOf(kQklabRun), settings).data().toString().contains(lr));

        browser.selectRun(kExternalRun);
        const QString details = browser.detailsText();
        QVERIFY2(details.contains(QStringLiteral("trained outside qklab: python: hf-llama")),
                 qPrintable(details));
        // Keys in JSON order (nlohmann sorts them).
        QVERIFY2(details.contains(QStringLiteral("user config: betas=[0.9,0.95], lr=0.03, "
                                                 "model=llama")),
                 qPrintable(details));
        auto* label = browser.findChild<QLabel*>(QStringLiteral("runDetails"));
        QVERIFY(label->toolTip().contains(QStringLiteral("\"model\": \"llama\"")));
        browser.selectRun(kQklabRun);
        QVERIFY(!browser.detailsText().contains(QStringLiteral("outside qklab")));
        QVERIFY(label->toolTip().isEmpty());
    }

    // Compare names the external run's source in its summary and puts its source and user
    // config above qklab's keys in the config diff (qklab's lr of it is a default).
    void compareNamesTheSource() {
        ComparePanel panel;
        QSignalSpy loaded(&panel, &ComparePanel::loaded);
        panel.setRuns(m_db, {kQklabRun, kExternalRun});
        QVERIFY(loaded.wait(10000));
        QStringList names;
        for (int r = 0; r < panel.summaryTable()->rowCount(); ++r)
            names << panel.summaryTable()->item(r, 0)->text();
        names.sort();
        QCOMPARE(names, (QStringList{QStringLiteral("1 proxy"), "2 my-llama (python: hf-llama)"}));
        QTableWidget* diff = panel.diffTable();
        QCOMPARE(diff->verticalHeaderItem(0)->text(), QStringLiteral("source"));
        QCOMPARE(diff->verticalHeaderItem(1)->text(), QStringLiteral("user config"));
        const int external = diff->horizontalHeaderItem(0)->text().contains("my-llama") ? 0 : 1;
        QCOMPARE(diff->item(0, external)->text(), kSource);
        QCOMPARE(diff->item(0, 1 - external)->text(), QStringLiteral("qklab"));
        QVERIFY(diff->item(1, external)->text().contains(QStringLiteral("lr=0.03")));
        QVERIFY(diff->item(1, 1 - external)->text().isEmpty());
        // qklab never recorded the external run's lr (issue 38): its cell is empty, not 0.003.
        int lrRow = -1;
        for (int r = 0; r < diff->rowCount(); ++r)
            if (diff->verticalHeaderItem(r)->text() == QStringLiteral("optim.lr")) lrRow = r;
        QVERIFY(lrRow >= 0);
        QCOMPARE(diff->item(lrRow, external)->text(), QString());
        QCOMPARE(diff->item(lrRow, 1 - external)->text(), QStringLiteral("0.003"));
    }

    // Issue 38: Compare draws a custom scalar like a step metric, chosen among the names any
    // compared run logged; a run without that name (qklab's own) draws nothing there, and a
    // comparison of qklab's runs keeps its twelve plots.
    void compareDrawsTheChosenCustomScalarPerRun() {
        const QString db = m_dir.filePath(QStringLiteral("compare-scalars.db"));
        storeQklabRun(db);     // run 1
        storeExternalRun(db);  // run 2: tokens_seen, train/acc (not at step 5)
        {
            NewRun run;  // run 3: val/acc at steps 0 and 5 only
            run.name = "other-llama";
            run.configJson = configToJson(test::tinyConfig()).dump();
            run.source = kSource.toStdString();
            RunWriter w(db.toStdString(), run);
            for (int64_t s = 0; s < 10; ++s) {
                StepMetrics m;
                m.step = s;
                m.loss = 4.0;
                w.addStep(m);
                if (s % 5 == 0) w.addCustomScalar({s, "val/acc", 0.5 + 0.01 * double(s)});
            }
            w.finish(RunStatus::Finished);
        }
        storeQklabRun(db, "proxy 2");  // run 4
        ComparePanel panel;
        QSignalSpy loaded(&panel, &ComparePanel::loaded);
        panel.setRuns(db, {1, 2, 3});
        QVERIFY(loaded.wait(10000));
        ComparePlots* plots = panel.plots();
        QComboBox* choice = plots->scalarChoice();
        QVERIFY(!choice->isHidden());
        QStringList names;
        for (int i = 0; i < choice->count(); ++i) names << choice->itemData(i).toString();
        QCOMPARE(names, (QStringList{QStringLiteral("tokens_seen"), "train/acc", "val/acc"}));
        QCustomPlot* plot = plots->customScalarPlot();
        QVERIFY(plots->shownPlots().contains(plot));
        QCOMPARE(plots->shownPlots().size(), int(compareMetrics().size()) + 1);
        QCOMPARE(plots->gridColumns(), 5);  // three full rows of five
        // The points each run draws: run index -> (step, value).
        const auto drawn = [plot] {
            std::map<qulonglong, std::vector<std::pair<double, double>>> out;
            for (int g = 0; g < plot->graphCount(); ++g)
                for (auto p = plot->graph(g)->data()->constBegin();
                     p != plot->graph(g)->data()->constEnd(); ++p)
                    out[plot->graph(g)->property("runIndex").toULongLong()].emplace_back(p->key,
                                                                                         p->value);
            return out;
        };
        QCOMPARE(plots->customScalar(), QStringLiteral("tokens_seen"));  // the first name
        auto points = drawn();
        QCOMPARE(int(points.size()), 1);  // run 2 alone
        QCOMPARE(int(points[1].size()), 10);
        for (int s = 0; s < 10; ++s)
            QCOMPARE(points[1][size_t(s)], std::make_pair(double(s), tokensAt(s)));
        choice->setCurrentIndex(choice->findData(QStringLiteral("train/acc")));
        QCOMPARE(plots->customScalar(), QStringLiteral("train/acc"));
        points = drawn();
        QCOMPARE(int(points.size()), 1);
        QCOMPARE(int(points[1].size()), 9);  // not logged at step 5: no point
        for (const auto& [step, value] : points[1]) {
            QVERIFY(step != 5.0);
            QCOMPARE(value, accuracyAt(int64_t(step)));
        }
        plots->setCustomScalar(QStringLiteral("val/acc"));
        points = drawn();
        QCOMPARE(int(points.size()), 1);  // run 3 alone
        QCOMPARE(points[2], (std::vector<std::pair<double, double>>{{0.0, 0.5}, {5.0, 0.55}}));
        // The series CSV and a saved comparison carry it too.
        const QString csv = comparisonCsv(panel.comparison(), -1);
        QVERIFY(csv.section(QLatin1Char('\n'), 0, 0)
                    .endsWith(
                        QStringLiteral(",custom:tokens_seen:2 my-llama,custom:train/acc:2 my-llama,"
                                       "custom:val/acc:3 other-llama")));
        QVERIFY(panel.settingsJson().contains(QStringLiteral("\"custom_scalar\":\"val/acc\"")));

        panel.setRuns(db, {1, 4});  // qklab's own runs: no choice, no plot
        QVERIFY(loaded.wait(10000));
        QVERIFY(plots->scalarChoice()->isHidden());
        QVERIFY(!plots->shownPlots().contains(plot));
        QCOMPARE(plots->shownPlots().size(), int(compareMetrics().size()));
        QCOMPARE(plots->gridColumns(), 5);  // fourteen: still three rows
        QVERIFY(plot->isHidden());
    }

    void generateIsOffWithTheReason() {
        SamplePanel panel;
        panel.setDatabase(m_db);
        QSignalSpy ready(&panel, &SamplePanel::runReady);
        panel.setRun(kExternalRun);
        QVERIFY(ready.wait(10000));
        auto* generate = panel.findChild<QPushButton*>(QStringLiteral("sampleGenerate"));
        QVERIFY(!generate->isHidden());
        QVERIFY(!generate->isEnabled());
        QVERIFY(!panel.canGenerate());
        QVERIFY2(generate->toolTip().contains(kOutside), qPrintable(generate->toolTip()));
        QVERIFY(generate->toolTip().contains(QStringLiteral("cannot generate from")));
        QVERIFY2(panel.notice().contains(kOutside), qPrintable(panel.notice()));
    }

    // The window: a run qklab trains can be intervened in; showing the external run turns
    // every row off with the reason; showing the training run again turns them back on. When
    // it is stopped, Generate works from its checkpoint.
    void interventionsFollowTheShownRun() {
        const QString db = m_dir.filePath(QStringLiteral("window.db"));
        storeQklabRun(db);
        storeExternalRun(db);
        MainWindow w;
        w.setQuiet(true);
        QVERIFY(w.openDatabase(db));
        auto* interventions = w.part<InterventionPanel>();
        openAndWait(w, kExternalRun);
        checkInterventions(interventions, false, true);
        if (QTest::currentTestFailed()) return;

        w.part<ConfigForm>()->setConfig(test::tinyConfig(100000));
        w.part<RunControlsPanel>()->startRun();
        QTRY_VERIFY_WITH_TIMEOUT(w.controller()->isBusy() && w.part<LivePlotsPanel>()->runId() == 3,
                                 20000);
        checkInterventions(interventions, true, false);
        if (QTest::currentTestFailed()) return;
        openAndWait(w, kExternalRun);
        checkInterventions(interventions, false, true);
        if (QTest::currentTestFailed()) return;
        openAndWait(w, 3);
        checkInterventions(interventions, true, false);
        if (QTest::currentTestFailed()) return;

        w.controller()->stop();
        QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isBusy(), 60000);
        auto* sample = w.part<SamplePanel>();
        QTRY_VERIFY_WITH_TIMEOUT(sample->runId() == 3 && sample->canGenerate(), 20000);
        QVERIFY(sample->notice().isEmpty());
    }

    // A run another writer is still writing (a Python loop) is followed by the live view: the
    // rows it commits after the run was opened appear without picking it again, and the view
    // stops reloading once it is finished.
    void liveViewFollowsARunAnotherWriterIsWriting() {
        const QString db = m_dir.filePath(QStringLiteral("follow.db"));
        NewRun run;
        run.name = "still-training";
        run.configJson = configToJson(test::tinyConfig()).dump();
        run.source = kSource.toStdString();
        RunWriter writer(db.toStdString(), run);
        const auto addSteps = [&writer](int64_t from, int64_t to) {
            for (int64_t s = from; s < to; ++s) {
                StepMetrics m;
                m.step = s;
                m.loss = 4.0 - 0.01 * double(s);
                writer.addStep(m);
            }
            writer.flush();
        };
        addSteps(0, 5);
        MainWindow w;
        w.setQuiet(true);
        QVERIFY(w.openDatabase(db));
        openAndWait(w, writer.runId());
        auto* live = w.part<LivePlotsPanel>();
        QCOMPARE(int(live->run().steps.size()), 5);
        addSteps(5, 12);
        QTRY_COMPARE_WITH_TIMEOUT(int(live->run().steps.size()), 12, 10000);
        QCOMPARE(live->run().steps.back().loss, 4.0 - 0.11);
        writer.finish(RunStatus::Finished);
        QTRY_COMPARE_WITH_TIMEOUT(live->run().info.status, RunStatus::Finished, 10000);
    }

    // Comparing runs with custom scalars (a 13th plot) the window still fits a 1024x768 screen.
    void compareWithCustomScalarsFitsTheSmallScreen() {
        MainWindow w;
        w.setQuiet(true);
        QVERIFY(w.openDatabase(m_db));
        w.setWindowState(Qt::WindowNoState);
        w.resize(1024, 768);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        auto* compare = w.part<ComparePanel>();
        QSignalSpy loaded(compare, &ComparePanel::loaded);
        w.compareRuns({kQklabRun, kExternalRun});
        QVERIFY(loaded.wait(10000));
        w.showTab(QStringLiteral("compare"));
        QCoreApplication::processEvents();
        QCOMPARE(compare->plots()->shownPlots().size(), int(compareMetrics().size()) + 1);
        const QSize least = w.minimumSizeHint().expandedTo(w.minimumSize());
        QVERIFY2(least.width() <= 1024 && least.height() <= 768,
                 qPrintable(QStringLiteral("%1x%2").arg(least.width()).arg(least.height())));
    }

    // With an external run's eighth plot laid out the window still fits a 1280x720 screen.
    void externalRunFitsTheSmallScreen() {
        MainWindow w;
        w.setQuiet(true);
        QVERIFY(w.openDatabase(m_db));
        openAndWait(w, kExternalRun);
        QCOMPARE(w.part<LivePlotsPanel>()->shownPlots().size(), 8);
        const QSize least = w.minimumSizeHint().expandedTo(w.minimumSize());
        QVERIFY2(least.width() <= 1280 && least.height() <= 720,
                 qPrintable(QStringLiteral("%1x%2").arg(least.width()).arg(least.height())));
    }
};

QTEST_MAIN(ExternalRunViewTest)
#include "external_run_view_test.moc"
