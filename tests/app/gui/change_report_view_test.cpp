// change_report_view_test.cpp — what a change did, on its event's mark (issue 36, item 12): a
// stored run's event label adds the loss shift of its change report, and hovering the mark's
// line shows the whole report; a report that arrives in a live batch joins the label. The run is
// written with RunWriter so the numbers are known.
#include <qcustomplot.h>

#include <QTemporaryDir>
#include <QTest>
#include <QToolTip>

#include "common/plot_style.h"
#include "common/run_data.h"
#include "gui_test_util.h"
#include "live/live_plots_panel.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"

using namespace qklab;
using namespace qklab::gui;

namespace {

ChangeReport reportAt40() {
    ChangeReport r;
    r.step = 40;
    r.kind = "softcap";
    r.reportStep = 59;
    r.lossBefore = 1.8;
    r.lossAfter = 2.12;
    r.lossExpected = 1.8;
    r.lossZ = 4.1;
    r.entropyBefore = 2.44;
    r.entropyAfter = 0.055;
    r.maxLogitBefore = 30;
    r.maxLogitAfter = 606;
    r.moved = true;
    r.text = "step 40, Softcap: softcap tanh C=30\u2192tanh C=1000: over steps 40-59 ...";
    return r;
}

// The texts of the plot's event labels.
QStringList eventLabels(QCustomPlot* plot) {
    QStringList out;
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* t = qobject_cast<QCPItemText*>(plot->item(i)))
            if (t->property("qklabRole").toString() == QLatin1String("event"))
                out << t->text().trimmed().replace(QLatin1Char('\n'), QLatin1String(" / "));
    return out;
}

}  // namespace

class ChangeReportViewTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    int64_t m_runId = 0;
    QString m_db;

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("reports.db"));
        NewRun nr;
        nr.name = "cap removed";
        nr.configJson = configToJson(test::tinyConfig(100)).dump();
        RunWriter w(m_db.toStdString(), nr);
        for (int s = 0; s < 100; ++s) {
            StepMetrics m;
            m.step = s;
            m.loss = s < 40 ? 1.8 : 2.12;
            m.gradNorm = 1;
            w.addStep(m);
        }
        w.addEvent(EventRecord{40, "softcap", R"({"cap":"tanh","c":1000.0})", "config"});
        w.addEvent(EventRecord{70, "lr_multiplier", R"({"factor":0.5})", "config"});
        w.addChangeReport(reportAt40());
        w.finish(RunStatus::Finished);
        m_runId = w.runId();
    }

    void theMarkSaysWhatTheChangeDid() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        RunSnapshot snap = loadRunSnapshot(store, m_runId);
        QCOMPARE(int(snap.changeReports.size()), 1);
        LivePlotsPanel panel;
        panel.resize(1200, 800);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.showRun(std::move(snap));
        panel.replotNow();
        QCustomPlot* loss = panel.lossPlot();
        const QStringList labels = eventLabels(loss);
        QVERIFY2(labels.contains(QStringLiteral("softcap tanh C=1000 / loss +0.32 vs trend")),
                 qPrintable(labels.join(" | ")));
        // No report yet: the label alone.
        QVERIFY2(labels.contains(QString::fromUtf8("lr \u00d70.5")),
                 qPrintable(labels.join(" | ")));

        // Hovering the line shows the whole report; far from any mark, none.
        loss->replot(QCustomPlot::rpImmediateRefresh);
        const QPoint at(int(loss->xAxis->coordToPixel(40)), loss->axisRect()->center().y());
        QVERIFY(eventTipAt(loss, at).contains(QStringLiteral("over steps 40-59")));
        QVERIFY(eventTipAt(loss, at + QPoint(60, 0)).isEmpty());
        QTest::mouseMove(loss, at);
        QTRY_VERIFY_WITH_TIMEOUT(QToolTip::isVisible(), 2000);
        QVERIFY2(QToolTip::text().contains(QStringLiteral("softcap tanh C=30")),
                 qPrintable(QToolTip::text()));

        // A report that comes with a live batch joins its event's label.
        LiveBatch batch;
        batch.runId = m_runId;
        ChangeReport late = reportAt40();
        late.step = 70;
        late.kind = "lr_multiplier";
        late.lossAfter = 1.75;  // 0.05 under the trend's 1.8
        batch.changeReports << late;
        panel.appendBatch(batch);
        panel.replotNow();
        QVERIFY2(
            eventLabels(loss).contains(QString::fromUtf8("lr \u00d70.5 / loss -0.05 vs trend")),
            qPrintable(eventLabels(loss).join(" | ")));
    }
};

QTEST_MAIN(ChangeReportViewTest)
#include "change_report_view_test.moc"
