// qk_clip_view_test.cpp — QK-Clip in the app (issue 15): the clips of a stored run and of live
// batches are marked on the max-logit plot, one marker per clipped step at its largest S_max,
// and say what happened on hover; dense clips (763 of 1000 steps) are gathered into 4-px
// buckets drawn as a strip whose cells count their clips; a replay carries them; the
// comparison marks each run's clips and counts them in its summary. The run is written with
// RunWriter so the data are known.
#include <qcustomplot.h>

#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QToolTip>
#include <cmath>

#include "common/plot_cursor.h"
#include "common/qk_clip_marks.h"
#include "common/run_data.h"
#include "compare/compare_panel.h"
#include "compare/compare_plots.h"
#include "gui_test_util.h"
#include "lessons/replay_player.h"
#include "live/live_plots_panel.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"

using namespace qklab;
using namespace qklab::gui;

namespace {

constexpr double kTau = 100;

QkClip clip(int64_t step, int32_t layer, int32_t head, double sMax) {
    return QkClip{step, layer, head, sMax, std::sqrt(kTau / sMax)};
}

// The steps and values of the clip markers, in key order.
QVector<QPointF> points(const QCPGraph* g) {
    QVector<QPointF> out;
    if (!g) return out;
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
        out << QPointF(it->key, it->value);
    return out;
}

}  // namespace

class QkClipViewTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    QString m_db;
    int64_t m_clipped = 0, m_plain = 0;

    int64_t writeRun(const char* name, const std::vector<QkClip>& clips) {
        NewRun nr;
        nr.name = name;
        nr.configJson = configToJson(test::tinyConfig(100)).dump();
        RunWriter w(m_db.toStdString(), nr);
        for (int s = 0; s < 100; ++s) {
            StepMetrics m;
            m.step = s;
            m.loss = 5.0 - s * 0.01;
            m.gradNorm = 1;
            m.seqLen = 32;
            w.addStep(m);
            if (s % 5 == 0) {
                ProbeStats p;
                p.step = s;
                p.layer = 0;
                p.head = -1;
                p.logitMaxRaw = p.logitMaxCapped = 10.0 + s;
                w.addProbe(p);
            }
        }
        for (const QkClip& c : clips) w.addQkClip(c);
        w.finish(RunStatus::Finished);
        return w.runId();
    }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("clips.db"));
        // Step 40: two heads (layers 0 and 1); 41: one; 90: one.
        m_clipped = writeRun("clipped", {clip(40, 0, 0, 120), clip(40, 1, 2, 150),
                                         clip(41, 0, 1, 110), clip(90, 0, 0, 400)});
        m_plain = writeRun("plain", {});
    }

    void clipsAreGroupedByStep() {
        // Out of order and with a NaN: grouped by step, the NaN never hides a finite S_max.
        const auto steps = clipSteps({clip(9, 0, 0, 200),
                                      clip(3, 1, 0, 120),
                                      {3, 0, 1, std::nan(""), std::nan("")},
                                      clip(3, 0, 0, 400)});
        QCOMPARE(int(steps.size()), 2);
        QCOMPARE(steps[0].step, int64_t(3));
        QCOMPARE(steps[0].heads, 3);
        QCOMPARE(steps[0].maxSMax, 400.0);
        QCOMPARE(steps[0].minFactor, 0.5);  // sqrt(100 / 400)
        QCOMPARE(steps[1].heads, 1);
        const auto layer1 = clipSteps({clip(9, 0, 0, 200), clip(3, 1, 0, 120)}, 1);
        QCOMPARE(int(layer1.size()), 1);
        QCOMPARE(layer1[0].step, int64_t(3));
        QCOMPARE(clipText(steps[0]),
                 QStringLiteral("QK-Clip: 3 heads, S_max up to 400, factor 0.5"));
        QCOMPARE(clipText(steps[1]),
                 QStringLiteral("QK-Clip: 1 head, S_max up to 200, factor 0.7071"));
    }

    void storedRunMarksItsClipsOnTheLogitPlot() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        RunSnapshot snap = loadRunSnapshot(store, m_clipped);
        QCOMPARE(int(snap.clips.size()), 4);
        LivePlotsPanel panel;
        panel.resize(1200, 800);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.showRun(std::move(snap));
        QCPGraph* marks = panel.clipMarks().graph();
        QVERIFY(marks);
        QCOMPARE(marks->parentPlot(), panel.logitPlot());
        // One marker per clipped step, at its largest S_max.
        QCOMPARE(points(marks), (QVector<QPointF>{{40, 150}, {41, 110}, {90, 400}}));
        for (QCustomPlot* p : panel.plots())
            if (p != panel.logitPlot())
                for (int i = 0; i < p->graphCount(); ++i)
                    QVERIFY(!p->graph(i)->name().contains(QStringLiteral("QK-Clip")));

        // The readout at a clipped step says it in words; a step without clips does not.
        QCustomPlot* logits = panel.logitPlot();
        logits->replot(QCustomPlot::rpImmediateRefresh);
        const int y = logits->axisRect()->center().y();
        panel.hoverCursor()->hover(logits, QPoint(int(logits->xAxis->coordToPixel(40)), y));
        QString text = panel.hoverCursor()->lastText();
        QVERIFY2(text.contains(QStringLiteral("step 40")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("QK-Clip: 2 heads, S_max up to 150, factor 0.8165")),
                 qPrintable(text));
        panel.hoverCursor()->hover(logits, QPoint(int(logits->xAxis->coordToPixel(60)), y));
        text = panel.hoverCursor()->lastText();
        QVERIFY2(text.contains(QStringLiteral("step 60")), qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("QK-Clip")), qPrintable(text));

        // The marker explains itself on hover; a click asks every view to jump to its step.
        const QPoint at = marks->coordsToPixels(90, 400).toPoint();
        QSignalSpy jumped(&panel, &LivePlotsPanel::stepSelected);
        QTest::mouseMove(logits, at);
        QTRY_VERIFY_WITH_TIMEOUT(QToolTip::isVisible(), 2000);
        QVERIFY2(QToolTip::text().contains(QStringLiteral("after the update of step 90")),
                 qPrintable(QToolTip::text()));
        QVERIFY(QToolTip::text().contains(QStringLiteral("1 head, S_max up to 400, factor 0.5")));
        QTest::mouseClick(logits, Qt::LeftButton, {}, at);
        QCOMPARE(jumped.count(), 1);
        QCOMPARE(jumped.at(0).at(0).toLongLong(), qint64(90));

        // Against tokens seen the markers move with the curves: step s ends at (s + 1) x 4 x 32.
        panel.setXAxis(XAxisKind::Tokens);
        QCOMPARE(points(panel.clipMarks().graph()).front(), QPointF(41 * 128.0, 150));
    }

    void runWithoutClipsAddsNoMarkerGraph() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        LivePlotsPanel panel;
        panel.showRun(loadRunSnapshot(store, m_plain));
        QVERIFY(!panel.clipMarks().graph());
        const int plainGraphs = panel.logitPlot()->graphCount();
        for (int i = 0; i < plainGraphs; ++i)
            QVERIFY(!panel.logitPlot()->graph(i)->name().contains(QStringLiteral("QK-Clip")));
        // The same layer curves plus the markers; showing another run drops them again.
        panel.showRun(loadRunSnapshot(store, m_clipped));
        QVERIFY(panel.clipMarks().graph());
        QCOMPARE(panel.logitPlot()->graphCount(), plainGraphs + 1);
        panel.showRun(loadRunSnapshot(store, m_plain));
        QVERIFY(!panel.clipMarks().graph());
        QVERIFY(panel.clipMarks().steps().empty());
        QCOMPARE(panel.logitPlot()->graphCount(), plainGraphs);
    }

    void liveBatchesAddClipsOnceEach() {
        LivePlotsPanel panel;
        panel.startLive(77, test::tinyConfig(100), QStringLiteral("live"));
        LiveBatch batch;
        batch.runId = 77;
        for (int s = 0; s < 10; ++s) {
            StepMetrics m;
            m.step = s;
            m.loss = 3;
            m.gradNorm = 1;
            batch.steps << m;
        }
        batch.clips << clip(3, 0, 0, 130);
        panel.appendBatch(batch);
        QCOMPARE(points(panel.clipMarks().graph()), (QVector<QPointF>{{3, 130}}));
        // A later batch: more heads of step 3 (its marker rises to the new largest S_max) and
        // a new step 7; another run's batch is ignored.
        LiveBatch more;
        more.runId = 77;
        more.clips << clip(3, 1, 1, 250) << clip(7, 0, 1, 105);
        panel.appendBatch(more);
        more.runId = 78;
        more.clips = {clip(8, 0, 0, 999)};
        panel.appendBatch(more);
        QCOMPARE(points(panel.clipMarks().graph()), (QVector<QPointF>{{3, 250}, {7, 105}}));
        QCOMPARE(panel.clipMarks().atStep(3)->heads, 2);
        QCOMPARE(panel.clipMarks().atStep(3)->minFactor, std::sqrt(kTau / 250));
        QCOMPARE(int(panel.run().clips.size()), 3);

        // A stored snapshot of the training run, then live batches that repeat its last
        // clipped step: what the snapshot holds is not marked twice.
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        panel.showRun(loadRunSnapshot(store, m_clipped));
        LiveBatch late;
        late.runId = m_clipped;
        late.clips << clip(90, 0, 0, 400) << clip(95, 1, 0, 300);
        panel.appendBatch(late);
        QCOMPARE(panel.clipMarks().atStep(90)->heads, 1);
        QCOMPARE(panel.clipMarks().atStep(95)->maxSMax, 300.0);
        QCOMPARE(panel.clipMarks().graph()->dataCount(), 4);
    }

    // 763 clipped steps of 1000 (a low tau) on a 600 px axis rect: buckets of 4 px, 150 of
    // them at most, drawn as a strip; each counts the clips it covers. Zoomed in, markers again.
    void denseClipsAreAggregatedIntoBuckets() {
        QCustomPlot plot;
        plot.resize(600, 300);
        plot.axisRect()->setAutoMargins(QCP::msNone);
        plot.axisRect()->setMargins(QMargins(0, 0, 0, 0));
        plot.show();
        QVERIFY(QTest::qWaitForWindowExposed(&plot));
        std::vector<QkClip> clips;
        for (int64_t s = 0; s < 1000; ++s)  // evenly spread: step s when floor(0.763 s) grows
            if ((s + 1) * 763 / 1000 > s * 763 / 1000) clips.push_back(clip(s, 0, 0, 101 + s % 7));
        QCOMPARE(int(clips.size()), 763);
        QkClipMarks marks(&plot);
        const auto x = [](double step) { return step; };
        marks.set(clips, x);
        plot.xAxis->setRange(0, 1000);
        plot.replot(QCustomPlot::rpImmediateRefresh);
        QCOMPARE(plot.axisRect()->width(), 600);
        QVERIFY(marks.aggregated());
        QVERIFY2(marks.marks().size() <= 150, qPrintable(QString::number(marks.marks().size())));
        QCOMPARE(marks.graph()->dataCount(), 0);  // no markers: the strip says it
        QVERIFY(marks.graph()->name().contains(QStringLiteral("strip")));
        int steps = 0, heads = 0;
        for (const ClipMark& m : marks.marks()) steps += m.steps, heads += m.summary.heads;
        QCOMPARE(steps, 763);  // every clip in exactly one bucket
        QCOMPARE(heads, 763);
        // Bucket 0 is x in [0, 6.67): steps 1, 2, 3, 5, 6 clipped (not 0 or 4); S_max 102, 103,
        // 104, 106, 107; the largest at step 6.
        const int bottom = plot.axisRect()->rect().bottom();
        const ClipMark* first = marks.hit(QPoint(int(plot.xAxis->coordToPixel(3.3)), bottom - 2));
        QVERIFY(first);
        QCOMPARE(first->steps, 5);
        QCOMPARE(first->firstStep, int64_t(1));
        QCOMPARE(first->lastStep, int64_t(6));
        QCOMPARE(first->summary.step, int64_t(6));
        const QString html = clipMarkHtml(*first);
        QVERIFY2(html.contains(QStringLiteral("QK-Clip at 5 steps, 1–6")) &&
                     html.contains(QStringLiteral("5 head clips")) &&
                     html.contains(QStringLiteral("S_max up to 107 at step 6")),
                 qPrintable(html));
        // The strip sits at the bottom: the middle of the plot is no mark.
        QVERIFY(!marks.hit(QPoint(int(plot.xAxis->coordToPixel(3.3)), 150)));
        // Zoomed to 100 steps (77 clipped, < 600 / 4): one marker per step, as before.
        plot.xAxis->setRange(0, 100);
        plot.replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(!marks.aggregated());
        QCOMPARE(int(marks.marks().size()), 763);
        QCOMPARE(marks.graph()->name(), QStringLiteral("QK-Clip (hover)"));
        QCOMPARE(marks.graph()->dataCount(), 763);
        QCOMPARE(marks.hit(marks.graph()->coordsToPixels(6, 107).toPoint())->summary.step,
                 int64_t(6));
    }

    // A few clips are drawn one marker each; the live plot's strip cell answers a hover and
    // a click like a marker does.
    void sparseClipsKeepTheirMarkersAndDenseOnesHoverInThePanel() {
        QCustomPlot plot;
        plot.resize(600, 300);
        QkClipMarks few(&plot);
        few.set({clip(10, 0, 0, 120), clip(200, 0, 0, 130), clip(400, 1, 0, 140),
                 clip(600, 0, 1, 150), clip(990, 0, 0, 160)},
                [](double step) { return step; });
        plot.xAxis->setRange(0, 1000);
        plot.replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(!few.aggregated());
        QCOMPARE(few.graph()->dataCount(), 5);
        QCOMPARE(int(few.marks().size()), 5);

        LivePlotsPanel panel;
        panel.resize(1200, 800);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.startLive(78, test::tinyConfig(1000), QStringLiteral("dense"));
        LiveBatch batch;
        batch.runId = 78;
        for (int s = 0; s < 1000; ++s) {
            StepMetrics m;
            m.step = s;
            m.loss = 3;
            m.gradNorm = 1;
            batch.steps << m;
            batch.clips << clip(s, 0, 0, 110);
        }
        panel.appendBatch(batch);
        QCustomPlot* logits = panel.logitPlot();
        QTRY_VERIFY(panel.clipMarks().aggregated());
        const int width = logits->axisRect()->width();
        QVERIFY(int(panel.clipMarks().marks().size()) <= width / kClipBucketPixels + 1);
        const ClipMark& mark = panel.clipMarks().marks()[10];
        const double middle = (mark.xLo + mark.xHi) / 2;
        const QPoint at(int(logits->xAxis->coordToPixel(middle)),
                        logits->axisRect()->rect().bottom() - 2);
        QSignalSpy jumped(&panel, &LivePlotsPanel::stepSelected);
        QTest::mouseMove(logits, at);
        QTRY_VERIFY_WITH_TIMEOUT(QToolTip::isVisible(), 2000);
        QVERIFY2(QToolTip::text().contains(QStringLiteral("QK-Clip at %1 steps").arg(mark.steps)),
                 qPrintable(QToolTip::text()));
        QTest::mouseClick(logits, Qt::LeftButton, {}, at);
        QCOMPARE(jumped.count(), 1);
        QCOMPARE(jumped.at(0).at(0).toLongLong(), qint64(mark.summary.step));
    }

    // A replay brings each step's clips with that step's frame.
    void replayCarriesTheClips() {
        ReplayPlayer player;
        player.load(m_db, m_clipped);
        QSignalSpy batches(&player, &ReplayPlayer::batchReady);
        player.seek(40);
        std::vector<int64_t> steps;
        for (const QList<QVariant>& args : batches)
            for (const QkClip& c : args.at(0).value<LiveBatch>().clips) steps.push_back(c.step);
        QCOMPARE(steps, (std::vector<int64_t>{40, 40}));  // up to step 40: its two heads
    }

    void comparisonMarksAndCountsEachRunsClips() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        ComparePanel panel;
        panel.resize(1400, 900);
        panel.setComparison(loadComparison(store, {m_clipped, m_plain}));
        QCustomPlot* maxLogit = panel.plots()->plotOf(CompareMetric::MaxLogit);
        QList<QCPGraph*> marks;
        for (int i = 0; i < maxLogit->graphCount(); ++i)
            if (maxLogit->graph(i)->property("qkClips").toBool()) marks << maxLogit->graph(i);
        QCOMPARE(marks.size(), 1);  // the plain run has none
        QCOMPARE(points(marks[0]), (QVector<QPointF>{{40, 150}, {41, 110}, {90, 400}}));
        // Layer 1 alone: only its clip at step 40.
        panel.plots()->setLayer(1);
        marks.clear();
        for (int i = 0; i < maxLogit->graphCount(); ++i)
            if (maxLogit->graph(i)->property("qkClips").toBool()) marks << maxLogit->graph(i);
        QCOMPARE(marks.size(), 1);
        QCOMPARE(points(marks[0]), (QVector<QPointF>{{40, 150}}));

        QTableWidget* table = panel.summaryTable();
        int column = -1;
        for (int c = 0; c < table->columnCount(); ++c)
            if (table->horizontalHeaderItem(c)->text() == QStringLiteral("QK clips")) column = c;
        QVERIFY(column > 0);
        QStringList counts;
        for (int r = 0; r < table->rowCount(); ++r) counts << table->item(r, column)->text();
        counts.sort();
        QCOMPARE(counts, (QStringList{QStringLiteral("0"), QStringLiteral("4")}));
    }
};

QTEST_MAIN(QkClipViewTest)
#include "qk_clip_view_test.moc"
