// policy_report_test.cpp — skip-step policies judged by their twins
// (qklab/analysis/policy_report.h), on hand-made runs: the actions read from stored events, the
// loss after each against the twin, harm, and onsets prevented or delayed.
#include "qklab/analysis/policy_report.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace qklab;

namespace {

EventRecord event(int64_t step, const std::string& kind, const std::string& params,
                  const std::string& source) {
    return EventRecord{step, kind, params, source};
}

// Steps 0..n-1 with the loss `loss(step)`.
template <class F>
std::vector<StepMetrics> steps(int n, F loss) {
    std::vector<StepMetrics> out;
    for (int s = 0; s < n; ++s) {
        StepMetrics m;
        m.step = s;
        m.loss = loss(s);
        out.push_back(m);
    }
    return out;
}

Onset onsetAt(int64_t step) {
    Onset o;
    o.step = step;
    o.kind = OnsetKind::LossSpike;
    return o;
}

}  // namespace

TEST(PolicyReport, SkipsAndLoweringsAreTheActions) {
    const std::vector<EventRecord> events{
        event(5, "lr_multiplier", R"({"factor": 2.0})", "config"),  // not the policy's
        event(40, "skip_step", R"({"why": "loss 9 > ..."})", "policy"),
        event(41, "skip_step", "{}", "policy"),
        event(60, "lr_multiplier", R"({"factor": 0.6})", "policy"),    // 2 x 0.3: down
        event(110, "lr_multiplier", R"({"factor": 2.0})", "policy"),   // back after 50 steps
        event(150, "skip_step", "{}", "user"),                         // the user's, not counted
        event(180, "lr_multiplier", R"({"factor": 0.6})", "policy")};  // down to the end
    const std::vector<PolicyAction> a = policyActions(events, 200);
    ASSERT_EQ(a.size(), 4u);
    EXPECT_EQ(a[0].step, 40);
    EXPECT_EQ(a[0].steps, 1);
    EXPECT_EQ(a[1].step, 41);
    EXPECT_EQ(a[2].step, 60);
    EXPECT_EQ(a[2].steps, 50);
    EXPECT_EQ(a[3].step, 180);
    EXPECT_EQ(a[3].steps, 20);
}

TEST(PolicyReport, MeanLossBeforeSkipsNotFiniteSteps) {
    const auto s = steps(20, [](int i) { return i == 18 ? NAN : double(i); });
    // Steps 15..19 without 18: (15 + 16 + 17 + 19) / 4.
    EXPECT_DOUBLE_EQ(meanLossBefore(s, 19, 5), 16.75);
    EXPECT_TRUE(std::isnan(meanLossBefore(s, -1, 5)));
}

TEST(PolicyReport, LossAfterHarmAndPreventedAgainstTheTwin) {
    // Sigma pair: skips at 100 and 150; the twin's loss steps up at 120 (its onset) and stays
    // 0.5 higher; the policy run has no onset. Both runs end at step 299, before +200: the
    // loss after is the mean of steps 290..299, 2.0 - 2.5 = -0.5 for both skips. The skip at
    // 100 has the twin's onset inside 100..300; the one at 150 comes after it: harm 1.
    TwinPair sigma;
    sigma.policy = SkipStepPolicy::Sigma;
    sigma.actions = {{100, 1}, {150, 1}};
    sigma.steps = steps(300, [](int) { return 2.0; });
    sigma.twinSteps = steps(300, [](int i) { return i >= 120 ? 2.5 : 2.0; });
    sigma.twinOnset = onsetAt(120);
    // Forecast pair: one lowering of 50 steps at 30 in a twin that stays healthy: harm, and
    // the loss after (steps 221..230) is 0.1 higher.
    TwinPair forecast;
    forecast.policy = SkipStepPolicy::Forecast;
    forecast.actions = {{30, 50}};
    forecast.steps = steps(260, [](int) { return 2.1; });
    forecast.twinSteps = steps(260, [](int) { return 2.0; });
    // A second forecast pair whose onset came later than the twin's: delayed.
    TwinPair later = forecast;
    later.actions = {};
    later.twinOnset = onsetAt(100);
    later.onset = onsetAt(140);

    const auto scores = scorePolicies({sigma, forecast, later});
    const PolicyScore& s = scores.at(SkipStepPolicy::Sigma);
    EXPECT_EQ(s.pairs, 1);
    EXPECT_EQ(s.twinOnsets, 1);
    EXPECT_EQ(s.prevented, 1);
    EXPECT_EQ(s.actions, 2);
    EXPECT_EQ(s.stepsAffected, 2);
    EXPECT_EQ(s.harm, 1);
    EXPECT_EQ(s.lossDeltas, 2);
    EXPECT_NEAR(s.lossDeltaMedian, -0.5, 1e-12);
    const PolicyScore& f = scores.at(SkipStepPolicy::Forecast);
    EXPECT_EQ(f.pairs, 2);
    EXPECT_EQ(f.twinOnsets, 1);
    EXPECT_EQ(f.prevented, 0);
    EXPECT_EQ(f.delayed, 1);
    EXPECT_DOUBLE_EQ(f.delayMedian, 40.0);  // 140 against the twin's 100
    EXPECT_EQ(f.actions, 1);
    EXPECT_EQ(f.stepsAffected, 50);
    EXPECT_EQ(f.harm, 1);
    EXPECT_NEAR(f.lossDeltaMedian, 0.1, 1e-12);
    EXPECT_EQ(f.steps, 520);
}
