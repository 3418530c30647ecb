// forecast_test.cpp — the forecaster (qklab/analysis/forecast.h), fed as RunMonitor feeds it: a
// forecast before an exponential rise with a hand-computed crossing, one per episode, none on a
// flat noisy run or a slow healthy drift.
#include "qklab/analysis/forecast.h"

#include <gtest/gtest.h>

#include <cmath>

#include "qklab/analysis/run_monitor.h"

using namespace qklab;

namespace {

ProbeStats layerRow(int64_t step, int32_t layer, double maxLogit) {
    ProbeStats r;
    r.step = step;
    r.layer = layer;
    r.head = -1;
    r.logitMaxRaw = maxLogit;
    return r;
}

// 2 e^(0.02 s): it passes 30 at s = ln(15) / 0.02 = 135.4.
double rising(int64_t s) {
    return 2.0 * std::exp(0.02 * static_cast<double>(s));
}

}  // namespace

TEST(Forecast, FitOfAnExactExponential) {
    const GrowthFit f =
        fitGrowth({{0, 1.0}, {10, std::exp(0.5)}, {20, std::exp(1.0)}, {30, std::exp(1.5)}});
    ASSERT_TRUE(f.ok);
    EXPECT_NEAR(f.rate, 0.05, 1e-12);
    EXPECT_NEAR(f.level, 1.5, 1e-12);
    EXPECT_TRUE(std::isinf(f.t));
    // ln(30) - 1.5 = 1.9012 nats at 0.05 per step: 38.02 steps.
    EXPECT_NEAR(*stepsToCross(f, 30), (std::log(30.0) - 1.5) / 0.05, 1e-9);
    EXPECT_FALSE(fitGrowth({{0, 1.0}, {10, 2.0}, {20, 4.0}}).ok);  // too few probes
}

// Probes every 10 steps. The value reaches the floor (8) first at step 70 (8.11); the window is
// then steps 20..70, exactly on the line: ln(30) - ln(8.11) = 1.3081 nats at 0.02 per step is
// 65.4 steps, so the forecast says step 70 + 66 = 136 (the true crossing is 135.4). No repeat
// while the episode lasts.
TEST(Forecast, WarnsOnceBeforeAnExponentialRise) {
    RunConfig config;
    RunMonitor monitor(config);
    std::vector<Forecast> made;
    for (int64_t s = 0; s <= 200; s += 10) {
        const auto r =
            monitor.addProbes(s, {layerRow(s, 0, 3.0), layerRow(s, 1, rising(s))}, false);
        made.insert(made.end(), r.forecasts.begin(), r.forecasts.end());
    }
    ASSERT_EQ(made.size(), 1u);
    const Forecast& f = made[0];
    EXPECT_EQ(f.step, 70);
    EXPECT_EQ(f.kind, OnsetKind::MaxLogit);
    EXPECT_EQ(f.layer, 1);
    EXPECT_EQ(f.head, -1);
    EXPECT_EQ(f.predictedStep, 136);
    EXPECT_NEAR(f.rate, 0.02, 1e-12);
    EXPECT_DOUBLE_EQ(f.threshold, 30.0);
    EXPECT_NE(f.text.find("at this rate the raw max logit of layer 1 passes 30 in about 66 steps"),
              std::string::npos)
        << f.text;
}

// After the logits come back down (an intervention) and stay calm for kForecastRearmProbes
// probes, a second rise is a new episode and warns again.
TEST(Forecast, ANewEpisodeWarnsAgain) {
    Forecaster fc;
    int made = 0;
    for (int64_t s = 0; s <= 150; s += 10)
        made += fc.addProbes(s, {layerRow(s, 0, rising(s))}).size();
    for (int64_t s = 160; s <= 200; s += 10) made += fc.addProbes(s, {layerRow(s, 0, 4.0)}).size();
    EXPECT_EQ(made, 1);
    for (int64_t s = 210; s <= 350; s += 10)
        made += fc.addProbes(s, {layerRow(s, 0, rising(s - 210))}).size();
    EXPECT_EQ(made, 2);
}

// A rise that levels off below the line is a false alarm; a second rise inside that forecast's
// window (70 + 150 = 220) is the same episode, even after calm probes: one warning, not two.
TEST(Forecast, AFalseAlarmIsNotRepeatedInsideItsWindow) {
    Forecaster fc;
    int made = 0;
    for (int64_t s = 0; s <= 70; s += 10)
        made += fc.addProbes(s, {layerRow(s, 0, rising(s))}).size();
    for (int64_t s = 80; s <= 130; s += 10) made += fc.addProbes(s, {layerRow(s, 0, 8.0)}).size();
    for (int64_t s = 140; s <= 210; s += 10)
        made += fc.addProbes(s, {layerRow(s, 0, rising(s - 70))}).size();
    EXPECT_EQ(made, 1);
}

// A resumed run replays its stored probes through the forecaster (RunMonitor::restore): the
// episode its forecast opened before the resume stays open, so the resumed run does not warn
// again. 2 e^(0.01 s) reaches the floor at step 140 (8.11) and warns there.
TEST(Forecast, AResumedRunKeepsItsEpisode) {
    const auto slow = [](int64_t s) { return 2.0 * std::exp(0.01 * static_cast<double>(s)); };
    RunConfig config;
    std::vector<ProbeStats> stored;
    int before = 0;
    {
        RunMonitor first(config);
        for (int64_t s = 0; s <= 150; s += 10) {
            stored.push_back(layerRow(s, 0, slow(s)));
            before += first.addProbes(s, {stored.back()}, false).forecasts.size();
        }
    }
    EXPECT_EQ(before, 1);
    RunMonitor resumed(config);
    resumed.restore(stored, {});
    for (int64_t s = 160; s <= 250; s += 10)
        EXPECT_TRUE(resumed.addProbes(s, {layerRow(s, 0, slow(s))}, false).forecasts.empty())
            << "step " << s;
}

// A flat run with noise (+-20 % around 12) and a slow healthy drift (8 to 14 over 1000 steps: a
// crossing ~1300 steps off, beyond the horizon) make no forecast.
TEST(Forecast, NoneOnHealthyRuns) {
    Forecaster fc;
    const double noise[] = {1.0, 1.2, 0.85, 1.1, 0.8, 1.15, 0.9, 1.05, 1.2, 0.95};
    for (int64_t i = 0; i < 200; ++i) {
        const double flat = 12.0 * noise[i % 10];
        const double drift = 8.0 * std::exp(std::log(14.0 / 8.0) * static_cast<double>(i) / 200.0);
        EXPECT_TRUE(
            fc.addProbes(i * 5, {layerRow(i * 5, 0, flat), layerRow(i * 5, 1, drift)}).empty())
            << "step " << i * 5;
    }
}
