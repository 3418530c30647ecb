// compare_view_test.cpp — the comparison view against hand-computed numbers: loading (seed groups,
// diff, a deleted run), series (worst layer, NaN gaps), smoothing, group bands, the cursor
// readout, the summary table's best cells and the CSV export.
#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cmath>

#include "common/figure_size.h"
#include "common/gui_types.h"
#include "common/plot_cursor.h"
#include "common/plot_style.h"
#include "common/x_axis.h"
#include "compare/compare_attention.h"
#include "compare/compare_data.h"
#include "compare/compare_histograms.h"
#include "compare/compare_panel.h"
#include "compare/compare_plots.h"
#include "gui_test_util.h"
#include "qcustomplot.h"
#include "qklab/analysis/attention_stats.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "shell/automation.h"

using namespace qklab;
using namespace qklab::gui;

namespace {
// Run c's `why`: a paragraph, as presets have.
const char* const kLongWhy =
    "A learning rate ten times the default: the max logit grows past 30 within a few steps, "
    "the loss spikes at step 20 and the run diverges; QK-norm at step 12 comes too late.";
}  // namespace

class CompareViewTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    QString m_db;
    std::vector<int64_t> m_ids;

    // 30 steps; loss = base - step/100 (step 20 NaN when `diverge`), probes every 5 on two
    // layers: layer 0 max = step, layer 1 max = 2 x step; entropy 3 - layer; first-token
    // share 0.1 (layer + 1) + step/1000; largest activation 50 + step (layer 0), 7 + step (1).
    // Histograms (layer 0, every probe): bin step % bins holds 100 + step, the others 1, all
    // times `histScale`; run c counts into 16 symlog bins instead of 32 linear ones.
    int64_t writeRun(const std::string& name, int64_t seed, double lr, double base, bool diverge,
                     bool intervene, int histScale = 1) {
        RunConfig c = test::tinyConfig(30);
        c.run.seed = seed;
        c.optim.lr = lr;
        if (diverge) {  // other bins: 16 symlog ones from -4 to 4 (logits to about ±10^4)
            c.probes.histBins = 16;
            c.probes.histScale = HistScale::Symlog;
            c.probes.histMin = -4;
            c.probes.histMax = 4;
            c.why = kLongWhy;
        }
        NewRun nr;
        nr.name = name;
        nr.configJson = configToJson(c).dump();
        nr.seed = seed;
        RunWriter w(m_db.toStdString(), nr);
        for (int s = 0; s < 30; ++s) {
            StepMetrics m;
            m.step = s;
            m.loss = (diverge && s == 20) ? std::nan("") : base - s / 100.0;
            m.gradNorm = 1;
            m.lr = lr;
            m.seqLen = 32;
            m.tokensPerSec = 1000;
            if (s % 10 == 9) m.valLoss = m.loss + 0.5;
            w.addStep(m);
            if (s % 5 != 0) continue;
            LogitHistogram h;
            h.step = s;
            h.layer = 0;
            h.head = -1;
            h.counts.assign(size_t(c.probes.histBins), histScale);
            h.counts[size_t(s % c.probes.histBins)] = (100 + s) * histScale;
            w.addHistogram(h);
            for (int layer = 0; layer < 2; ++layer) {
                ProbeStats p;
                p.step = s;
                p.layer = layer;
                p.head = -1;
                p.logitMaxRaw = (layer + 1.0) * s;
                p.logitMaxCapped = p.logitMaxRaw;
                p.entropy = 3.0 - layer;
                p.firstTokenShare = 0.1 * (layer + 1) + s / 1000.0;
                p.maxActivation = (layer == 0 ? 50.0 : 7.0) + s;
                w.addProbe(p);
            }
        }
        if (intervene) w.addEvent({12, "qk_norm", R"({"variant":"rms"})", "user"});
        // Attention maps of head 0, layer 0: a at steps 10 and 20, c at 20 only; 2 positions,
        // one-hot for a (rows [1 0], [1 0]), spread for c.
        for (int64_t step : diverge ? std::vector<int64_t>{20} : std::vector<int64_t>{10, 20}) {
            AttentionMap m;
            m.step = step;
            m.size = 2;
            m.weights =
                diverge ? std::vector<float>{1, 0, 0.5f, 0.5f} : std::vector<float>{1, 0, 1, 0};
            w.addAttentionMap(m);
        }
        w.finish(diverge ? RunStatus::Diverged : RunStatus::Finished);
        return w.runId();
    }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("compare.db"));
        m_ids.push_back(writeRun("a", 1, 3e-3, 5.0, false, false));
        m_ids.push_back(writeRun("b", 2, 3e-3, 4.0, false, false, 2));  // a's seed twin
        m_ids.push_back(writeRun("c", 1, 3e-2, 6.0, true, true));
    }

    void loadsGroupsDiffsAndNotesADeletedRun() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        std::vector<int64_t> ids = m_ids;
        ids.push_back(999);  // deleted meanwhile: a note, not a failure
        const Comparison c = loadComparison(store, ids);
        QCOMPARE(int(c.runs.size()), 3);
        QCOMPARE(c.missing, std::vector<int64_t>{999});
        QCOMPARE(c.seedGroups, (std::vector<std::vector<size_t>>{{0, 1}, {2}}));
        QStringList differing;
        for (const ConfigDiffRow& row : c.diff)
            if (row.differs) differing << QString::fromStdString(row.key);
        QVERIFY2(differing.contains(QStringLiteral("optim.lr")), qPrintable(differing.join(',')));
        QVERIFY(differing.contains(QStringLiteral("run.seed")));
        QVERIFY(differing.contains(QStringLiteral("events")));  // c's intervention
        QVERIFY(!differing.contains(QStringLiteral("model.d_model")));
        // The config as trained carries the intervention.
        QCOMPARE(int(c.runs[2].snap.config.events.size()), 1);
    }

    // Issue 38: Python runs at two LRs (user config) and one seed were one seed group. The
    // user config is config: two seeds at one LR group, the two LRs do not, and Group by
    // offers user.lr.
    void pythonRunsGroupBySeedOnlyWithEqualUserConfigs() {
        const std::string db = m_dir.filePath(QStringLiteral("python.db")).toStdString();
        const std::pair<const char*, int64_t> runs[] = {
            {R"({"lr": 6e-4})", 0}, {R"({"lr": 3e-3})", 0}, {R"({"lr": 3e-3})", 1}};
        for (const auto& [user, seed] : runs) {
            RunConfig c = test::tinyConfig(30);
            c.run.seed = seed;
            NewRun nr;
            nr.configJson = configToJson(c).dump();
            nr.seed = seed;
            nr.source = "python: gpt2";
            nr.userConfigJson = user;
            RunWriter(db, nr).finish(RunStatus::Finished);
        }
        RunStore store(db, StoreAccess::ReadOnly);
        const Comparison c = loadComparison(store, {1, 2, 3});
        QCOMPARE(c.seedGroups, (std::vector<std::vector<size_t>>{{0}, {1, 2}}));
        QVERIFY(groupByKeys(c).contains(QStringLiteral("user.lr")));
        const std::vector<CurveGroup> byLr = curveGroups(c, QStringLiteral("user.lr"));
        QCOMPARE(int(byLr.size()), 2);
        QCOMPARE(byLr[1].members, (std::vector<size_t>{1, 2}));
        QCOMPARE(byLr[1].label, QStringLiteral("user.lr=0.003 (2 runs)"));
    }

    void seriesTakeTheWorstLayerAndKeepGaps() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        const Comparison c = loadComparison(store, m_ids);
        const Series worst = seriesOf(c.runs[0], CompareMetric::MaxLogit, -1);
        QCOMPARE(worst.steps.size(), 6);
        QCOMPARE(worst.values[2], 20.0);  // step 10: layer 1, 2 x 10
        QCOMPARE(seriesOf(c.runs[0], CompareMetric::MaxLogit, 0).values[2], 10.0);
        QCOMPARE(seriesOf(c.runs[0], CompareMetric::Entropy, -1).values[0], 2.0);  // lowest
        QVERIFY(seriesOf(c.runs[0], CompareMetric::MaxLogit, 5).steps.isEmpty());
        // Gated attention's two: the highest layer is the worst (layer 1's sink, layer 0's
        // activation), and a chosen layer is its own.
        QCOMPARE(seriesOf(c.runs[0], CompareMetric::FirstTokenShare, -1).values[2], 0.21);
        QCOMPARE(seriesOf(c.runs[0], CompareMetric::FirstTokenShare, 0).values[2], 0.11);
        QCOMPARE(seriesOf(c.runs[0], CompareMetric::MaxActivation, -1).values[2], 60.0);
        QCOMPARE(seriesOf(c.runs[0], CompareMetric::MaxActivation, 1).values[2], 17.0);
        // A lesson naming them shows their plots; ||mu|| tells the LM head's story.
        QCOMPARE(compareMetricFor(QStringLiteral("first_token_share")),
                 std::optional(CompareMetric::FirstTokenShare));
        QCOMPARE(compareMetricFor(QStringLiteral("mu_norm")),
                 std::optional(CompareMetric::LogZMean));
        const Series loss = seriesOf(c.runs[2], CompareMetric::TrainLoss, -1);
        QVERIFY(std::isnan(loss.values[20]));  // a diverged step is a gap
        QCOMPARE(loss.values[21], 6.0 - 0.21);
    }

    void smoothingAndBandsByHand() {
        const QVector<double> s = smoothed({1, 3, std::nan(""), 3}, 0.5);
        QCOMPARE(s[0], 1.0);
        QVERIFY(std::fabs(s[1] - 1.75 / 0.75) < 1e-12);  // (0.25 + 1.5) / (0.25 + 0.5)
        QVERIFY(std::isnan(s[2]));
        QVERIFY(std::fabs(s[3] - (0.5 * 1.75 + 1.5) / (0.5 * 0.75 + 0.5)) < 1e-12);
        QCOMPARE(smoothed({1, 3}, 0), (QVector<double>{1, 3}));
        Series a, b;
        a.steps = {0, 1, 2};
        a.values = {1, 2, 3};
        b.steps = {1, 2};
        b.values = {4, 1};
        const BandSeries band = groupBand({a, b});
        QCOMPARE(band.steps, (QVector<double>{1, 2}));  // steps both have
        QCOMPARE(band.mean, (QVector<double>{3, 2}));
        QCOMPARE(band.low, (QVector<double>{2, 1}));
        QCOMPARE(band.high, (QVector<double>{4, 3}));
    }

    // Seed bands are thinned to the pixel columns for drawing; min and max per column survive.
    void bandDecimationKeepsSpikesAndOrder() {
        QVector<double> x, low, high;
        for (int i = 0; i < 10000; ++i) {
            x << i;
            low << (i == 7001 ? -50.0 : 0.0);   // one step's dip
            high << (i == 5003 ? 100.0 : 1.0);  // one step's spike
        }
        const BandEdges all = decimateBand(x, low, high, 0, 9999, 100);
        QVERIFY2(all.x.size() <= 2 * 100 + 4, qPrintable(QString::number(all.x.size())));
        QCOMPARE(all.x.size(), all.low.size());
        QCOMPARE(all.x.size(), all.high.size());
        QCOMPARE(all.x.front(), 0.0);
        QCOMPARE(all.x.back(), 9999.0);
        QVERIFY(std::is_sorted(all.x.begin(), all.x.end()));
        QCOMPARE(*std::max_element(all.high.begin(), all.high.end()), 100.0);
        QCOMPARE(*std::min_element(all.low.begin(), all.low.end()), -50.0);
        for (int i = 0; i < all.x.size(); ++i) QVERIFY(all.low[i] <= all.high[i]);
        // The spike's column is covered from its first to its last step.
        int spikes = 0;
        for (int i = 0; i < all.x.size(); ++i)
            if (all.high[i] == 100.0) {
                QVERIFY(all.x[i] >= 4900 && all.x[i] <= 5100);
                ++spikes;
            }
        QCOMPARE(spikes, 2);
        // Zoomed in: the visible steps and one neighbour each side, thinned again.
        const BandEdges part = decimateBand(x, low, high, 2000, 6000, 100);
        QCOMPARE(part.x.front(), 1999.0);
        QCOMPARE(part.x.back(), 6001.0);
        QCOMPARE(*std::max_element(part.high.begin(), part.high.end()), 100.0);
        QCOMPARE(*std::max_element(part.low.begin(), part.low.end()), 0.0);
        // Few points per column: whole.
        const BandEdges near = decimateBand(x, low, high, 5000, 5100, 100);
        QCOMPARE(near.x.size(), x.size());
        QCOMPARE(near.high, high);
    }

    // Issue 40, item 4: aligned at the first spike, every plot's x is the run's step minus its
    // own anchor (run 1 at 10, run 2 at 20), the cursor and a seed band included; run 3, with
    // no spike, is not drawn and is greyed in the legend with the reason. A bad rule aligns
    // nothing and says why.
    void alignsEveryPlotAtEachRunsAnchor() {
        const std::string db = m_dir.filePath(QStringLiteral("align.db")).toStdString();
        for (const int64_t spikeStep : {int64_t(10), int64_t(20), int64_t(-1)}) {
            NewRun nr;
            nr.configJson = configToJson(test::tinyConfig(30)).dump();
            RunWriter w(db, nr);
            for (int s = 0; s < 30; ++s) {
                StepMetrics m;
                m.step = s;
                m.loss = 3 + s / 100.0;
                m.gradNorm = 1;
                m.seqLen = 32;
                w.addStep(m);
                if (s % 5 != 0) continue;
                ProbeStats p;
                p.step = s;
                p.logitMaxRaw = s;
                w.addProbe(p);
            }
            Spike sp;
            sp.step = spikeStep;
            sp.metric = "loss";
            if (spikeStep >= 0) w.addSpike(sp);
            w.finish(RunStatus::Finished);
        }
        RunStore store(db, StoreAccess::ReadOnly);
        ComparePanel panel;
        panel.setComparison(loadComparison(store, {1, 2, 3}));
        QVERIFY(panel.setAlignment(QStringLiteral("spike")));
        QCOMPARE(panel.alignment(), QStringLiteral("spike"));
        const int64_t anchors[] = {10, 20};
        for (QCustomPlot* plot : {panel.plots()->plotOf(CompareMetric::TrainLoss),
                                  panel.plots()->plotOf(CompareMetric::MaxLogit)}) {
            QCOMPARE(plot->xAxis->label(), QStringLiteral("steps from first spike"));
            bool drawn[3] = {false, false, false};
            for (int g = 0; g < plot->graphCount(); ++g) {
                QCPGraph* graph = plot->graph(g);
                const size_t run = graph->property("runIndex").toULongLong();
                if (graph->name().isEmpty() || graph->dataCount() == 0) continue;  // markers
                drawn[run] = true;
                QVERIFY(run < 2);
                // The first point is step 0: x = -anchor; every point shifted by exactly it.
                QCOMPARE(graph->data()->begin()->key, -double(anchors[run]));
                const int step = plot == panel.plots()->plotOf(CompareMetric::MaxLogit) ? 5 : 1;
                QCOMPARE(graph->data()->at(2)->key, 2.0 * step - double(anchors[run]));
            }
            QVERIFY(drawn[0] && drawn[1] && !drawn[2]);
            QVERIFY(plot->findChild<QCPItemStraightLine*>(QStringLiteral("alignZero")));
        }
        const std::vector<ComparePanel::LegendEntry> legend = panel.legendEntries();
        QCOMPARE(int(legend.size()), 3);
        QVERIFY2(legend[0].label.endsWith(QStringLiteral(" (0 = step 10)")),
                 qPrintable(legend[0].label));
        QVERIFY(legend[2].greyed);
        QVERIFY2(legend[2].label.endsWith(QStringLiteral(": not drawn, no spike stored")),
                 qPrintable(legend[2].label));
        QVERIFY(panel.findChild<QLabel*>(QStringLiteral("compareLegend"))
                    ->text()
                    .contains(QStringLiteral("color:gray")));
        QVERIFY(!panel.findChild<QComboBox*>(QStringLiteral("xAxisChoice"))->isEnabled());
        // The setting is saved with the comparison.
        QVERIFY(panel.settingsJson().contains(QStringLiteral("\"align\":\"spike\"")));
        // The cursor at x = 0 reads each run at its own anchor step.
        panel.resize(1400, 900);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QCustomPlot* lossPlot = panel.plots()->plotOf(CompareMetric::TrainLoss);
        lossPlot->replot(QCustomPlot::rpImmediateRefresh);
        panel.plots()->hoverCursor()->hover(lossPlot, QPoint(int(lossPlot->xAxis->coordToPixel(0)),
                                                             lossPlot->axisRect()->center().y()));
        const QString text = panel.plots()->hoverCursor()->lastText();
        QVERIFY2(text.contains(QStringLiteral(" · steps from first spike 0<")), qPrintable(text));
        // Loss 3 + step / 100: run 1 at step 10, run 2 at step 20.
        QVERIFY2(text.contains(QStringLiteral("1 run-1: <b>3.1</b>")) &&
                     text.contains(QStringLiteral("2 run-2: <b>3.2</b>")),
                 qPrintable(text));
        // The three configs are equal: one seed group, its band over the steps from each
        // member's anchor that both drawn members have (-10 to 9); run c stays greyed.
        panel.setGroupSeeds(true);
        const QCPGraph* mean = nullptr;
        for (int g = 0; g < lossPlot->graphCount(); ++g)
            if (lossPlot->graph(g)->name().startsWith(QStringLiteral("mean of")))
                mean = lossPlot->graph(g);
        QVERIFY(mean);
        QCOMPARE(mean->dataCount(), 20);
        QCOMPARE(mean->data()->begin()->key, -10.0);
        QCOMPARE((mean->data()->end() - 1)->key, 9.0);
        QVERIFY(panel.legendEntries().back().greyed);
        panel.setGroupSeeds(false);
        // A bad argument: nothing aligned, the field says why.
        QVERIFY(!panel.setAlignment(QStringLiteral("threshold:loss>abc")));
        QVERIFY2(panel.alignArgument()->toolTip().contains(QStringLiteral("'abc' is not a finite")),
                 qPrintable(panel.alignArgument()->toolTip()));
        QCustomPlot* loss = panel.plots()->plotOf(CompareMetric::TrainLoss);
        QCOMPARE(loss->xAxis->label(), QStringLiteral("step"));
        QCOMPARE(loss->graph(0)->data()->begin()->key, 0.0);
        QVERIFY(panel.setAlignment(QStringLiteral("threshold:logit_max_raw>12")));
        QCOMPARE(panel.plots()->anchors()[0].step, std::optional<int64_t>(15));
    }

    void cursorReadsEveryRunAndTheSummaryMarksTheBest() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        ComparePanel panel;
        panel.resize(1400, 900);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setComparison(loadComparison(store, m_ids));
        QCustomPlot* loss = panel.plots()->plotOf(CompareMetric::TrainLoss);
        loss->replot(QCustomPlot::rpImmediateRefresh);
        panel.plots()->hoverCursor()->hover(
            loss, QPoint(int(loss->xAxis->coordToPixel(10)), loss->axisRect()->center().y()));
        const QString text = panel.plots()->hoverCursor()->lastText();
        // Step 10: a 5 - 0.1, b 4 - 0.1, c 6 - 0.1.
        QVERIFY2(text.contains(QStringLiteral("1 a: <b>4.9</b>")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("2 b: <b>3.9</b>")));
        QVERIFY(text.contains(QStringLiteral("3 c: <b>5.9</b>")));
        QVERIFY2(text.contains(QStringLiteral(" · step 10<")), qPrintable(text));
        // The cursor line is drawn on every plot.
        for (QCustomPlot* p : panel.plots()->plots()) QVERIFY(p->itemCount() >= 1);
        // On the time axis, axis and readout say what it counts: time spent in training steps.
        panel.plots()->setXAxis(XAxisKind::Time);
        QCOMPARE(loss->xAxis->label(), QStringLiteral("training time (s)"));
        loss->replot(QCustomPlot::rpImmediateRefresh);
        panel.plots()->hoverCursor()->hover(loss, loss->axisRect()->center());
        const QString timeText = panel.plots()->hoverCursor()->lastText();
        QVERIFY2(timeText.contains(QStringLiteral(" · training time ")) &&
                     timeText.contains(QStringLiteral(" s<br>")),
                 qPrintable(timeText));
        auto* x = panel.findChild<QComboBox*>(QStringLiteral("xAxisChoice"));
        QVERIFY(x);
        QCOMPARE(x->itemText(x->findData(int(XAxisKind::Time))),
                 QStringLiteral("x: training time (s)"));
        QVERIFY(x->toolTip().contains(QStringLiteral("not wall-clock time")));
        panel.plots()->setXAxis(XAxisKind::Step);

        // Best final train loss: run b (4 - 0.29 = 3.71), bold.
        QTableWidget* t = panel.summaryTable();
        QCOMPARE(t->rowCount(), 3);
        int column = -1;
        for (int c = 0; c < t->columnCount(); ++c)
            if (t->horizontalHeaderItem(c)->text() == QStringLiteral("final train loss"))
                column = c;
        QVERIFY(column > 0);
        for (int r = 0; r < 3; ++r) {
            const bool isB = t->item(r, 0)->text() == QStringLiteral("2 b");
            QCOMPARE(t->item(r, column)->font().bold(), isB);
        }
        // Sorting by that column puts b first.
        t->sortItems(column, Qt::AscendingOrder);
        QCOMPARE(t->item(0, 0)->text(), QStringLiteral("2 b"));

        // Differences only by default; all keys on request.
        const int differing = panel.diffTable()->rowCount();
        QVERIFY(differing >= 3);
        panel.setDifferencesOnly(false);
        QVERIFY(panel.diffTable()->rowCount() > differing + 20);

        // Smoothing and groups redraw fast enough to feel instant.
        panel.setSmoothing(0.6);
        QVERIFY(panel.plots()->lastRedrawMs() < 1000);
        panel.setGroupSeeds(true);
        // Small multiples: one plot per run, the same x and y ranges.
        panel.plots()->setSmallMultiples(true, CompareMetric::MaxLogit);
        QCOMPARE(panel.plots()->multiplePlots().size(), 3);
        const auto multi = panel.plots()->multiplePlots();
        QCOMPARE(multi[0]->yAxis->range(), multi[2]->yAxis->range());
        QCOMPARE(multi[0]->xAxis->range(), multi[1]->xAxis->range());
        QVERIFY(multi[2]->graphCount() >= 1);
        panel.plots()->setSmallMultiples(false, CompareMetric::MaxLogit);
        // Group mean of a and b at step 10 (smoothed series): drawn and named.
        panel.plots()->hoverCursor()->hover(
            loss, QPoint(int(loss->xAxis->coordToPixel(10)), loss->axisRect()->center().y()));
        QVERIFY(panel.plots()->hoverCursor()->lastText().contains(QStringLiteral("mean of 2")));
    }

    // c's long `why` wraps in a column of ~40 characters, its row taller; short rows stay one
    // line and the tooltip holds the whole text.
    void diffWrapsALongWhy() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        ComparePanel panel;
        panel.resize(1200, 800);
        panel.show();
        panel.setComparison(loadComparison(store, m_ids));
        QTableWidget* d = panel.diffTable();
        int why = -1, lr = -1;
        for (int r = 0; r < d->rowCount(); ++r) {
            if (d->verticalHeaderItem(r)->text() == QStringLiteral("why")) why = r;
            if (d->verticalHeaderItem(r)->text() == QStringLiteral("optim.lr")) lr = r;
        }
        QVERIFY(why >= 0 && lr >= 0);
        const QFontMetrics fm = d->fontMetrics();
        const int widest = fm.averageCharWidth() * ComparePanel::kDiffCellChars;
        QCOMPARE(d->columnWidth(2), widest);  // c's: capped
        QVERIFY(fm.horizontalAdvance(QString::fromLatin1(kLongWhy)) > 2 * widest);
        QVERIFY2(d->columnWidth(0) < widest, qPrintable(QString::number(d->columnWidth(0))));
        QVERIFY2(d->rowHeight(why) >= 3 * fm.lineSpacing(),
                 qPrintable(QString::number(d->rowHeight(why))));
        QVERIFY(d->rowHeight(lr) < 2 * fm.lineSpacing());
        QCOMPARE(d->item(why, 2)->toolTip(), QString::fromLatin1(kLongWhy));
    }

    // Seeds as groups: the legends (the tab's and the figure's) list the groups in the group's
    // colour, and b's curves and swatches take its group's colour; b's own is gone.
    void groupLegendsListGroupsInTheirColours() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        ComparePanel panel;
        panel.resize(1200, 800);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setComparison(loadComparison(store, m_ids));
        auto* legend = panel.findChild<QLabel*>(QStringLiteral("compareLegend"));
        QVERIFY(legend);
        QCOMPARE(int(panel.legendEntries().size()), 3);
        QCOMPARE(panel.legendEntries()[1].color, compareColor(1));
        QVERIFY(legend->text().contains(compareColor(1).name()));
        const QColor bOwn = compareColor(1);
        auto pixelsOf = [&](const QColor& color) {
            const QString path = m_dir.filePath(QStringLiteral("legend.png"));
            QString error;
            if (!panel.saveFigure(path, &error)) return -1;
            const QImage image = QImage(path).convertToFormat(QImage::Format_RGB32);
            int n = 0;
            for (int y = 0; y < image.height(); ++y)
                for (int x = 0; x < image.width(); ++x)
                    n += image.pixel(x, y) == color.rgb() ? 1 : 0;
            return n;
        };
        QVERIFY(pixelsOf(bOwn) > 20);  // b's swatch in the legend, its curves

        panel.setGroupSeeds(true);
        const auto entries = panel.legendEntries();
        QCOMPARE(int(entries.size()), 2);
        QCOMPARE(entries[0].label, QStringLiteral("1 a + 2 b (2 seeds)"));
        QCOMPARE(entries[0].color, compareColor(0));
        QCOMPARE(entries[1].label, QStringLiteral("3 c"));
        QCOMPARE(entries[1].color, compareColor(2));
        QVERIFY2(legend->text().contains(QStringLiteral("1 a + 2 b (2 seeds)")),
                 qPrintable(legend->text()));
        QVERIFY(!legend->text().contains(bOwn.name()));
        QCOMPARE(panel.plots()->runColor(1), compareColor(0));
        for (int r = 0; r < 3; ++r)
            if (panel.summaryTable()->item(r, 0)->text() == QStringLiteral("2 b"))
                QCOMPARE(panel.summaryTable()->item(r, 0)->data(Qt::DecorationRole).value<QColor>(),
                         compareColor(0));
        QCOMPARE(pixelsOf(bOwn), 0);  // nowhere in the figure: legend, curves, diff header
        panel.setGroupSeeds(false);
        QCOMPARE(int(panel.legendEntries().size()), 3);
    }

    // Group by any differing key: its runs' mean in one colour, the legend "K=value (n runs)".
    // Runs a and b share optim.lr (3e-3), a and c run.seed (1).
    void groupByAnyDifferingKey() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        ComparePanel panel;
        panel.resize(1400, 900);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setComparison(loadComparison(store, m_ids));
        auto* choice = panel.findChild<QComboBox*>(QStringLiteral("compareGroupBy"));
        QVERIFY(choice);
        QCOMPARE(choice->currentIndex(), 0);  // none
        QCOMPARE(choice->itemData(1).toString(), QString::fromLatin1(kGroupBySeed));
        QStringList offered;
        for (int i = 2; i < choice->count(); ++i) offered << choice->itemData(i).toString();
        QVERIFY2(offered.contains(QStringLiteral("optim.lr")), qPrintable(offered.join(',')));
        QVERIFY(offered.contains(QStringLiteral("run.seed")));
        QVERIFY(!offered.contains(QStringLiteral("model.d_model")));  // equal in all runs

        choice->setCurrentIndex(choice->findData(QStringLiteral("optim.lr")));
        auto entries = panel.legendEntries();
        QCOMPARE(int(entries.size()), 2);
        QCOMPARE(entries[0].label, QStringLiteral("optim.lr=0.003 (2 runs)"));
        QCOMPARE(entries[0].color, compareColor(0));
        QCOMPARE(entries[1].label, QStringLiteral("optim.lr=0.03 (1 run)"));
        QCOMPARE(entries[1].color, compareColor(2));
        QCustomPlot* loss = panel.plots()->plotOf(CompareMetric::TrainLoss);
        loss->replot(QCustomPlot::rpImmediateRefresh);
        panel.plots()->hoverCursor()->hover(
            loss, QPoint(int(loss->xAxis->coordToPixel(10)), loss->axisRect()->center().y()));
        // Step 10: the mean of a (4.9) and b (3.9).
        const QString text = panel.plots()->hoverCursor()->lastText();
        QVERIFY2(text.contains(QStringLiteral("mean of optim.lr=0.003 (2 runs): <b>4.4</b>")),
                 qPrintable(text));

        panel.setGroupBy(QStringLiteral("run.seed"));
        entries = panel.legendEntries();
        QCOMPARE(int(entries.size()), 2);
        QCOMPARE(entries[0].label, QStringLiteral("run.seed=1 (2 runs)"));
        QCOMPARE(panel.plots()->runColor(2), compareColor(0));  // c joins a
        QCOMPARE(panel.plots()->runColor(1), compareColor(1));
        QVERIFY(panel.settingsJson().contains(QStringLiteral("\"group_by\":\"run.seed\"")));

        // A key the runs do not differ in (a saved comparison of other runs): no groups.
        panel.setGroupBy(QStringLiteral("model.d_model"));
        QCOMPARE(panel.groupBy(), QString());
        QCOMPARE(int(panel.legendEntries().size()), 3);
        // Saved before "Group by": seeds as groups on is group by seed, off is none.
        panel.applySettings(QStringLiteral(R"({"seed_groups":true})"));
        QCOMPARE(panel.groupBy(), QString::fromLatin1(kGroupBySeed));
        QCOMPARE(panel.legendEntries()[0].label, QStringLiteral("1 a + 2 b (2 seeds)"));
        panel.applySettings(QStringLiteral(R"({"seed_groups":false})"));
        QCOMPARE(panel.groupBy(), QString());
        panel.applySettings(QStringLiteral(R"({"group_by":"optim.lr","seed_groups":false})"));
        QCOMPARE(panel.groupBy(), QStringLiteral("optim.lr"));
    }

    // Presets fill the fields; editing a number makes it custom.
    void figureSizeDialogPresets() {
        FigureSizeDialog d;
        QCOMPARE(d.size(), (FigureSize{1920, 1080, 144}));  // a slide by default
        QCOMPARE(d.presetChoice()->currentIndex(), 0);
        d.choosePreset(1);
        QCOMPARE(d.size(), (FigureSize{1050, 0, 300}));  // 3.5 in, as tall as needed
        d.choosePreset(2);
        QCOMPARE(d.size(), (FigureSize{2100, 0, 300}));
        auto* dpi = d.findChild<QSpinBox*>(QStringLiteral("figureDpi"));
        QVERIFY(dpi);
        dpi->setValue(600);
        QCOMPARE(d.presetChoice()->currentIndex(), d.presetChoice()->count() - 1);  // custom
        QCOMPARE(d.size(), (FigureSize{2100, 0, 600}));
        dpi->setValue(300);
        QCOMPARE(d.presetChoice()->currentIndex(), 2);  // the preset's numbers again
    }

    // --figure-size: a preset's name or WIDTHxHEIGHT@DPI; anything else exits 2 naming it.
    void figureSizeOption() {
        QCOMPARE(parseFigureSize(QStringLiteral("slide")), (FigureSize{1920, 1080, 144}));
        QCOMPARE(parseFigureSize(QStringLiteral("column")), (FigureSize{1050, 0, 300}));
        QCOMPARE(parseFigureSize(QStringLiteral("1600x900@96")), (FigureSize{1600, 900, 96}));
        QCOMPARE(parseFigureSize(QStringLiteral("2100xauto@300")), (FigureSize{2100, 0, 300}));
        for (const char* bad : {"1600x900", "x@3", "1600x900@0", "99x900@96", "1e3x900@96",
                                "20000x900@96", "1600x900@5000", "huge"})
            QVERIFY2(!parseFigureSize(QString::fromLatin1(bad)), bad);
        LaunchOptions o;
        int exitCode = -1;
        QVERIFY(parseLaunchOptions({"qklab", "--figure-size", "1050x700@300"}, &o, &exitCode));
        QCOMPARE(o.figureSize, (FigureSize{1050, 700, 300}));
        QVERIFY(!parseLaunchOptions({"qklab", "--figure-size", "1050x700"}, &o, &exitCode));
        QCOMPARE(exitCode, 2);
    }

    // The figure at a chosen size has exactly those pixels and the dpi in the file, whatever
    // the window's size; its text scales with the dpi: the figure at 3x the screen's dpi and
    // 3x the pixels, shrunk 3x, looks like the one at the screen's dpi, where a 3x canvas at
    // the screen's dpi (tiny text, thin lines) does not.
    void figureAtAChosenSizeAndDpi() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        ComparePanel panel;
        panel.resize(1129, 473);  // the size the teacher's figure used to have
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setComparison(loadComparison(store, m_ids));
        QString error;
        auto save = [&](const FigureSize& size) {
            const QString path = m_dir.filePath(QStringLiteral("sized.png"));
            if (!panel.saveFigure(path, &error, size)) return QImage();
            return QImage(path);
        };
        for (const FigureSize& size : {FigureSize{1920, 1080, 144}, FigureSize{1050, 700, 300}}) {
            const QImage image = save(size);
            QVERIFY2(!image.isNull(), qPrintable(error));
            QCOMPARE(image.size(), QSize(size.width, size.height));
            QCOMPARE(image.dotsPerMeterX(), qRound(size.dpi / 0.0254));
            QCOMPARE(image.dotsPerMeterY(), qRound(size.dpi / 0.0254));
        }
        // A paper column: one or two columns of plots (not four squeezed ones), as tall as
        // they need.
        const QFontMetrics fm(panel.font());
        const auto column = panel.figureLayout({1050, 0, 300}, fm);
        QVERIFY(column.plots.size() >= 11);
        QVERIFY(column.plots[0].second.width() >= ComparePanel::kMinPlotWidth);
        const QImage tall = save({1050, 0, 300});
        QCOMPARE(tall.width(), 1050);
        QVERIFY2(tall.height() > 1050, qPrintable(QString::number(tall.height())));

        const int screen = panel.logicalDpiX();
        const QImage base = save({600, 500, screen}).convertToFormat(QImage::Format_RGB32);
        auto differenceFromBase = [&](const QImage& big) {
            const QImage small =
                big.scaled(base.size(), Qt::IgnoreAspectRatio, Qt::SmoothTransformation)
                    .convertToFormat(QImage::Format_RGB32);
            double sum = 0;
            for (int y = 0; y < base.height(); ++y)
                for (int x = 0; x < base.width(); ++x) {
                    const QRgb a = base.pixel(x, y), b = small.pixel(x, y);
                    sum += std::abs(qRed(a) - qRed(b)) + std::abs(qGreen(a) - qGreen(b)) +
                           std::abs(qBlue(a) - qBlue(b));
                }
            return sum / (3.0 * base.width() * base.height());
        };
        const double scaled = differenceFromBase(save({1800, 1500, 3 * screen}));
        const double bigCanvas = differenceFromBase(save({1800, 1500, screen}));
        qInfo("mean difference per channel: dpi-scaled %.2f, big canvas %.2f", scaled, bigCanvas);
        QVERIFY2(scaled < 6 && bigCanvas > 2 * scaled,
                 qPrintable(QStringLiteral("%1 vs %2").arg(scaled).arg(bigCanvas)));
    }

    // Histograms of the same layer and step, on the stored bins: side by side always; overlay
    // and difference only when the bins agree (run c's 16 bins do not: never rebinned).
    void histogramsAtOneStep() {
        ComparePanel panel;
        panel.resize(1200, 800);
        panel.show();
        QSignalSpy histsLoaded(panel.histograms(), &CompareHistograms::loadedLayer);
        panel.setRuns(m_db, m_ids);
        QVERIFY(histsLoaded.wait(10000));
        CompareHistograms* h = panel.histograms();
        QCOMPARE(int(h->loaded().size()), 3);
        QCOMPARE(int(h->loaded()[0].size()), 6);  // steps 0, 5, ..., 25
        QVERIFY(!h->binsAgree());
        QVERIFY2(h->noteText().contains(QStringLiteral("bins differ")), qPrintable(h->noteText()));
        QCOMPARE(h->shownStep(), int64_t(25));  // the end of training first
        int shown = 0;
        for (QCustomPlot* p : h->plots()) shown += p->isHidden() ? 0 : 1;
        QCOMPARE(shown, 3);
        // All side-by-side plots share one count scale: the largest bin, c's (16 bins).
        QCOMPARE(h->plots()[0]->yAxis->range().upper, h->plots()[2]->yAxis->range().upper);
        // But each keeps its own x axis: a's linear ±64, c's symlog ±4 (not c squeezed into
        // a's range, nor a's into a union).
        QCOMPARE(h->plots()[0]->xAxis->range().lower, -64.0);
        QCOMPARE(h->plots()[0]->xAxis->range().upper, 64.0);
        QCOMPARE(h->plots()[2]->xAxis->range().lower, -4.0);
        QCOMPARE(h->plots()[2]->xAxis->range().upper, 4.0);

        // a and b only: same bins, so the difference b - a works bin by bin.
        panel.setRuns(m_db, {m_ids[0], m_ids[1]});
        QVERIFY(histsLoaded.wait(10000));
        QVERIFY(h->binsAgree());
        h->setStep(12);  // the latest probe at or before it: step 10
        QCOMPARE(h->shownStep(), int64_t(10));
        h->setMode(CompareHistograms::Mode::Difference);
        QCPGraph* diff = h->plots()[0]->graph(0);
        QCOMPARE(diff->dataCount(), 32);
        QCOMPARE(diff->data()->at(10)->value, 110.0);  // 2 x 110 - 110
        QCOMPARE(diff->data()->at(0)->value, 1.0);     // 2 - 1
        h->setMode(CompareHistograms::Mode::Overlay);
        QCOMPARE(h->plots()[0]->graphCount(), 2);
    }

    // A saved comparison reopens exactly as it was left: its runs and every view setting.
    void savedComparisonRoundTrip() {
        const QString db = m_dir.filePath(QStringLiteral("saved.db"));
        QVERIFY(QFile::copy(m_db, db));
        ComparePanel panel;
        QSignalSpy loaded(&panel, &ComparePanel::loaded);
        panel.setRuns(db, {m_ids[2], m_ids[0]});
        QVERIFY(loaded.wait(10000));
        panel.setSmoothing(0.6);
        panel.setGroupSeeds(true);
        panel.setDifferencesOnly(false);
        auto* x = panel.findChild<QComboBox*>(QStringLiteral("xAxisChoice"));
        QVERIFY(x);
        x->setCurrentIndex(x->findData(int(XAxisKind::Tokens)));
        const QString before = panel.settingsJson();
        QString error;
        QVERIFY2(panel.saveAs(QStringLiteral("c vs a"), &error), qPrintable(error));
        QVERIFY(!panel.saveAs(QString(), &error));  // refused, and says why
        QVERIFY2(error.contains(QStringLiteral("empty")), qPrintable(error));
        QCOMPARE(panel.savedNames(), QStringList{QStringLiteral("c vs a")});

        ComparePanel reopened;
        QSignalSpy reloaded(&reopened, &ComparePanel::loaded);
        reopened.setRuns(db, {m_ids[0], m_ids[1]});
        QVERIFY(reloaded.wait(10000));
        reopened.openSaved(QStringLiteral("c vs a"));
        QVERIFY(reloaded.wait(10000));
        QCOMPARE(int(reopened.comparison().runs.size()), 2);
        QCOMPARE(reopened.comparison().runs[0].snap.runId, m_ids[2]);  // in the saved order
        QCOMPARE(reopened.settingsJson(), before);

        // A run deleted since: the comparison opens without it, with a note.
        {
            RunStore store(db.toStdString());
            store.deleteRun(m_ids[0]);
        }
        reopened.openSaved(QStringLiteral("c vs a"));
        QVERIFY(reloaded.wait(10000));
        QCOMPARE(int(reopened.comparison().runs.size()), 1);
        QCOMPARE(reopened.comparison().missing, std::vector<int64_t>{m_ids[0]});
    }

    // Two runs' maps at a step both mapped, side by side.
    void attentionMapsOfTwoRuns() {
        ComparePanel panel;
        QSignalSpy loaded(&panel, &ComparePanel::loaded);
        panel.setRuns(m_db, m_ids);
        QVERIFY(loaded.wait(10000));
        CompareAttention* a = panel.attention();
        QSignalSpy maps(a, &CompareAttention::mapsLoaded);
        a->choose(0, 2, 0, 0);
        QVERIFY(maps.wait(10000));
        QCOMPARE(a->sharedSteps(), std::vector<int64_t>{20});  // c has no map at step 10
        QCOMPARE(a->shownStep(), int64_t(20));
        QVERIFY(a->shown(0) && a->shown(1));
        QCOMPARE(meanRowMax(*a->shown(0)), 1.0);
        QCOMPARE(meanRowMax(*a->shown(1)), 0.75);
        QVERIFY2(a->infoText().contains(QStringLiteral("mean row max 1.000")),
                 qPrintable(a->infoText()));
    }

    void exportsSeriesSummaryAndFigure() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        ComparePanel panel;
        panel.resize(1200, 800);
        panel.show();
        panel.setComparison(loadComparison(store, m_ids));
        const QString csv = m_dir.filePath(QStringLiteral("series.csv"));
        QString error;
        QVERIFY2(panel.saveSeriesCsv(csv, &error), qPrintable(error));
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'));
        const QStringList header = lines[0].split(QLatin1Char(','));
        QCOMPARE(header[0], QStringLiteral("step"));
        const int colA = int(header.indexOf(QStringLiteral("train_loss:1 a")));
        const int colC = int(header.indexOf(QStringLiteral("train_loss:3 c")));
        QVERIFY(colA > 0 && colC > 0);
        const QStringList step20 = lines[21].split(QLatin1Char(','));  // header + steps 0..19
        QCOMPARE(step20[0], QStringLiteral("20"));
        QCOMPARE(step20[colA].toDouble(), 4.8);
        QCOMPARE(step20[colC], QStringLiteral("nan"));
        const QString summary = m_dir.filePath(QStringLiteral("summary.csv"));
        QVERIFY(panel.saveSummaryCsv(summary, &error));
        QVERIFY(QFileInfo(summary).size() > 100);
        for (const char* name : {"figure.png", "figure.pdf"}) {
            const QString path = m_dir.filePath(QString::fromLatin1(name));
            QVERIFY2(panel.saveFigure(path, &error), qPrintable(error));
            QVERIFY(QFileInfo(path).size() > 5000);
        }
        // The PDF is vector: no embedded image (a grab of the plots would be one), and the
        // text is text (fonts), the page the panel's size.
        QFile pdf(m_dir.filePath(QStringLiteral("figure.pdf")));
        QVERIFY(pdf.open(QIODevice::ReadOnly));
        const QByteArray bytes = pdf.readAll();
        QVERIFY(bytes.startsWith("%PDF"));
        QVERIFY2(!bytes.contains("/Subtype /Image"), "the PDF embeds a raster image");
        QVERIFY(bytes.contains("/Font"));
    }
};

QTEST_MAIN(CompareViewTest)
#include "compare_view_test.moc"
