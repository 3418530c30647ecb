// onsets_test.cpp — the onset of a run from hand-made rows (qklab/analysis/onsets.h): the exact
// step and kind of each first onset, and which comes first.
#include "qklab/analysis/onsets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace qklab;

namespace {

// Spike settings small enough to reason about by hand: a verdict from the 4th value on.
SpikeConfig smallWindow() {
    SpikeConfig c;
    c.window = 8;
    c.minHistory = 4;
    c.zThreshold = 5.0;
    return c;
}

// Steps 0..n-1 with a loss alternating 2.0 / 2.2 (mean 2.1, sd 0.1) and grad norm 1.0 / 1.2.
std::vector<StepMetrics> steadySteps(int n) {
    std::vector<StepMetrics> out;
    for (int s = 0; s < n; ++s) {
        StepMetrics m;
        m.step = s;
        m.loss = s % 2 ? 2.2 : 2.0;
        m.gradNorm = s % 2 ? 1.2 : 1.0;
        out.push_back(m);
    }
    return out;
}

ProbeStats row(int64_t step, int32_t layer, int32_t head, double maxLogit) {
    ProbeStats p;
    p.step = step;
    p.layer = layer;
    p.head = head;
    p.logitMaxRaw = maxLogit;
    return p;
}

}  // namespace

TEST(Onsets, HealthyRunHasNone) {
    const std::vector<ProbeStats> probes{row(0, 0, -1, 5), row(10, 0, -1, 29.9)};
    EXPECT_TRUE(onsetsOf(steadySteps(20), probes, smallWindow()).empty());
    EXPECT_FALSE(runOnset(steadySteps(20), probes, smallWindow()).has_value());
}

// The line is passed strictly (30 is not past 30); the onset names the head with the largest
// logit of the first step past it, in its layer.
TEST(Onsets, MaxLogitPerLayerAndHead) {
    const std::vector<ProbeStats> probes{
        row(0, 0, -1, 5),   row(0, 1, -1, 6),  row(5, 0, -1, 30),   row(5, 0, 0, 30),
        row(10, 0, -1, 31), row(10, 0, 0, 31), row(10, 0, 1, 12),   row(10, 1, -1, 40),
        row(10, 1, 0, 22),  row(10, 1, 1, 40), row(15, 0, -1, 900), row(15, 0, 0, 900)};
    const auto o = runOnset(steadySteps(20), probes, smallWindow());
    ASSERT_TRUE(o.has_value());
    EXPECT_EQ(o->step, 10);
    EXPECT_EQ(o->kind, OnsetKind::MaxLogit);
    EXPECT_EQ(o->layer, 1);
    EXPECT_EQ(o->head, 1);
    EXPECT_DOUBLE_EQ(o->value, 40);
}

// Without head rows the layer row names the onset (head -1).
TEST(Onsets, MaxLogitLayerRowsOnly) {
    const auto o = runOnset({}, {row(0, 0, -1, 5), row(5, 2, -1, 35)}, smallWindow());
    ASSERT_TRUE(o.has_value());
    EXPECT_EQ(o->step, 5);
    EXPECT_EQ(o->layer, 2);
    EXPECT_EQ(o->head, -1);
}

// Loss 2.0/2.2 has mean 2.1 and sd 0.1 over any even window: 2.7 at step 12 is z = 6 > 5, a
// spike, and 2.5 (z = 4) is not. The grad norm spikes later (step 15, z = (2.2 - 1.1) / 0.1).
TEST(Onsets, LossAndGradSpikesKeepTheirKinds) {
    auto steps = steadySteps(20);
    steps[12].loss = 2.5;
    EXPECT_TRUE(onsetsOf(steps, {}, smallWindow()).empty());
    steps[12].loss = 2.7;
    steps[15].gradNorm = 2.2;
    const auto all = onsetsOf(steps, {}, smallWindow());
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].step, 12);
    EXPECT_EQ(all[0].kind, OnsetKind::LossSpike);
    EXPECT_DOUBLE_EQ(all[0].value, 2.7);
    EXPECT_EQ(all[1].step, 15);
    EXPECT_EQ(all[1].kind, OnsetKind::GradSpike);
}

// No verdict before minHistory values: a jump at step 3 (3 values before it) is no spike.
TEST(Onsets, NoSpikeBeforeTheHistory) {
    auto steps = steadySteps(8);
    steps[3].loss = 50;
    EXPECT_TRUE(onsetsOf(steps, {}, smallWindow()).empty());
}

// A non-finite loss is divergence; nothing after it is read, and the earliest onset wins.
TEST(Onsets, DivergenceAndWhicheverComesFirst) {
    auto steps = steadySteps(20);
    steps[9].loss = std::numeric_limits<double>::quiet_NaN();
    steps[14].loss = 9;  // after the divergence: not read
    const std::vector<ProbeStats> probes{row(0, 0, -1, 5), row(10, 0, -1, 45)};
    const auto all = onsetsOf(steps, probes, smallWindow());
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].kind, OnsetKind::Divergence);
    EXPECT_EQ(all[0].step, 9);
    EXPECT_EQ(all[1].kind, OnsetKind::MaxLogit);
    EXPECT_EQ(runOnset(steps, probes, smallWindow())->step, 9);
    // A max logit past the line before the divergence comes first.
    const auto early = runOnset(steps, {row(0, 0, -1, 5), row(5, 0, -1, 45)}, smallWindow());
    EXPECT_EQ(early->kind, OnsetKind::MaxLogit);
    EXPECT_EQ(early->step, 5);
}
