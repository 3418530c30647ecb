// sweep_view_test.cpp — the Sweeps tab against a hand-made store: one table row per point,
// plot data equal to the report's means with min–max bars, diverged seeds drawn at the loss at
// initialisation, the margin moving the max stable LR in the legend, "Compare" on selected
// rows, the run browser's "sweep:NAME" filter, the sweep dialog's point count (with zipped
// axes and fixed values), its validation errors and the file it writes, and, with the real
// qklab-cli, a sweep started from the dialog filling in and an interrupted sweep resumed from
// the panel's button.
#include <sys/wait.h>
#include <unistd.h>

#include <QCheckBox>
#include <QFile>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <map>

#include "common/gui_types.h"
#include "gui_test_util.h"
#include "qcustomplot.h"
#include "qklab/analysis/sweep_report.h"
#include "qklab/config/sweep.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "run/run_browser_panel.h"
#include "shell/automation.h"
#include "shell/main_window.h"
#include "sweeps/sweep_dialog.h"
#include "sweeps/sweep_launch.h"
#include "sweeps/sweep_panel.h"
#include "sweeps/sweep_plots.h"
#include "sweeps/sweep_table.h"

using namespace qklab;
using namespace qklab::gui;
using nlohmann::json;

namespace {

constexpr double kInitialLoss = 5.5;

// The final training loss of each point: qk_norm none/rms x LR 1e-3/1e-2/1e-1, +0.1 for seed 2.
double finalLoss(const std::string& qk, double lr, int64_t seed) {
    const double none[] = {3.0, 2.0, 4.0}, rms[] = {2.9, 2.1, 2.2};
    const int i = lr < 5e-3 ? 0 : (lr < 5e-2 ? 1 : 2);
    return (qk == "none" ? none[i] : rms[i]) + 0.1 * double(seed - 1);
}

json definitionJson(const RunConfig& base) {
    return {{"why", "gui test"},
            {"base", configToJson(base)},
            {"axes", {{"optim.lr", {1e-3, 1e-2, 1e-1}}, {"attention.qk_norm", {"none", "rms"}}}},
            {"seeds", {1, 2}}};
}

}  // namespace

class SweepViewTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    QString m_db;
    int64_t m_sweepId = 0;
    int m_runs = 0;  // runs of the sweep written

    // One run per point, except (none, 1e-3, seed 2): pending. (none, 0.1, seed 2) diverges.
    void writeSweep() {
        SweepDefinition d = parseSweep(definitionJson(test::tinyConfig(10)).dump(), "test.json");
        d.name = "wts";
        RunStore store(m_db.toStdString());
        SweepInfo info;
        info.uuid = newUuid();
        info.name = d.name;
        info.definitionJson = sweepToJson(d).dump();
        info.points = int64_t(d.pointCount());
        m_sweepId = store.addSweep(info);
        for (const SweepPoint& p : expandSweep(d)) {
            const std::string qk = p.coords["attention.qk_norm"].get<std::string>();
            const double lr = p.coords["optim.lr"].get<double>();
            const int64_t seed = p.coords["run.seed"].get<int64_t>();
            if (qk == "none" && lr < 5e-3 && seed == 2) continue;
            const bool diverge = qk == "none" && lr > 5e-2 && seed == 2;
            NewRun nr;
            nr.name = sweepRunName(d.name, p.index, d.pointCount(), p.coords);
            nr.configJson = configToJson(p.config).dump();
            nr.seed = seed;
            nr.sweep = SweepMembership{m_sweepId, p.index, p.coords.dump()};
            RunWriter w(m_db.toStdString(), nr);
            for (int s = 0; s < 3; ++s) {
                StepMetrics m;
                m.step = s;
                m.loss = s == 0 ? kInitialLoss : finalLoss(qk, lr, seed);
                if (diverge && s == 2) m.loss = std::nan("");
                m.lr = lr;
                w.addStep(m);
                ProbeStats probe;
                probe.step = s;
                probe.head = -1;
                probe.logitMaxRaw = qk == "none" ? 1000 * lr : 5.0;
                w.addProbe(probe);
            }
            w.finish(diverge ? RunStatus::Diverged : RunStatus::Finished);
            ++m_runs;
        }
        store.setSweepStatus(m_sweepId, "finished");
    }

    void waitForReport(SweepPanel& panel, int64_t id) {
        QTRY_VERIFY_WITH_TIMEOUT(panel.report() && panel.report()->sweep.id == id, 10000);
    }

    static SweepReport expectedReport(const QString& db, int64_t id, double margin) {
        RunStore store(db.toStdString(), StoreAccess::ReadOnly);
        SweepReportOptions o;
        o.margin = margin;
        return sweepReport(store, id, o);
    }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("sweeps.db"));
        writeSweep();
        // A run outside the sweep, for the filter.
        NewRun loose;
        loose.name = "not-in-a-sweep";
        loose.configJson = configToJson(test::tinyConfig(10)).dump();
        RunWriter(m_db.toStdString(), loose).finish(RunStatus::Finished);
    }

    void listsSweepsAndOneTableRowPerPoint() {
        SweepPanel panel;
        panel.setDatabase(m_db);
        waitForReport(panel, m_sweepId);  // the only sweep is selected by itself
        QCOMPARE(panel.sweepList()->rowCount(), 1);
        QCOMPARE(panel.sweepList()->item(0, 0)->text(), QStringLiteral("wts"));
        QCOMPARE(panel.sweepList()->item(0, 1)->text(), QStringLiteral("finished"));
        QCOMPARE(panel.sweepList()->item(0, 2)->text(), QStringLiteral("11/12"));
        SweepTableModel* model = panel.model();
        QCOMPARE(model->rowCount(), 12);
        QCOMPARE(model->keys(), (QStringList{"attention.qk_norm", "optim.lr", "run.seed"}));
        QCOMPARE(model->columnCount(), 2 + 3 + int(summaryColumns().size()));
        const int status = model->firstSummaryColumn();
        int pending = 0, diverged = 0;
        for (int row = 0; row < 12; ++row) {
            QCOMPARE(model->index(row, 0).data().toLongLong(), qlonglong(row));
            const QString state = model->index(row, status).data().toString();
            pending += state == QLatin1String("pending");
            diverged += state == QLatin1String("diverged");
        }
        QCOMPARE(pending, 1);
        QCOMPARE(diverged, 1);
        // Point 0: qk_norm none, LR 0.001, seed 1; its final train loss column is 3.
        QCOMPARE(model->index(0, 2).data().toString(), QStringLiteral("none"));
        QCOMPARE(model->index(0, 3).data().toString(), QStringLiteral("0.001"));
        const int finalTrain = status + 2;
        QCOMPARE(model->headerData(finalTrain, Qt::Horizontal, Qt::DisplayRole).toString(),
                 QStringLiteral("final train loss"));
        QCOMPARE(model->index(0, finalTrain).data(SweepTableModel::SortRole).toDouble(), 3.0);
        // Sortable: by final train loss, the lowest first (2.0: none, LR 0.01, seed 1).
        panel.table()->sortByColumn(finalTrain, Qt::AscendingOrder);
        const QModelIndex first = panel.table()->model()->index(0, 0);
        QCOMPARE(first.data().toLongLong(), qlonglong(2));
    }

    void plotsDrawTheReportsMeansAndRanges() {
        SweepPanel panel;
        panel.setDatabase(m_db);
        waitForReport(panel, m_sweepId);
        const SweepReport expected = expectedReport(m_db, m_sweepId, panel.margin());
        QCOMPARE(expected.initialLoss, kInitialLoss);
        QCOMPARE(int(expected.configurations.size()), 2);
        SweepPlots* plots = panel.plots();
        for (size_t k = 0; k < expected.configurations.size(); ++k) {
            const LrCurve& curve = expected.configurations[k].curve;
            QCPGraph* mean = plots->meanGraph(k);
            QVERIFY(mean);
            QCOMPARE(mean->dataCount(), int(curve.points.size()));
            QCPErrorBars* bars = plots->rangeBars(k);
            for (int i = 0; i < mean->dataCount(); ++i) {
                QCOMPARE(mean->data()->at(i)->key, curve.points[size_t(i)].lr);
                QCOMPARE(mean->data()->at(i)->value, curve.points[size_t(i)].mean);
                QCOMPARE(bars->data()->at(i).errorMinus,
                         curve.points[size_t(i)].mean - curve.points[size_t(i)].min);
                QCOMPARE(bars->data()->at(i).errorPlus,
                         curve.points[size_t(i)].max - curve.points[size_t(i)].mean);
            }
            // Peak raw max logit, log-log, the same colour as the loss curve.
            QCPGraph* logit = plots->logitGraph(k);
            QCOMPARE(logit->dataCount(), int(curve.points.size()));
            QCOMPARE(logit->pen().color(), mean->pen().color());
            QCOMPARE(logit->data()->at(0)->value, *curve.points[0].peakRawLogit);
        }
        QCOMPARE(plots->logitPlot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
        QCOMPARE(plots->lossPlot()->xAxis->scaleType(), QCPAxis::stLogarithmic);
        QVERIFY(plots->meanGraph(0)->pen().color() != plots->meanGraph(1)->pen().color());
        // By hand: none at LR 0.1 has seed 1 at 4.0 and seed 2 diverged (counted as 5.5).
        const SweepConfiguration& none = expected.configurations[0];
        QCOMPARE(QString::fromStdString(none.label), QStringLiteral("attention.qk_norm=none"));
        QCOMPARE(plots->meanGraph(0)->data()->at(2)->value, (4.0 + kInitialLoss) / 2);
    }

    // A running sweep refreshes its plots: a view the user zoomed stays; a double-click fits
    // it again. The LR axis ticks at decades and 1-2-5, not at the grid's LRs.
    void aZoomSurvivesARefresh() {
        SweepPanel panel;
        panel.setDatabase(m_db);
        waitForReport(panel, m_sweepId);
        const SweepReport report = expectedReport(m_db, m_sweepId, panel.margin());
        SweepPlots* plots = panel.plots();
        QCustomPlot* loss = plots->lossPlot();
        const QCPRange fitted = loss->xAxis->range();
        emit loss->mouseWheel(nullptr);
        loss->xAxis->setRange(0.02, 0.05);
        plots->setReport(report, false);  // the refresh a running sweep makes
        QCOMPARE(loss->xAxis->range().lower, 0.02);
        QCOMPARE(plots->logitPlot()->xAxis->range().lower, fitted.lower);  // not zoomed
        emit loss->mouseDoubleClick(nullptr);
        QCOMPARE(loss->xAxis->range().lower, fitted.lower);
        loss->replot();
        for (double tick : loss->xAxis->tickVector()) {
            const double mantissa = tick / std::pow(10.0, std::floor(std::log10(tick) + 1e-9));
            QVERIFY2(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 ||
                         std::abs(mantissa - 5) < 1e-6,
                     qPrintable(QString::number(tick)));
        }
    }

    void divergedSeedsAreDrawnAtTheInitialLoss() {
        SweepPanel panel;
        panel.setDatabase(m_db);
        waitForReport(panel, m_sweepId);
        QCPGraph* none = panel.plots()->divergedGraph(0);
        QCOMPARE(none->dataCount(), 1);
        QCOMPARE(none->data()->at(0)->key, 0.1);
        QCOMPARE(none->data()->at(0)->value, kInitialLoss);
        QCOMPARE(none->scatterStyle().shape(), QCPScatterStyle::ssCross);
        QCOMPARE(panel.plots()->divergedGraph(1)->dataCount(), 0);  // rms never diverged
        // One legend entry explains the crosses.
        bool explained = false;
        QCustomPlot* loss = panel.plots()->lossPlot();
        for (int i = 0; i < loss->graphCount(); ++i)
            explained = explained || loss->graph(i)->name().contains(QLatin1String("diverged"));
        QVERIFY(explained);
    }

    void marginChangesTheMaxStableLrShown() {
        SweepPanel panel;
        panel.setDatabase(m_db);
        waitForReport(panel, m_sweepId);
        // rms: means 2.95, 2.15 (best), 2.25 at LRs 1e-3, 1e-2, 1e-1.
        panel.setMargin(0.05);
        QTRY_VERIFY(panel.report()->configurations.size() == 2 &&
                    panel.plots()->meanGraph(1)->name().contains("max stable LR 0.01"));
        const QString narrow = panel.plots()->meanGraph(1)->name();
        QVERIFY2(narrow.startsWith("qk_norm=rms · sensitivity "), qPrintable(narrow));
        panel.setMargin(0.2);
        // 0.1 is the largest LR tested: the max stable LR is at least that.
        QTRY_VERIFY(panel.plots()->meanGraph(1)->name().contains(
            QString::fromUtf8("max stable LR \u2265 0.1")));
        const SweepReport expected = expectedReport(m_db, m_sweepId, 0.2);
        QCOMPARE(*expected.configurations[1].curve.maxStableLr, 0.1);
        QCOMPARE(SweepPlots::legendText(expected.configurations[1]),
                 panel.plots()->meanGraph(1)->name());
        // none: LR 0.1 diverged once, so no margin makes it stable.
        QVERIFY(panel.plots()->meanGraph(0)->name().contains("max stable LR 0.01"));
        // The toggle to the validation loss: there is none stored, so no curve points.
        panel.setValidationLoss(true);
        QTRY_VERIFY(panel.plots()->lossPlot()->yAxis->label().contains("validation"));
    }

    void compareOpensTheSelectedPoints() {
        SweepPanel panel;
        panel.setDatabase(m_db);
        waitForReport(panel, m_sweepId);
        std::vector<std::vector<int64_t>> requests;
        connect(&panel, &SweepPanel::compareRequested, this,
                [&](const std::vector<int64_t>& ids) { requests.push_back(ids); });
        QSignalSpy errors(&panel, &SweepPanel::error);
        panel.table()->sortByColumn(0, Qt::AscendingOrder);
        panel.table()->selectRow(1);  // pending point 1 has no run: left out
        panel.compareSelected();
        QCOMPARE(errors.count(), 1);
        panel.table()->selectionModel()->select(
            panel.table()->model()->index(0, 0),
            QItemSelectionModel::Select | QItemSelectionModel::Rows);
        panel.table()->selectionModel()->select(
            panel.table()->model()->index(2, 0),
            QItemSelectionModel::Select | QItemSelectionModel::Rows);
        panel.compareSelected();
        QCOMPARE(requests.size(), size_t(1));
        const std::vector<int64_t> ids = requests.front();
        QCOMPARE(ids.size(), size_t(2));
        const auto& points = panel.model()->points();
        QCOMPARE(ids[0], std::min(points[0].run->id, points[2].run->id));
    }

    void browserFilterShowsOneSweepsRuns() {
        RunBrowserPanel browser;
        QVERIFY(browser.openDatabase(m_db));
        auto* table = browser.findChild<QTableView*>(QStringLiteral("runTable"));
        QCOMPARE(table->model()->rowCount(), m_runs + 1);
        browser.setFilterText(QStringLiteral("sweep:wts"));
        QCOMPARE(table->model()->rowCount(), m_runs);
        browser.setFilterText(QStringLiteral("sweep:W"));  // a prefix, while typing
        QCOMPARE(table->model()->rowCount(), m_runs);
        browser.setFilterText(QStringLiteral("sweep:%1").arg(m_sweepId));
        QCOMPARE(table->model()->rowCount(), m_runs);
        browser.setFilterText(QStringLiteral("sweep:nothing"));
        QCOMPARE(table->model()->rowCount(), 0);
        browser.setFilterText(QStringLiteral("not-in"));  // plain filters still work
        QCOMPARE(table->model()->rowCount(), 1);
        browser.setFilterText(QString());
        QCOMPARE(table->model()->rowCount(), m_runs + 1);
    }

    void dialogCountsPointsAndNamesAnInvalidOne() {
        SweepDialog dialog(test::tinyConfig(10), m_db);
        dialog.seedsEdit()->setText(QStringLiteral("1"));
        dialog.revalidate();
        QCOMPARE(dialog.pointCount(), 7);  // the LR log grid it starts with
        QVERIFY(dialog.startButton()->isEnabled());
        SweepAxisEditor* qk = dialog.addAxis(QStringLiteral("attention.qk_norm"));
        QVERIFY(qk);
        qk->setChecked({QStringLiteral("none"), QStringLiteral("rms_affine")});
        dialog.seedsEdit()->setText(QStringLiteral("1, 2, 3"));
        dialog.revalidate();
        QCOMPARE(dialog.pointCount(), 42);
        QVERIFY2(dialog.errorText().isEmpty(), qPrintable(dialog.errorText()));
        // The CLI's own check: an LR of -1 is refused, naming the axis, the value and the point.
        dialog.axis(QStringLiteral("optim.lr"))->setList(QStringLiteral("0.001, -1"));
        dialog.revalidate();
        QCOMPARE(dialog.pointCount(), -1);
        const QString error = dialog.errorText();
        QVERIFY2(error.contains("optim.lr") && error.contains("-1") && error.contains("point"),
                 qPrintable(error));
        QVERIFY(!dialog.startButton()->isEnabled());
        QString why;
        QVERIFY(!dialog.start(&why));
        // A name another sweep has is refused before the CLI would refuse it.
        dialog.axis(QStringLiteral("optim.lr"))->setList(QStringLiteral("0.001, 0.01"));
        dialog.nameEdit()->setText(QStringLiteral("wts"));
        dialog.revalidate();
        QVERIFY2(dialog.errorText().contains("already"), qPrintable(dialog.errorText()));
    }

    void dialogWritesTheSweepFileAndStartsTheCli() {
        SweepDialog dialog(test::tinyConfig(10), m_db);
        dialog.nameEdit()->setText(QStringLiteral("from dialog"));
        dialog.seedsEdit()->setText(QStringLiteral("4, 5"));
        dialog.axis(QStringLiteral("optim.lr"))->setList(QStringLiteral("0.001, 0.01"));
        dialog.jobsBox()->setValue(2);
        QStringList launched;
        QString logPath;
        dialog.setLauncher([&](const QStringList& args, const QString& log, QString*) {
            launched = args;
            logPath = log;
            return qint64(4242);
        });
        QString error;
        QVERIFY2(dialog.start(&error), qPrintable(error));
        const QString file = sweepFolder(m_db) + QStringLiteral("/from_dialog.json");
        QCOMPARE(dialog.sweepFilePath(), file);
        QCOMPARE(launched, (QStringList{"sweep", file, "--db", QFileInfo(m_db).absoluteFilePath(),
                                        "--name", "from dialog", "--jobs", "2"}));
        QCOMPARE(logPath, sweepFolder(m_db) + QStringLiteral("/from_dialog.log"));
        const SweepDefinition d = loadSweepFile(file.toStdString());
        QCOMPARE(int(expandSweep(d).size()), 4);
        QCOMPARE(d.seeds, (std::vector<int64_t>{4, 5}));
        QCOMPARE(dialog.startedName(), QStringLiteral("from dialog"));
    }

    // A zip of two 3-value axes (one dimension of 3) times a 2-value LR grid, one seed: 6
    // points; the file the dialog writes reads back (core parser) with that zip, grid and set.
    void dialogZipsAxesAndFixesValues() {
        SweepDialog dialog(test::tinyConfig(10), m_db);
        dialog.nameEdit()->setText(QStringLiteral("zipped"));
        dialog.seedsEdit()->setText(QStringLiteral("7"));
        dialog.axis(QStringLiteral("optim.lr"))->setGrid(SweepAxisEditor::Mode::Log, 1e-3, 1e-2, 2);
        dialog.addAxis(QStringLiteral("optim.weight_decay"))
            ->setList(QStringLiteral("0, 0.05, 0.1"));
        SweepAxisEditor* qk = dialog.addAxis(QStringLiteral("attention.qk_norm"));
        qk->setList(QStringLiteral("none, rms, rms"));  // a choice key listed with a repeat
        qk->setZipWithPrevious(true);
        QVERIFY(!dialog.axis(QStringLiteral("optim.lr"))->zipBox()->isEnabled());  // first row
        dialog.addSetValue(QStringLiteral("schedule.steps"))->setValueText(QStringLiteral("12"));
        SweepSetEditor* cap = dialog.addSetValue(QStringLiteral("attention.softcap.c"));
        cap->setValueText(QStringLiteral("30"));
        dialog.revalidate();
        QVERIFY2(dialog.errorText().isEmpty(), qPrintable(dialog.errorText()));
        QCOMPARE(dialog.pointCount(), 6);  // 3 (zip) x 2 (lr) x 1 seed
        QCOMPARE(
            dialog.zipGroups(),
            (std::vector<std::vector<std::string>>{{"optim.weight_decay", "attention.qk_norm"}}));
        // A fixed value the override parser refuses is red, named, and blocks Start.
        cap->setValueText(QStringLiteral("thirty"));
        QVERIFY(cap->isInvalid());
        QVERIFY(cap->valueEdit()->property("invalid").toBool());
        dialog.revalidate();
        QCOMPARE(dialog.pointCount(), -1);
        QVERIFY2(dialog.errorText().contains("attention.softcap.c") &&
                     dialog.errorText().contains("thirty"),
                 qPrintable(dialog.errorText()));
        QVERIFY(!dialog.startButton()->isEnabled());
        cap->setValueText(QStringLiteral("30"));
        QVERIFY(!cap->valueEdit()->property("invalid").toBool());
        dialog.setLauncher([](const QStringList&, const QString&, QString*) { return qint64(1); });
        QString error;
        QVERIFY2(dialog.start(&error), qPrintable(error));
        const SweepDefinition d = loadSweepFile(dialog.sweepFilePath().toStdString());
        QCOMPARE(
            d.zips,
            (std::vector<std::vector<std::string>>{{"optim.weight_decay", "attention.qk_norm"}}));
        QCOMPARE(d.set, (json{{"schedule.steps", 12}, {"attention.softcap.c", 30}}));
        QCOMPARE(d.seeds, (std::vector<int64_t>{7}));
        std::map<std::string, size_t> sizes;
        for (const SweepAxis& a : d.axes) sizes[a.key] = a.values.size();
        QCOMPARE(sizes, (std::map<std::string, size_t>{
                            {"attention.qk_norm", 3}, {"optim.lr", 2}, {"optim.weight_decay", 3}}));
        const std::vector<SweepPoint> points = expandSweep(d);
        QCOMPARE(int(points.size()), dialog.pointCount());
        // Zipped values move together: weight decay 0 only ever meets qk_norm none, and
        // every point has the fixed values.
        for (const SweepPoint& p : points) {
            QCOMPARE(p.coords["optim.weight_decay"] == json(0),
                     p.coords["attention.qk_norm"] == json("none"));
            QCOMPARE(p.config.schedule.steps, int64_t(12));
            QCOMPARE(p.config.attention.softcap.c, 30.0);
        }
    }

    // The core's zip check, shown: zipped axes of 3 and 2 values are refused, naming both.
    void dialogRefusesZippedAxesOfDifferentLengths() {
        SweepDialog dialog(test::tinyConfig(10), m_db);
        dialog.seedsEdit()->setText(QStringLiteral("1"));
        dialog.axis(QStringLiteral("optim.lr"))->setList(QStringLiteral("0.001, 0.01"));
        dialog.addAxis(QStringLiteral("optim.weight_decay"))
            ->setList(QStringLiteral("0, 0.05, 0.1"));
        SweepAxisEditor* qk = dialog.addAxis(QStringLiteral("attention.qk_norm"));
        qk->setChecked({QStringLiteral("none"), QStringLiteral("rms")});
        qk->zipBox()->click();
        dialog.revalidate();
        QCOMPARE(dialog.pointCount(), -1);
        const QString error = dialog.errorText();
        QVERIFY2(error.contains("optim.weight_decay") && error.contains("attention.qk_norm") &&
                     error.contains("3 vs 2"),
                 qPrintable(error));
        QVERIFY(!dialog.startButton()->isEnabled());
        QString why;
        QVERIFY(!dialog.start(&why));
        QVERIFY(!QFileInfo::exists(dialog.sweepFilePath()));
        // Without the zip, every combination: 2 x 3 x 2.
        qk->zipBox()->click();
        dialog.revalidate();
        QCOMPARE(dialog.pointCount(), 12);
        // With weight decay gone, qk_norm zips with the row now above it, the 2 LRs: 2 points.
        qk->setZipWithPrevious(true);
        dialog.removeAxis(QStringLiteral("optim.weight_decay"));
        dialog.revalidate();
        QCOMPARE(dialog.pointCount(), 2);
        QCOMPARE(dialog.zipGroups(),
                 (std::vector<std::vector<std::string>>{{"optim.lr", "attention.qk_norm"}}));
        // A key that is both an axis and a fixed value is refused (the axis would win).
        dialog.addSetValue(QStringLiteral("optim.lr"))->setValueText(QStringLiteral("0.003"));
        dialog.revalidate();
        QCOMPARE(dialog.pointCount(), -1);
        QVERIFY2(dialog.errorText().contains("optim.lr"), qPrintable(dialog.errorText()));
        dialog.removeSetValue(QStringLiteral("optim.lr"));
        dialog.revalidate();
        QCOMPARE(dialog.pointCount(), 2);
    }

    // `qklab --sweep NAME` (screenshots) and Run > Show sweeps: the tab opens on the sweep.
    void theWindowOpensTheSweepsTabOnASweep() {
        LaunchOptions options;
        int exitCode = 0;
        QVERIFY(parseLaunchOptions({"qklab", "--sweep", "wts", "--sweep-table-share", "0.6"},
                                   &options, &exitCode));
        QCOMPARE(options.sweep, QStringLiteral("wts"));
        QCOMPARE(options.sweepTableShare, 0.6);
        MainWindow window;
        window.setQuiet(true);
        QVERIFY(window.openDatabase(m_db));
        window.showSweep(options.sweep);
        auto* tabs = window.findChild<QTabWidget*>();
        QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(window.part<SweepPanel>()));
        waitForReport(*window.part<SweepPanel>(), m_sweepId);
        window.showTab(QStringLiteral("live"));
        window.showTab(QStringLiteral("sweeps"));
        QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(window.part<SweepPanel>()));
        // "Show runs" filters the run list to the sweep.
        QPushButton* showRuns = nullptr;
        for (QPushButton* b : window.part<SweepPanel>()->findChildren<QPushButton*>())
            if (b->text() == QLatin1String("Show runs")) showRuns = b;
        QVERIFY(showRuns);
        showRuns->click();
        QCOMPARE(window.part<RunBrowserPanel>()->filterText(), QStringLiteral("sweep:wts"));
    }

    // The real qklab-cli, detached: the sweep appears in the panel and its points fill in.
    void aSweepStartedFromTheDialogFillsIn() {
        qputenv("QKLAB_CLI", qklab::testpaths::cliPath());
        const QString db = m_dir.filePath(QStringLiteral("live.db"));
        RunStore(db.toStdString());  // created, as the app's browser does
        SweepPanel panel;
        panel.setPollInterval(100);
        panel.show();
        panel.setDatabase(db);
        SweepDialog dialog(test::tinyConfig(10), db);
        dialog.nameEdit()->setText(QStringLiteral("live"));
        dialog.seedsEdit()->setText(QStringLiteral("1"));
        dialog.axis(QStringLiteral("optim.lr"))->setList(QStringLiteral("0.001, 0.01"));
        QString error;
        QVERIFY2(dialog.start(&error), qPrintable(error));
        panel.selectSweep(QStringLiteral("live"));
        QTRY_VERIFY_WITH_TIMEOUT(panel.report() && panel.report()->finished == 2, 60000);
        QCOMPARE(panel.model()->rowCount(), 2);
        QTRY_COMPARE_WITH_TIMEOUT(panel.sweepList()->item(0, 1)->text(), QStringLiteral("finished"),
                                  10000);
        QCOMPARE(panel.plots()->meanGraph(0)->dataCount(), 2);
    }

    // A sweep whose process died reads "interrupted"; the panel's Resume button runs the rest.
    void anInterruptedSweepIsResumedFromThePanel() {
        qputenv("QKLAB_CLI", qklab::testpaths::cliPath());
        const QString db = m_dir.filePath(QStringLiteral("interrupted.db"));
        SweepDefinition d = parseSweep(json{{"base", configToJson(test::tinyConfig(10))},
                                            {"axes", {{"optim.lr", {1e-3, 1e-2}}}}}
                                           .dump(),
                                       "t.json");
        d.name = "cut";
        RunStore(db.toStdString());
        // Added by a process that is gone: a child that exits at once.
        const pid_t child = fork();
        if (child == 0) {
            RunStore store(db.toStdString());
            SweepInfo info;
            info.uuid = newUuid();
            info.name = d.name;
            info.definitionJson = sweepToJson(d).dump();
            info.points = int64_t(d.pointCount());
            store.addSweep(info);
            _exit(0);
        }
        int status = 0;
        QCOMPARE(waitpid(child, &status, 0), child);
        QCOMPARE(WEXITSTATUS(status), 0);
        SweepPanel panel;
        panel.setPollInterval(100);
        panel.show();
        panel.setDatabase(db);
        waitForReport(panel, 1);
        QCOMPARE(panel.report()->sweep.status, std::string("interrupted"));
        QVERIFY(panel.resumeButton()->isVisible());
        QVERIFY(panel.findChild<QLabel*>(QStringLiteral("sweepBanner"))->isVisible());
        panel.resumeButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(panel.report()->finished == 2, 60000);
        QTRY_COMPARE_WITH_TIMEOUT(panel.sweepList()->item(0, 1)->text(), QStringLiteral("finished"),
                                  10000);
        QVERIFY(!panel.resumeButton()->isVisible());
    }
};

QTEST_MAIN(SweepViewTest)
#include "support/test_paths.h"
#include "sweep_view_test.moc"
