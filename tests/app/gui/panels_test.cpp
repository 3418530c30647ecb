// panels_test.cpp — the views on a stored run: live plots from a snapshot (and de-duplicated
// live appends), exact histogram bins, attention maps, the spikes panel, CSV/PNG export.
// The run is written with RunWriter so the data are known exactly.
#include <qcustomplot.h>

#include <QFile>
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QToolTip>
#include <cmath>

#include "common/hist_bins.h"
#include "common/plot_cursor.h"
#include "common/plot_export.h"
#include "common/plot_style.h"
#include "common/run_data.h"
#include "common/theme.h"
#include "gui_test_util.h"
#include "live/attention_map_panel.h"
#include "live/histogram_panel.h"
#include "live/live_plots_panel.h"
#include "live/spikes_panel.h"
#include "qklab/analysis/attention_stats.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "run/run_list_model.h"

using namespace qklab;
using namespace qklab::gui;

class PanelsTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    QString m_db;
    int64_t m_runId = 0;
    RunConfig m_config;

  private slots:
    // Before a run's first row, every plot's axis rect spans its widget: the per-layer plots
    // (legend hidden until their first probe) were drawn at a fraction of their cell's width.
    // (With no run at all the first-run panel stands in for the plots.)
    void emptyPlotsUseTheirWholeCell() {
        LivePlotsPanel panel;
        QVERIFY(panel.showsEmptyState());
        panel.startLive(1, test::tinyConfig(), QStringLiteral("empty"));
        QVERIFY(!panel.showsEmptyState());
        panel.resize(1500, 900);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.resize(1900, 1000);
        QTest::qWait(100);
        panel.replotNow();
        // The plots on screen: the Custom scalars plot is not laid out without a run that
        // logged some (external_run_view_test checks it when it is).
        QCOMPARE(panel.shownPlots().size(), 7);
        for (QCustomPlot* p : panel.shownPlots()) {
            p->replot();
            QVERIFY2(p->axisRect()->outerRect().width() >= p->width() - 40,
                     qPrintable(QStringLiteral("%1: rect %2 of %3")
                                    .arg(p->plotLayout()->elementCount())
                                    .arg(p->axisRect()->outerRect().width())
                                    .arg(p->width())));
        }
    }

    // Log axes tick at decades, or at 1-2-5 on a short range: never at 10^(k/2) (a sweep's LR
    // axis read 0.001, 0.0032, 0.01, 0.032).
    // A narrow plot asks for fewer x ticks: compare's small multiples ran "0 25 5075100125".
    void narrowPlotsAskForFewerTicks() {
        QCustomPlot plot;
        stylePlot(&plot, QStringLiteral("y"), false);
        plot.resize(220, 150);
        plot.show();
        QVERIFY(QTest::qWaitForWindowExposed(&plot));
        QVERIFY(plot.xAxis->ticker()->tickCount() <= 3);
        plot.xAxis->setRange(0, 125);
        plot.replot();
        QVERIFY(plot.xAxis->tickVector().size() <= 4);
        plot.resize(1000, 150);
        QTRY_VERIFY(plot.xAxis->ticker()->tickCount() >= 6);
    }

    void logAxesTickAtNameableValues() {
        QCustomPlot plot;
        plot.resize(400, 300);
        setLogAxis(plot.xAxis, true);
        const auto ticksFor = [&plot](double lo, double hi) {
            plot.xAxis->setRange(lo, hi);
            plot.replot();
            return plot.xAxis->tickVector();
        };
        const auto near = [](const QVector<double>& got, const QVector<double>& want) {
            if (got.size() != want.size()) return false;
            for (int i = 0; i < got.size(); ++i)
                if (std::abs(got[i] / want[i] - 1) > 1e-9) return false;
            return true;
        };
        QVector<double> lr = ticksFor(0.001 / 1.6, 0.03 * 1.6);
        QVERIFY2(near(lr, {0.001, 0.002, 0.005, 0.01, 0.02}),
                 qPrintable(QString::number(lr.size())));
        QVector<double> logits = ticksFor(0.1, 2000);
        QVERIFY(near(logits, {0.1, 1, 10, 100, 1000}));
    }

    // Under QK-norm the norm plot has the lanes the dot product sees (lesson 4's "exactly
    // 5.66"); a series with one point is drawn as a dot (lesson 4's callout at step 0); in
    // presenter mode only a lesson step's plots are laid out.
    void normedLanesLonePointsAndLessonPlots() {
        LivePlotsPanel panel;
        RunConfig c = test::tinyConfig(10);
        c.attention.qkNorm = QkNormVariant::Rms;
        panel.startLive(7, c, QStringLiteral("normed"));
        LiveBatch batch;
        batch.runId = 7;
        StepMetrics m;
        m.loss = 5;
        batch.steps << m;
        ProbeStats p;
        p.head = -1;
        p.qRawNormP90 = 50;
        p.kRawNormP90 = 40;
        p.qNormP90 = p.kNormP90 = std::sqrt(32.0);
        p.logitMaxRaw = 22.9;
        batch.probes << p;
        panel.appendBatch(batch);
        panel.replotNow();
        auto* norms = qobject_cast<QCustomPlot*>(panel.plotForMetric(QStringLiteral("q_norm_p90")));
        QMap<QString, double> lanes;
        for (int i = 0; i < norms->graphCount(); ++i)
            if (norms->graph(i)->dataCount() > 0)
                lanes[norms->graph(i)->name()] = norms->graph(i)->data()->at(0)->value;
        QCOMPARE(lanes.value(QStringLiteral("L0 q")), 50.0);
        QCOMPARE(lanes.value(QStringLiteral("L0 k")), 40.0);
        QVERIFY(std::abs(lanes.value(QStringLiteral("L0 q normed")) - 5.657) < 1e-3);
        QVERIFY(std::abs(lanes.value(QStringLiteral("L0 k normed")) - 5.657) < 1e-3);
        // One point each: drawn as dots until the second arrives.
        QCPGraph* loss = panel.lossPlot()->graph(0);
        QCOMPARE(loss->dataCount(), 1);
        QVERIFY(!loss->scatterStyle().isNone());
        auto* header = panel.findChild<QLabel*>(QStringLiteral("liveHeader"));
        QVERIFY(header->text().contains(QStringLiteral("qk_norm=rms")));
        QVERIFY(!header->text().contains(QStringLiteral("then")));
        // A config event is in the key settings already: it is not listed again after "then".
        LiveBatch configEvent;
        configEvent.events << EventRecord{0, "dirty_batch", "{}", "config"};
        panel.appendBatch(configEvent);
        panel.replotNow();
        QVERIFY2(!header->text().contains(QStringLiteral("then")), qPrintable(header->text()));
        batch.probes.clear();
        batch.steps[0].step = 1;
        // Switch QK-norm off mid-run: the header says so instead of keeping "qk_norm=rms".
        batch.events << EventRecord{1, "qk_norm", R"({"variant":"none"})", "user"};
        panel.appendBatch(batch);
        panel.replotNow();
        QVERIFY(loss->scatterStyle().isNone());
        QVERIFY2(header->text().contains(QStringLiteral(" · then ")) &&
                     header->text().endsWith(QStringLiteral("@1")),
                 qPrintable(header->text()));
        QVERIFY2(header->text().contains(QStringLiteral("none")), qPrintable(header->text()));

        panel.setLessonMetrics({QStringLiteral("loss"), QStringLiteral("entropy")});
        QCOMPARE(panel.shownPlots().size(), 7);  // not presenting: all
        setPresenterActive(true);
        panel.relayoutPlots();
        QCOMPARE(panel.shownPlots(),
                 (QList<QCustomPlot*>{
                     panel.lossPlot(),
                     qobject_cast<QCustomPlot*>(panel.plotForMetric(QStringLiteral("entropy")))}));
        setPresenterActive(false);
        panel.relayoutPlots();
        QCOMPARE(panel.shownPlots().size(), 7);
    }

    void initTestCase() {
        registerGuiMetaTypes();
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("panels.db"));
        m_config = test::tinyConfig(200);
        NewRun nr;
        nr.name = "synthetic";
        nr.configJson = configToJson(m_config).dump();
        RunWriter w(m_db.toStdString(), nr);
        m_runId = w.runId();
        for (int s = 0; s < 200; ++s) {
            StepMetrics m;
            m.step = s;
            m.loss = 5.0 - s * 0.01;
            m.gradNorm = 1.0 + (s == 120 ? 50 : 0);
            m.lr = 3e-3;
            m.softcapC = 0;
            m.seqLen = 32;
            m.logZMean = 5.5 - s * 0.05;  // drifts below 0, as without z-loss
            m.muNorm = 0.5 + s * 0.01;    // the mean LM-head row drifts too
            m.logZMax = m.logZMean + 2;
            m.outLogitMax = 3.0;
            m.zLossTerm = m.logZMean * m.logZMean;
            m.updateNorm = 0.5;
            if (s % 10 == 0) m.valLoss = m.loss + 0.1;
            w.addStep(m);
            if (s % 5 == 0) {
                ProbeStats p;
                p.step = s;
                p.layer = 0;
                p.head = -1;
                p.logitMaxRaw = 2.0 + s;  // climbs through the 20/30 thresholds
                p.logitP99Raw = 1.0 + s / 2.0;
                p.logitMaxCapped = p.logitMaxRaw;
                p.qRawNormP90 = 5 + s * 0.1;
                p.kRawNormP90 = 5 + s * 0.1;
                p.qNormP90 = p.qRawNormP90;
                p.kNormP90 = p.kRawNormP90;
                p.entropy = 3.0 - s * 0.01;
                w.addProbe(p);
                LogitHistogram h;
                h.step = s;
                h.layer = 0;
                h.head = -1;
                h.counts.assign(32, 0);
                h.counts[s % 32] = 100 + s;
                h.underflow = 1;
                h.overflow = s;
                h.nan = s == 50 ? 7 : 0;
                w.addHistogram(h);
            }
        }
        AttentionMap map;
        map.step = 50;
        map.layer = 0;
        map.head = 1;
        map.size = 4;
        map.weights = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};  // collapsed onto key 0
        w.addAttentionMap(map);
        Spike sp;
        sp.step = 120;
        sp.metric = "grad_norm";
        sp.value = 51;
        sp.zScore = 9;
        sp.kind = SpikeKind::QkRunaway;
        sp.tier = 3;
        sp.probeStep = 120;
        sp.diagnosis = "q/k norms rose with the max logit";
        w.addSpike(sp);
        w.addEvent(EventRecord{100, "lr_multiplier", "{\"factor\":0.5}", "user"});
        w.flush();
        w.finish(RunStatus::Finished);
    }

    void histogramBinsMatchTheConfig() {
        ProbeConfig p;
        p.histBins = 4;
        p.histMin = -2;
        p.histMax = 2;
        const HistBins lin = histBinsOf(p);
        QCOMPARE(lin.count(), 4);
        QCOMPARE(lin.edges.front(), -2.0);
        QCOMPARE(lin.edges.back(), 2.0);
        QCOMPARE(lin.center(0), -1.5);
        p.histScale = HistScale::Symlog;
        const HistBins sym = histBinsOf(p);
        QVERIFY(sym.symlog);
        QCOMPARE(sym.toRaw(2.0), 99.0);
        QVERIFY(std::fabs(sym.fromRaw(-999.0) + 3.0) < 1e-12);
    }

    // Issue 11, item 6: one click on a plot used to turn Follow off.
    // Issue 11, item 11: a blow-up with no loss spike still tells the user something happened.
    void spikesPanelListsLogitAlarms() {
        SpikesPanel panel;
        panel.setSpikes(m_runId, {});
        LogitAlarm a;
        a.step = 10;
        a.layer = 0;
        a.metric = "logit_max_raw";
        a.value = 1339;
        a.threshold = 30;
        a.kind = SpikeKind::QkRunaway;
        a.tier = 3;
        panel.setLogitAlarms(m_runId, {a});
        QCOMPARE(panel.alarmCount(), 1);
        QVERIFY(panel.alarmsText().contains(QStringLiteral("step 10")));
        QVERIFY(panel.alarmsText().contains(QStringLiteral("Q/K length runaway")));
        auto* summary = panel.findChild<QLabel*>(QStringLiteral("spikeSummary"));
        QVERIFY(summary && summary->text().contains(QStringLiteral("1 logit alarm")));
        QSignalSpy jumped(&panel, &SpikesPanel::plotsRequested);
        auto* list = panel.findChild<QLabel*>(QStringLiteral("logitAlarms"));
        emit list->linkActivated(QStringLiteral("step:10"));
        QCOMPARE(jumped.count(), 1);
        QCOMPARE(jumped.at(0).at(0).toLongLong(), qint64(10));
    }

    // Issue 25: a spike caused by a change of the run (here an anneal) is tier 3, but the
    // brief's tier-3 text says "q/k norms inflating"; the summary quotes the spike's own advice.
    void spikesSummaryQuotesTheWorstSpikesOwnAdvice() {
        Spike annealed, data;
        annealed.step = 189;
        annealed.kind = SpikeKind::RunChange;
        annealed.tier = 3;
        annealed.diagnosis =
            "The run changed just before this spike: QK-norm alpha fell. Tier 3: "
            "keep QK-norm on (alpha > 0).";
        data.step = 40;
        data.tier = 1;
        data.diagnosis = "No jump. Tier 1: check the data.";
        SpikesPanel panel;
        panel.setSpikes(m_runId, {data, annealed});
        auto* summary = panel.findChild<QLabel*>(QStringLiteral("spikeSummary"));
        QVERIFY(summary);
        QCOMPARE(summary->text(),
                 QStringLiteral("2 spike(s); highest prescription tier 3 (step 189). Tier 3: keep "
                                "QK-norm on (alpha > 0)."));
        QVERIFY(!summary->text().contains(QStringLiteral("inflating")));
        // A stored diagnosis without its tier sentence falls back to the brief's text.
        annealed.diagnosis = "an older text";
        panel.setSpikes(m_runId, {annealed});
        QVERIFY(summary->text().endsWith(SpikesPanel::tierText(3)));
    }

    void followSurvivesAClickButNotADrag() {
        RunStore store(m_db.toStdString());
        LivePlotsPanel panel;
        panel.resize(1200, 800);
        panel.show();
        panel.showRun(loadRunSnapshot(store, m_runId));
        QVERIFY(panel.following());
        QWidget* plot = panel.lossPlot();
        const QPoint centre = plot->rect().center();
        QTest::mouseClick(plot, Qt::LeftButton, {}, centre);
        QVERIFY(panel.following());
        QTest::mousePress(plot, Qt::LeftButton, {}, centre);
        QMouseEvent move(QEvent::MouseMove, centre + QPoint(40, 0), plot->mapToGlobal(centre),
                         Qt::LeftButton, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(plot, &move);
        QTest::mouseRelease(plot, Qt::LeftButton, {}, centre + QPoint(40, 0));
        QVERIFY(!panel.following());
    }

    // Issue 11, items 12 and 13: a readout of every curve under the mouse, and x in steps,
    // tokens seen or training time.
    void hoverReadsEveryCurveAndXCanCountTokens() {
        RunStore store(m_db.toStdString());
        LivePlotsPanel panel;
        panel.resize(1200, 800);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.showRun(loadRunSnapshot(store, m_runId));
        QCustomPlot* loss = panel.lossPlot();
        loss->replot(QCustomPlot::rpImmediateRefresh);
        const QPoint at(int(loss->xAxis->coordToPixel(100)), loss->axisRect()->center().y());
        panel.hoverCursor()->hover(loss, at);
        QString text = panel.hoverCursor()->lastText();
        // Step 100: train loss 5 - 100 * 0.01 = 4, validation 4.1 at the same step.
        QVERIFY2(text.contains(QStringLiteral("step 100")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("train: <b>4</b>")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("validation: <b>4.1</b>")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("“synthetic”")));
        // A probe series (every 5 steps) read between two probes names the step it shows.
        QCustomPlot* logits = panel.logitPlot();
        logits->replot(QCustomPlot::rpImmediateRefresh);
        const QPoint probe(int(logits->xAxis->coordToPixel(102)), logits->axisRect()->center().y());
        panel.hoverCursor()->hover(logits, probe);
        text = panel.hoverCursor()->lastText();
        QVERIFY2(text.contains(QStringLiteral("L0 max raw: <b>102</b> (step 100)")),
                 qPrintable(text));
        panel.hoverCursor()->hide();
        QVERIFY(std::isnan(panel.hoverCursor()->x()));

        // Tokens seen: step s ends at (s + 1) x batch 4 x T 32 tokens.
        panel.setXAxis(XAxisKind::Tokens);
        QCOMPARE(loss->xAxis->label(), QStringLiteral("tokens seen"));
        QCPGraph* train = loss->graph(0);
        QCOMPARE(train->data()->at(0)->key, 128.0);
        QCOMPARE(train->data()->at(99)->key, 100 * 128.0);
        QCOMPARE(panel.logitPlot()->graph(0)->data()->at(1)->key, 6 * 128.0);  // probe step 5
        QVERIFY(panel.following());
        QCOMPARE(loss->xAxis->range().upper, 200 * 128.0);
        loss->replot(QCustomPlot::rpImmediateRefresh);
        panel.hoverCursor()->hover(loss, QPoint(int(loss->xAxis->coordToPixel(101 * 128.0)),
                                                loss->axisRect()->center().y()));
        QVERIFY2(panel.hoverCursor()->lastText().contains(QStringLiteral("step 100")),
                 qPrintable(panel.hoverCursor()->lastText()));
        panel.setXAxis(XAxisKind::Step);
        QCOMPARE(train->data()->at(99)->key, 99.0);
    }

    void livePlotsShowAStoredRun() {
        RunStore store(m_db.toStdString());
        RunSnapshot snap = loadRunSnapshot(store, m_runId);
        QCOMPARE(int(snap.steps.size()), 200);
        QCOMPARE(int(snap.probes.size()), 40);
        LivePlotsPanel panel;
        panel.resize(1200, 800);
        panel.showRun(std::move(snap));
        QCOMPARE(panel.lossPointCount(), 200);
        // Issue 11, item 4: no legend sits inside a plot's data area.
        for (QCustomPlot* p : panel.plots()) {
            QVERIFY(!p->axisRect()->insetLayout()->elements(false).contains(p->legend));
            QVERIFY(p->plotLayout()->elements(false).contains(p->legend));
        }
        QVERIFY(panel.logitPlot()->graphCount() >= 2);
        QCOMPARE(panel.logitPlot()->graph(0)->dataCount(), 40);
        QVERIFY(panel.logitPlot()->yAxis->scaleType() == QCPAxis::stLogarithmic);
        // The output-logit statistics and the update norm are drawn from the step rows.
        auto* outLogits = panel.plotForMetric(QStringLiteral("logz_mean"));
        QVERIFY(outLogits != panel.logitPlot() && outLogits != panel.lossPlot());
        QCOMPARE(panel.plotForMetric(QStringLiteral("logz_max")), outLogits);
        QCOMPARE(panel.plotForMetric(QStringLiteral("out_logit_max")), outLogits);
        QCOMPARE(panel.plotForMetric(QStringLiteral("z_loss_term")), outLogits);
        QCOMPARE(panel.plotForMetric(QStringLiteral("update_norm")),
                 panel.plotForMetric(QStringLiteral("grad_norm")));
        QCOMPARE(outLogits->graph(0)->dataCount(), 200);
        QCOMPARE(outLogits->graph(0)->data()->at(199)->value, 5.5 - 199 * 0.05);
        QCOMPARE(panel.plotForMetric(QStringLiteral("mu_norm")), outLogits);
        QCOMPARE(outLogits->graph(3)->data()->at(199)->value, 0.5 + 199 * 0.01);  // ||mu||
        QCOMPARE(outLogits->graph(4)->valueAxis(), outLogits->yAxis2);            // mean log Z^2
        // The first-token share is drawn on the entropy plot's right axis: a lesson naming it
        // shows that plot.
        QCOMPARE(panel.plotForMetric(QStringLiteral("first_token_share")),
                 panel.plotForMetric(QStringLiteral("entropy")));
        // One user event: a marker line and label on every plot; thresholds on the logit plot.
        for (QCustomPlot* p : panel.plots()) QVERIFY(p->itemCount() >= 2);
        QVERIFY(panel.logitPlot()->itemCount() >= 4);  // two lines; their names in the legend

        // Live rows already in the snapshot are not drawn twice.
        LiveBatch batch;
        batch.runId = m_runId;
        for (int s = 190; s < 250; ++s) {
            StepMetrics m;
            m.step = s;
            m.loss = 3;
            m.gradNorm = 1;
            batch.steps << m;
        }
        panel.appendBatch(batch);
        QCOMPARE(panel.lossPointCount(), 250);
        batch.runId = m_runId + 1;  // another run's batch is ignored
        panel.appendBatch(batch);
        QCOMPARE(panel.lossPointCount(), 250);

        // Hovering the spike marker explains it; clicking it asks every view to jump there.
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.replotNow();
        QCustomPlot* grad = panel.plots().at(1);
        grad->replot(QCustomPlot::rpImmediateRefresh);
        QCPGraph* spikes = grad->graph(1);
        QCOMPARE(spikes->dataCount(), 1);
        const QPoint at = spikes->coordsToPixels(120, 51).toPoint();
        QSignalSpy jumped(&panel, &LivePlotsPanel::stepSelected);
        QTest::mouseMove(grad, at);
        QTRY_VERIFY_WITH_TIMEOUT(QToolTip::isVisible(), 2000);
        QVERIFY2(QToolTip::text().contains(QStringLiteral("Spike at step 120")),
                 qPrintable(QToolTip::text()));
        QVERIFY(QToolTip::text().contains(QStringLiteral("q/k norms rose")));
        QTest::mouseClick(grad, Qt::LeftButton, {}, at);
        QCOMPARE(jumped.count(), 1);
        QCOMPARE(jumped.at(0).at(0).toLongLong(), qint64(120));
        panel.jumpToStep(120);
        QVERIFY(panel.lossPlot()->xAxis->range().contains(120));
    }

    void histogramPanelUsesTheStoredBins() {
        HistogramPanel panel;
        panel.resize(900, 700);
        panel.show();  // the heat map is only coloured while visible
        panel.setRun(m_runId, m_config, m_db);
        QTRY_COMPARE_WITH_TIMEOUT(panel.loadedSteps(), 40, 10000);
        auto* bars = qobject_cast<QCPBars*>(panel.histogramPlot()->plottable(0));
        QVERIFY(bars);
        QCOMPARE(bars->dataCount(), 32);  // one bar per stored bin, no rebinning
        const HistBins bins = histBinsOf(m_config.probes);
        QCOMPARE(bars->width(), bins.width());
        panel.jumpToStep(52);  // nearest probed step is 50
        double total = 0;
        for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it)
            total += it->value;
        QCOMPARE(total, 150.0);
        // Issue 11, items 5 and 9: no "step B" legend entry while the overlay is off, and the
        // view names its run.
        QCOMPARE(panel.runLabel(), QStringLiteral("Run %1").arg(m_runId));
        for (int i = 0; i < panel.histogramPlot()->legend->itemCount(); ++i) {
            auto* item =
                qobject_cast<QCPPlottableLegendItem*>(panel.histogramPlot()->legend->item(i));
            QVERIFY(item);
            QVERIFY2(!item->plottable()->name().contains(QStringLiteral("step B")) &&
                         !item->plottable()->name().contains(QStringLiteral("overlay")),
                     qPrintable(item->plottable()->name()));
        }
        // NaN logits are in no bin; the panel counts them beside under/overflow.
        auto* info = panel.findChild<QLabel*>(QStringLiteral("histInfo"));
        QVERIFY(info);
        QVERIFY2(info->text().contains(QStringLiteral("NaN 7")), qPrintable(info->text()));
        QVERIFY2(info->text().startsWith(QStringLiteral("208 logits counted")),
                 qPrintable(info->text()));  // 150 in bins + 1 under + 50 over + 7 NaN
        auto* map = qobject_cast<QCPColorMap*>(panel.heatMapPlot()->plottable(0));
        QVERIFY(map);
        QTRY_COMPARE_WITH_TIMEOUT(map->data()->keySize(), 40, 5000);
        QCOMPARE(map->data()->valueSize(), 32);
    }

    void attentionPanelShowsTheCollapse() {
        AttentionMapPanel panel;
        panel.setRun(m_runId, m_config, m_db, QStringLiteral("Run 1 “synthetic”"));
        QCOMPARE(panel.runLabel(), QStringLiteral("Run 1 “synthetic”"));
        QTRY_COMPARE_WITH_TIMEOUT(panel.stepCount(), 1, 10000);
        AttentionMap m;
        m.size = 2;
        m.weights = {1, 0, 0.5, 0.5};
        QCOMPARE(meanRowMax(m), 0.75);
        QVERIFY(std::fabs(meanRowEntropy(m) - std::log(2.0) / 2) < 1e-9);
        // Hover names both positions by their bytes (issue 11, item 10).
        m.tokens = std::string("a\n", 2);
        QCOMPARE(AttentionMapPanel::cellText(m, 1, 0),
                 QStringLiteral("query 1 '\\n' → key 0 'a'\nweight 0.5000"));
        QCOMPARE(AttentionMapPanel::byteLabel(0xc3), QStringLiteral("0xc3"));
        QCOMPARE(AttentionMapPanel::byteLabel(' '), QStringLiteral("' '"));
    }

    void spikesPanelListsAndJumps() {
        RunStore store(m_db.toStdString());
        SpikesPanel panel;
        panel.setSpikes(m_runId, store.spikes(m_runId));
        QCOMPARE(panel.rowCount(), 1);
        QSignalSpy jumped(&panel, &SpikesPanel::stepSelected);
        auto* table = panel.findChild<QTableWidget*>(QStringLiteral("spikeTable"));
        emit table->cellClicked(0, 0);
        QCOMPARE(jumped.count(), 1);
        QCOMPARE(jumped.at(0).at(0).toLongLong(), qint64(120));
        QVERIFY(SpikesPanel::tierText(3).contains(QStringLiteral("QK-norm")));
    }

    void exportsCsvAndPlots() {
        RunStore store(m_db.toStdString());
        const RunSnapshot snap = loadRunSnapshot(store, m_runId);
        const QString csv = m_dir.filePath(QStringLiteral("run.csv"));
        QString error;
        QVERIFY2(saveRunCsv(snap, csv, &error), qPrintable(error));
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = f.readAll().split('\n');
        QCOMPARE(lines.size(), 202);  // header + 200 rows + trailing newline
        QVERIFY(lines[0].startsWith("step,loss,val_loss"));
        for (const auto& c : probeColumns())  // every probe column, the raw q/k norms included
            QVERIFY(lines[0].contains(QByteArray("layer0_") + c.name));
        // Byte for byte what qklab-cli exports for the same run.
        const QString cliCsv = m_dir.filePath(QStringLiteral("cli.csv"));
        QProcess cli;
        cli.start(
            QString::fromUtf8(qklab::testpaths::cliPath()),
            {QStringLiteral("export"), QString::number(m_runId), QStringLiteral("--db"), m_db,
             QStringLiteral("--format"), QStringLiteral("csv"), QStringLiteral("-o"), cliCsv});
        QVERIFY(cli.waitForFinished(30000));
        QCOMPARE(cli.exitCode(), 0);
        QFile g(cliCsv);
        QVERIFY(g.open(QIODevice::ReadOnly));
        f.seek(0);
        QCOMPARE(f.readAll(), g.readAll());
        LivePlotsPanel panel;
        panel.resize(1000, 700);
        panel.showRun(snap);
        const QString png = m_dir.filePath(QStringLiteral("loss.png"));
        const QString pdf = m_dir.filePath(QStringLiteral("loss.pdf"));
        QVERIFY(savePlot(panel.lossPlot(), png, &error));
        QVERIFY(savePlot(panel.lossPlot(), pdf, &error));
        QVERIFY(QFile(png).size() > 1000);
        QVERIFY(QFile(pdf).size() > 500);
        QVERIFY(!savePlot(panel.lossPlot(), QStringLiteral("/nonexistent-dir/x.png"), &error));
        QVERIFY(!error.isEmpty());
    }

    void runListModelShowsKeySettings() {
        RunStore store(m_db.toStdString());
        RunListModel model;
        model.setRuns(store.listRuns());
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.data(model.index(0, RunListModel::columnOf("status")), Qt::DisplayRole)
                     .toString(),
                 QStringLiteral("finished"));
        QVERIFY(model
                    .data(model.index(0, RunListModel::columnOf(RunListModel::kSettingsColumn)),
                          Qt::DisplayRole)
                    .toString()
                    .contains(QStringLiteral("qk_norm=none")));
        // The loss a run is judged by is its latest validation (step 190: 3.2), not the last
        // training batch (step 199: 3.01), and each column says which one it shows.
        const auto cell = [&](const char* c) {
            return model.data(model.index(0, RunListModel::columnOf(c)), Qt::DisplayRole)
                .toString();
        };
        const auto header = [&](const char* c) {
            return model.headerData(RunListModel::columnOf(c), Qt::Horizontal, Qt::DisplayRole)
                .toString();
        };
        QCOMPARE(header("final_val_loss"), QStringLiteral("val loss"));
        QCOMPARE(cell("final_val_loss"), QStringLiteral("3.2000"));
        QCOMPARE(header("final_loss"), QStringLiteral("train loss"));
        QCOMPARE(cell("final_loss"), QStringLiteral("3.0100"));

        // Issue 11, item 5: QK-norm switched on mid-run shows as the change it made, and a
        // poll that brings a new intervention updates the row (the settings are cached;
        // interventions are only ever added).
        std::vector<RunInfo> runs = store.listRuns();
        runs[0].interventions.push_back({50, "qk_norm", R"({"variant":"rms"})", "user"});
        model.setRuns(runs);
        QVERIFY2(cell(RunListModel::kSettingsColumn)
                     .contains(QStringLiteral("qk_norm none\u2192rms @50")),
                 qPrintable(cell(RunListModel::kSettingsColumn)));
        runs[0].interventions.push_back({80, "softcap", R"({"cap":"tanh","c":30})", "user"});
        model.setRuns(runs);
        QVERIFY(cell(RunListModel::kSettingsColumn)
                    .contains(QStringLiteral("softcap none\u2192tanh C=30 @80")));
    }
};

QTEST_MAIN(PanelsTest)
#include "panels_test.moc"
#include "support/test_paths.h"
