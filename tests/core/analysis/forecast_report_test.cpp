// forecast_report_test.cpp — the score of forecasts against onsets
// (qklab/analysis/forecast_report.h), on hand-made runs: lead, ETA error, misses and why, false
// alarms per 10,000 steps, forecasts after the onset not scored.
#include "qklab/analysis/forecast_report.h"

#include <gtest/gtest.h>

using namespace qklab;

namespace {

Forecast at(int64_t step, int64_t predicted) {
    Forecast f;
    f.step = step;
    f.predictedStep = predicted;
    return f;
}

ScoredRun run(int64_t steps, std::optional<Onset> onset, std::vector<Forecast> forecasts) {
    ScoredRun r;
    r.steps = steps;
    r.onset = onset;
    r.forecasts = std::move(forecasts);
    r.label = "x";
    return r;
}

Onset onsetAt(int64_t step, OnsetKind kind) {
    Onset o;
    o.step = step;
    o.kind = kind;
    return o;
}

}  // namespace

TEST(ForecastReport, JudgesEachRun) {
    // Caught 60 ahead (40 + 150 covers 100), said 110: ETA error +10.
    const RunVerdict a = judgeRun(run(200, onsetAt(100, OnsetKind::MaxLogit), {at(40, 110)}));
    EXPECT_EQ(a.lead, 60);
    EXPECT_EQ(a.etaError, 10);
    EXPECT_EQ(a.falseAlarms, 0);
    EXPECT_EQ(a.scoredSteps, 100);
    // 2 ahead is not enough (kMinLeadSteps = 5).
    const RunVerdict b = judgeRun(run(200, onsetAt(50, OnsetKind::LossSpike), {at(48, 55)}));
    EXPECT_EQ(b.lead, -1);
    EXPECT_EQ(b.why, "forecast only 2 steps ahead");
    // A forecast whose window (100..250) ends before the onset is a false alarm; one after the
    // onset is not scored.
    const RunVerdict d =
        judgeRun(run(500, onsetAt(400, OnsetKind::MaxLogit), {at(100, 180), at(420, 430)}));
    EXPECT_EQ(d.lead, -1);
    EXPECT_EQ(d.falseAlarms, 1);
    EXPECT_EQ(d.why, "no forecast within 150 steps before the onset");
}

TEST(ForecastReport, ScoresTheSet) {
    const ForecastScore s = scoreForecasts({
        run(200, onsetAt(100, OnsetKind::MaxLogit), {at(40, 110)}),
        run(200, onsetAt(50, OnsetKind::LossSpike), {at(48, 55)}),
        run(1000, std::nullopt, {at(100, 200), at(500, 600)}),
        run(500, onsetAt(400, OnsetKind::MaxLogit), {at(100, 180)}),
    });
    EXPECT_EQ(s.runs, 4);
    EXPECT_EQ(s.onsets, 3);
    EXPECT_EQ(s.caught, 1);
    EXPECT_DOUBLE_EQ(s.recall, 1.0 / 3);
    EXPECT_EQ(s.byKind.at(OnsetKind::MaxLogit).onsets, 2);
    EXPECT_EQ(s.byKind.at(OnsetKind::MaxLogit).caught, 1);
    EXPECT_DOUBLE_EQ(s.byKind.at(OnsetKind::MaxLogit).median, 60);
    EXPECT_EQ(s.byKind.at(OnsetKind::LossSpike).caught, 0);
    // 3 false alarms in 100 + 50 + 1000 + 400 steps; 2 in the healthy run's 1000.
    EXPECT_EQ(s.falseAlarms, 3);
    EXPECT_EQ(s.scoredSteps, 1550);
    EXPECT_DOUBLE_EQ(s.falseAlarmsPer10k, 3e4 / 1550);
    EXPECT_DOUBLE_EQ(s.healthyFalseAlarmsPer10k, 20);
    EXPECT_DOUBLE_EQ(s.etaErrorMedian, 10);
    EXPECT_DOUBLE_EQ(s.etaRelErrorMedian, 10.0 / 60);
    ASSERT_EQ(s.misses.size(), 2u);
}
