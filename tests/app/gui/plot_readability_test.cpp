// plot_readability_test.cpp — issue 37's plot items: no label box covers a data point
// (thresholds are legend entries), a lesson step's plots apply to Compare and are readable in
// presenter mode at 1024x768 and 1280x720 with the summary table uncut, the heat map's tick
// labels do not stack and its threshold numbers sit on its right axis, runs without QK-norm are
// not drawn at alpha 0, and the LM head's series say so.
#include <QHeaderView>
#include <QSet>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>

#include "common/plot_style.h"
#include "common/theme.h"
#include "compare/compare_panel.h"
#include "compare/compare_plots.h"
#include "lesson_test_util.h"
#include "live/histogram_panel.h"
#include "live/live_plots_panel.h"
#include "qcustomplot.h"
#include "shell/main_window.h"
#include "shell/presenter_mode.h"

using namespace qklab;
using namespace qklab::gui;

namespace {

// A QK-normed run whose layer-0 max logit runs just under 20 and layer 1's just under
// sqrt(d_head) = 4 up to its last step: right under both labels of the old boxed design.
RunSnapshot nearThresholds() {
    RunSnapshot s;
    s.runId = s.info.id = 1;
    s.info.name = "near";
    s.config = test::tinyConfig(100);
    s.config.model.nLayers = 2;
    s.config.attention.qkNorm = QkNormVariant::Rms;
    for (int step = 0; step < 100; ++step) {
        StepMetrics m;
        m.step = step;
        m.loss = 4.0 - step / 100.0;
        m.gradNorm = 1;
        m.lr = 1e-3;
        s.steps.push_back(m);
        for (int layer = 0; layer < 2; ++layer) {
            ProbeStats p;
            p.step = step;
            p.layer = layer;
            p.head = -1;
            p.logitMaxRaw = (layer == 0 ? 19.6 : 3.9) - 0.05 * (step % 3);
            p.logitMaxCapped = p.logitMaxRaw;
            p.logitP99Raw = 1.0;
            p.entropy = 2.0;
            s.probes.push_back(p);
        }
    }
    return s;
}

QString titleOf(QCustomPlot* plot) {
    auto* t = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0));
    return t ? t->text() : QString();
}

}  // namespace

class PlotReadabilityTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QCoreApplication::setOrganizationName(QStringLiteral("qklab-tests"));
        QVERIFY(m_dir.isValid());
    }

    // Item 3: the threshold labels ("healthy max < 20", "QK-norm bound √d_head") covered the
    // curves at the plot's right edge; as legend entries outside the axis rect they cannot.
    void thresholdLabelsCoverNoData() {
        for (const QSize size : {QSize(1000, 700), QSize(640, 480)}) {
            LivePlotsPanel panel;
            panel.resize(size);
            panel.show();
            panel.showRun(nearThresholds());
            QCustomPlot* logits = panel.logitPlot();
            logits->replot();
            QVERIFY(logits->graphCount() >= 2);
            const QList<QRectF> covering = labelBoxesCoveringData(logits);
            QVERIFY2(covering.isEmpty(),
                     qPrintable(QStringLiteral("%1 label box(es) cover data, the first at %2,%3")
                                    .arg(covering.size())
                                    .arg(covering.value(0).x())
                                    .arg(covering.value(0).y())));
            // The three thresholds are named in the legend, beside the series.
            int thresholds = 0;  // itemCount() counts the grid's cells, some empty
            for (int i = 0; i < logits->legend->itemCount(); ++i)
                if (QCPAbstractLegendItem* item = logits->legend->item(i))
                    thresholds += qobject_cast<QCPPlottableLegendItem*>(item) ? 0 : 1;
            QCOMPARE(thresholds, 3);
            for (QCustomPlot* p : panel.plots()) QVERIFY(labelBoxesCoveringData(p).isEmpty());
        }
    }

    // The helper itself: a boxed label over a point is found, one beside it is not.
    void labelBoxesCoveringDataFindsABoxOverAPoint() {
        QCustomPlot plot;
        plot.resize(400, 300);
        QCPGraph* g = plot.addGraph();
        g->setData({0, 1, 2}, {0, 1, 2});
        plot.xAxis->setRange(-1, 3);
        plot.yAxis->setRange(-1, 3);
        auto* text = new QCPItemText(&plot);
        text->position->setCoords(1, 1);
        text->setText(QStringLiteral("over the point"));
        text->setBrush(Qt::white);
        plot.replot();
        QCOMPARE(labelBoxesCoveringData(&plot).size(), 1);
        text->position->setCoords(2, 0);  // below the curve's points
        plot.replot();
        QVERIFY(labelBoxesCoveringData(&plot).isEmpty());
        text->setBrush(Qt::NoBrush);  // no box, nothing hidden
        text->position->setCoords(1, 1);
        plot.replot();
        QVERIFY(labelBoxesCoveringData(&plot).isEmpty());
    }

    // Item 4: a lesson step's plots apply to Compare in presenter mode, each readable, every
    // title whole, the summary table uncut at the right.
    void compareShowsTheLessonPlotsReadably() {
        const QString db = m_dir.filePath(QStringLiteral("compare.db"));
        const int64_t a = test::writeKnownRun(db, "lesson-blowup-healthy", 60);
        const int64_t b = test::writeKnownRun(db, "lesson-blowup", 60);
        MainWindow w;
        w.setQuiet(true);
        w.show();
        QVERIFY(w.openDatabase(db));
        w.part<PresenterMode>()->setActive(true);
        QSignalSpy opened(&w, &MainWindow::comparisonOpened);
        w.compareRuns({a, b});
        QVERIFY(opened.wait(10000));
        const QStringList lesson{QStringLiteral("loss"), QStringLiteral("q_raw_norm_p90"),
                                 QStringLiteral("logit_max_raw"), QStringLiteral("entropy")};
        w.setLessonPlots(lesson);
        w.showTab(QStringLiteral("compare"));
        auto* compare = w.part<ComparePanel>();
        ComparePlots* plots = compare->plots();
        const QList<QCustomPlot*> want = {
            plots->plotOf(CompareMetric::TrainLoss), plots->plotOf(CompareMetric::MaxLogit),
            plots->plotOf(CompareMetric::QNorm), plots->plotOf(CompareMetric::Entropy)};
        QCOMPARE(plots->shownPlots(), want);
        for (const QSize screen : {QSize(1024, 768), QSize(1280, 720)}) {
            w.setGeometry(QRect(QPoint(0, 0), screen));
            QTRY_COMPARE(w.size(), screen);
            QCoreApplication::processEvents();
            const QString where = QStringLiteral("%1x%2").arg(screen.width()).arg(screen.height());
            for (QCustomPlot* p : plots->plots()) {
                QCOMPARE(p->isVisible(), want.contains(p));
                if (!p->isVisible()) continue;
                p->replot();
                QVERIFY2(
                    p->height() >= 150,
                    qPrintable(where +
                               QStringLiteral(" %1: %2 px high").arg(titleOf(p)).arg(p->height())));
                auto* title = qobject_cast<QCPTextElement*>(p->plotLayout()->element(0, 0));
                for (const QString& line : title->text().split(QLatin1Char('\n')))
                    QVERIFY2(QFontMetrics(title->font()).horizontalAdvance(line) <= p->width(),
                             qPrintable(where + QStringLiteral(" title cut: ") + line));
            }
            QTableWidget* summary = compare->summaryTable();
            QVERIFY2(summary->horizontalHeader()->length() <= summary->viewport()->width(),
                     qPrintable(where + QStringLiteral(" summary %1 px in %2")
                                            .arg(summary->horizontalHeader()->length())
                                            .arg(summary->viewport()->width())));
        }
        // As a list in presenter mode: a row per summary column, a column per run, each run's
        // values where the table's own columns had them.
        QTableWidget* summary = compare->summaryTable();
        QCOMPARE(summary->columnCount(), 2);
        QCOMPARE(summary->rowCount(), int(summaryColumns().size()));
        QCOMPARE(summary->verticalHeaderItem(1)->text(), QStringLiteral("steps"));
        QCOMPARE(summary->item(1, 0)->text(), QStringLiteral("60"));
        // Leaving presenter mode: all the plots and the everyday table again.
        w.part<PresenterMode>()->setActive(false);
        QCOMPARE(plots->shownPlots().size(), int(compareMetrics().size()));
        QCOMPARE(summary->rowCount(), 2);
        QCOMPARE(summary->item(0, 0)->text(), QStringLiteral("%1 lesson-blowup-healthy").arg(a));
    }

    // Item 4, small: a run without QK-norm stores alpha 0; Compare says "no QK-norm" instead of
    // drawing it on the x axis, and draws the QK-normed run's alpha as stored.
    void alphaOfARunWithoutQkNormIsNotDrawn() {
        Comparison c;
        for (const bool normed : {false, true}) {
            CompareRun r;
            r.snap.runId = r.snap.info.id = normed ? 2 : 1;
            r.snap.info.name = normed ? "normed" : "plain";
            r.snap.config = test::tinyConfig(10);
            r.snap.config.attention.qkNorm = normed ? QkNormVariant::Rms : QkNormVariant::None;
            for (int s = 0; s < 10; ++s) {
                StepMetrics m;
                m.step = s;
                m.loss = 3;
                m.alpha = normed ? 1.0 : 0.0;
                r.snap.steps.push_back(m);
            }
            c.runs.push_back(std::move(r));
        }
        ComparePanel panel;
        panel.setComparison(std::move(c));
        QCustomPlot* alpha = panel.plots()->plotOf(CompareMetric::Alpha);
        int points = 0;
        for (int i = 0; i < alpha->graphCount(); ++i) {
            QCOMPARE(alpha->graph(i)->property("runIndex").toULongLong(), 1ULL);  // normed only
            for (const QCPGraphData& d : *alpha->graph(i)->data()) {
                QCOMPARE(d.value, 1.0);
                ++points;
            }
        }
        QCOMPARE(points, 10);
        const QString title = titleOf(alpha).replace(QLatin1Char('\n'), QLatin1Char(' '));
        QVERIFY2(title.contains(QStringLiteral("no QK-norm (not drawn): 1 plain")),
                 qPrintable(title));
        // The loss plot draws both runs.
        QCustomPlot* loss = panel.plots()->plotOf(CompareMetric::TrainLoss);
        QSet<qulonglong> drawn;
        for (int i = 0; i < loss->graphCount(); ++i)
            if (loss->graph(i)->dataCount() > 0)
                drawn << loss->graph(i)->property("runIndex").toULongLong();
        QCOMPARE(drawn, (QSet<qulonglong>{0, 1}));
        // Three such runs are named by their ids: their labels took more lines than the title
        // row holds.
        Comparison three;
        for (int64_t id : {3, 5, 8}) {
            CompareRun r;
            r.snap.runId = r.snap.info.id = id;
            r.snap.info.name = "lesson-fuses-a-long-name";
            r.snap.config = test::tinyConfig(10);
            three.runs.push_back(std::move(r));
        }
        panel.setComparison(std::move(three));
        QCOMPARE(titleOf(panel.plots()->plotOf(CompareMetric::Alpha))
                     .replace(QLatin1Char('\n'), QLatin1Char(' ')),
                 QStringLiteral("QK-norm alpha no QK-norm: 3, 5, 8"));
    }

    // Item 3, small: a short heat map keeps its y tick labels apart, and names its threshold
    // lines on its right axis (between the map and the colour scale), not with items on it.
    void heatMapTicksAreApartAndThresholdsOnTheRightAxis() {
        const QString db = m_dir.filePath(QStringLiteral("heat.db"));
        const int64_t run = test::writeKnownRun(db, "heat", 20);
        RunConfig c = test::tinyConfig(20);
        c.probes.histScale = HistScale::Symlog;
        c.probes.histMin = -6;
        c.probes.histMax = 6;
        HistogramPanel panel;
        panel.resize(600, 420);
        panel.show();
        panel.setRun(run, c, db, QStringLiteral("heat"));
        QCustomPlot* heat = panel.heatMapPlot();
        heat->yAxis->setRange(-6, 6);
        heat->replot();
        heat->replot();  // the ticker spaces its labels on the layout of the last replot
        QVERIFY(heat->axisRect()->height() < 260);
        const QVector<double> ticks = heat->yAxis->tickVector();
        QVERIFY(ticks.size() >= 3);
        const double gap = QFontMetrics(heat->yAxis->tickLabelFont()).height();
        for (int i = 1; i < ticks.size(); ++i)
            QVERIFY2(std::fabs(heat->yAxis->coordToPixel(ticks[i]) -
                               heat->yAxis->coordToPixel(ticks[i - 1])) >= gap,
                     qPrintable(QStringLiteral("ticks %1 and %2 overlap")
                                    .arg(heat->yAxis->tickVectorLabels().value(i - 1),
                                         heat->yAxis->tickVectorLabels().value(i))));
        // The right axis names every threshold line, 20 and 30 sharing a label when close.
        QVERIFY(heat->yAxis2->visible());
        const QVector<double> right = heat->yAxis2->tickVector();
        for (int i = 1; i < right.size(); ++i)
            QVERIFY(std::fabs(heat->yAxis2->coordToPixel(right[i]) -
                              heat->yAxis2->coordToPixel(right[i - 1])) >= gap);
        QStringList named;
        for (const QString& label : heat->yAxis2->tickVectorLabels())
            named << label.split(QLatin1Char('/'));
        named.sort();
        QCOMPARE(named, (QStringList{QStringLiteral("-20"), QStringLiteral("-30"),
                                     QStringLiteral("20"), QStringLiteral("30")}));
        for (int i = 0; i < heat->itemCount(); ++i)
            QVERIFY(!qobject_cast<QCPItemText*>(heat->item(i)));
    }

    // Item 5: the LM head's max logit and mean (log Z)^2 are named as what they are.
    void outputLogitSeriesNamePlainly() {
        LivePlotsPanel panel;
        QCustomPlot* out = panel.plotForMetric(QStringLiteral("out_logit_max"));
        QStringList names;
        for (int i = 0; i < out->graphCount(); ++i) names << out->graph(i)->name();
        QVERIFY2(names.contains(QStringLiteral("LM-head max logit")), qPrintable(names.join('|')));
        QVERIFY(!names.contains(QStringLiteral("max logit")));
        QCOMPARE(out->yAxis2->label(), QStringLiteral("mean (log Z)²"));
    }
};

QTEST_MAIN(PlotReadabilityTest)
#include "plot_readability_test.moc"
