// forecast_view_test.cpp — the forecast where users look (issue 40, item 2): for a stored run
// with a forecast row, the line above the live plots says what came of it, the raw max logit
// plot draws the predicted crossing as a dashed line from the forecast's point to the threshold
// at the predicted step, and the Spikes view lists it beside the onset that followed; live
// batches count the line down and say when the horizon passed. The run is written with
// RunWriter, so every number is known.
#include "live/forecast_view.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "common/run_data.h"
#include "gui_test_util.h"
#include "lessons/replay_player.h"
#include "live/live_plots_panel.h"
#include "live/spikes_panel.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"

using namespace qklab;
using namespace qklab::gui;

namespace {

// Layer 1's raw max logit, probed every 10 steps from step 80: it passes 30 at step 130.
constexpr double kLayer1[] = {12, 15, 18, 22, 27, 33, 40};

Forecast forecastAt100() {
    Forecast f;
    f.step = 100;
    f.layer = 1;
    f.metric = "logit_max_raw";
    f.value = 18;
    f.threshold = 30;
    f.rate = 0.0142;
    f.predictedStep = 136;
    f.text = "at this rate the raw max logit of layer 1 passes 30 in about 36 steps";
    return f;
}

StepMetrics stepAt(int64_t s) {
    StepMetrics m;
    m.step = s;
    m.loss = 2.0 + 0.01 * double(s % 3);  // calm: no loss spike
    m.gradNorm = 1.0 + 0.01 * double(s % 2);
    m.tokensPerSec = 1000;
    return m;
}

ProbeStats probeAt(int64_t step, int32_t layer, double maxRaw) {
    ProbeStats p;
    p.step = step;
    p.layer = layer;
    p.head = -1;
    p.logitMaxRaw = p.logitMaxCapped = maxRaw;
    p.logitP99Raw = maxRaw / 2;
    p.entropy = 2;
    p.qRawNormP90 = p.kRawNormP90 = p.qNormP90 = p.kNormP90 = 3;
    return p;
}

QCPItemLine* forecastItem(QCustomPlot* plot) {
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* line = qobject_cast<QCPItemLine*>(plot->item(i)))
            if (line->property("qklabRole").toString() == QLatin1String("forecast")) return line;
    return nullptr;
}

}  // namespace

class ForecastViewTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    int64_t m_runId = 0;
    QString m_db;

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("forecast.db"));
        NewRun nr;
        nr.name = "blow-up";
        nr.configJson = configToJson(test::tinyConfig(200)).dump();
        RunWriter w(m_db.toStdString(), nr);
        for (int64_t s = 0; s < 200; ++s) w.addStep(stepAt(s));
        for (int i = 0; i < 7; ++i) {
            w.addProbe(probeAt(80 + 10 * i, 0, 5));
            w.addProbe(probeAt(80 + 10 * i, 1, kLayer1[i]));
        }
        w.addForecast(forecastAt100());
        w.finish(RunStatus::Finished);
        m_runId = w.runId();
    }

    void aStoredForecastShowsWhatCameOfIt() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        RunSnapshot snap = loadRunSnapshot(store, m_runId);
        QCOMPARE(int(snap.forecasts.size()), 1);
        LivePlotsPanel panel;
        panel.resize(1200, 800);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.showRun(std::move(snap));
        panel.replotNow();
        QCOMPARE(panel.forecastText(),
                 QStringLiteral("Forecast at step 100 (the raw max logit of layer 1 passes 30 at "
                                "step 136) came true: the raw max logit of layer 1 passed the "
                                "line (33) at step 130, 30 steps later"));

        // The dashed extension of the raw max logit curve: (100, 18) to (136, 30).
        QCPItemLine* line = forecastItem(panel.logitPlot());
        QVERIFY(line);
        QCOMPARE(line->start->coords(), QPointF(100, 18));
        QCOMPARE(line->end->coords(), QPointF(136, 30));
        QCOMPARE(line->pen().style(), Qt::DashLine);

        // The Spikes view's timeline: the forecast beside the onset that followed.
        SpikesPanel spikes;
        spikes.setSpikes(m_runId, {});
        spikes.setForecasts(m_runId, panel.run().forecasts, panel.onsets(), panel.latestStep());
        QCOMPARE(spikes.forecastsText().section(QStringLiteral("<br>• "), 1),
                 QStringLiteral("<a href=\"step:100\">step 100</a>: the raw max logit of layer 1 "
                                "passes 30 at about step 136 → came true: the raw max logit of "
                                "layer 1 passed the line (33) at <a href=\"step:130\">step "
                                "130</a>, 30 steps later"));
    }

    // A replay carries the stored forecast in the batch of its step, and a lesson's "forecast"
    // condition pauses the replay right there.
    void aReplayPausesOnTheStoredForecast() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        ReplayPlayer player;
        player.setRun(loadRunSnapshot(store, m_runId));
        player.setStepsPerSecond(1000);
        PauseCondition onForecast;
        onForecast.kind = "forecast";
        onForecast.callout = "What happens next?";
        player.setPauseConditions({onForecast});
        QVector<Forecast> carried;
        int64_t lastStep = -1;
        connect(&player, &ReplayPlayer::batchReady, this, [&](const LiveBatch& b) {
            carried += b.forecasts;
            if (!b.steps.isEmpty()) lastStep = b.steps.back().step;
        });
        QSignalSpy callouts(&player, &ReplayPlayer::calloutFired);
        player.play();
        player.advance(10.0);  // 200 steps at 1000/s: due, but the condition stops at step 100
        QCOMPARE(callouts.count(), 1);
        const auto callout = callouts.at(0).at(1).value<Callout>();
        QCOMPARE(callout.step, int64_t(100));
        QCOMPARE(lastStep, int64_t(100));
        QCOMPARE(carried.size(), 1);
        QCOMPARE(carried[0].predictedStep, int64_t(136));
    }

    void liveBatchesCountDownThenCloseTheHorizon() {
        LivePlotsPanel panel;
        panel.startLive(7, test::tinyConfig(300), QStringLiteral("live"));
        QVERIFY(panel.forecastText().isEmpty());
        LiveBatch batch;
        batch.runId = 7;
        for (int64_t s = 0; s <= 110; ++s) batch.steps << stepAt(s);
        for (int i = 0; i < 3; ++i) batch.probes << probeAt(80 + 10 * i, 1, kLayer1[i]);
        batch.forecasts << forecastAt100();
        panel.appendBatch(batch);
        QCOMPARE(panel.forecastText(),
                 QStringLiteral("Forecast: at this rate the raw max logit of layer 1 passes 30 in "
                                "about 26 steps — step 136"));
        panel.replotNow();
        QVERIFY(forecastItem(panel.logitPlot()));

        // Ten steps on, ten fewer to go.
        batch = LiveBatch{};
        batch.runId = 7;
        for (int64_t s = 111; s <= 120; ++s) batch.steps << stepAt(s);
        panel.appendBatch(batch);
        QCOMPARE(panel.forecastText(),
                 QStringLiteral("Forecast: at this rate the raw max logit of layer 1 passes 30 in "
                                "about 16 steps — step 136"));

        // The logits level off: past step 250 (100 + the 150-step horizon) it was a false alarm.
        batch = LiveBatch{};
        batch.runId = 7;
        for (int64_t s = 121; s <= 251; ++s) batch.steps << stepAt(s);
        batch.probes << probeAt(200, 1, 18);
        panel.appendBatch(batch);
        QCOMPARE(panel.forecastText(),
                 QStringLiteral("Forecast at step 100 (the raw max logit of layer 1 passes 30 at "
                                "step 136): its horizon, step 250, passed with no onset"));
    }

    // "came true" only for what the forecast named (its layer's raw max logit); another
    // layer's crossing or a loss spike in its horizon "followed" it. And a crossing due now
    // says so (it read "0 steps ago, not yet").
    void onlyTheNamedLayersCrossingCameTrue() {
        const Forecast f = forecastAt100();  // layer 1, predicted step 136
        Onset other;
        other.step = 120;
        other.kind = OnsetKind::MaxLogit;
        other.layer = 0;
        other.value = 31;
        const ForecastOutcome byOther = forecastOutcome(f, {other}, 130);
        QCOMPARE(forecastLineText(f, byOther, 130),
                 QStringLiteral("Forecast at step 100 (the raw max logit of layer 1 passes 30 at "
                                "step 136) was followed by the raw max logit of layer 0 passed "
                                "the line (31) at step 120, 20 steps later"));
        Onset spike;
        spike.step = 110;
        spike.kind = OnsetKind::LossSpike;
        spike.value = 8.5;
        QVERIFY(forecastLineText(f, forecastOutcome(f, {spike}, 130), 130)
                    .contains(QStringLiteral(") was followed by a loss spike (8.5) at step 110")));
        other.layer = 1;
        QVERIFY(forecastLineText(f, forecastOutcome(f, {other}, 130), 130)
                    .contains(QStringLiteral(") came true: the raw max logit of layer 1")));
        QCOMPARE(forecastLineText(f, forecastOutcome(f, {}, 136), 136),
                 QStringLiteral("Forecast: the raw max logit of layer 1 was to pass 30 by step "
                                "136; not yet (due now)"));
        QCOMPARE(forecastLineText(f, forecastOutcome(f, {}, 140), 140),
                 QStringLiteral("Forecast: the raw max logit of layer 1 was to pass 30 by step "
                                "136; not yet (4 steps overdue)"));
    }
};

QTEST_MAIN(ForecastViewTest)
#include "forecast_view_test.moc"
