// skip_policy_test.cpp — optim.skip_step in the trainer (issue 40): a skipped update leaves the
// weights as they were; the sigma policy skips exactly the steps its rule names, from the
// values the run reports; the forecast policy lowers the LR for its steps after a forecast; and
// both resume from a checkpoint as if they had never stopped.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "qklab/analysis/skip_step.h"
#include "qklab/engine/run_session.h"
#include "qklab/engine/trainer.h"
#include "qklab/store/run_store.h"
#include "support/resume_pair.h"
#include "support/tiny_config.h"

using namespace qklab;

namespace {

struct Collector : TrainingObserver {
    std::vector<StepMetrics> steps;
    std::vector<EventRecord> events;
    std::vector<Forecast> forecasts;
    std::function<void(const StepMetrics&)> onEachStep;
    void onStep(const StepMetrics& m) override {
        steps.push_back(m);
        if (onEachStep) onEachStep(m);
    }
    void onEvent(const EventRecord& e) override { events.push_back(e); }
    void onForecast(const Forecast& f) override { forecasts.push_back(f); }
    std::set<int64_t> policySkips() const {
        std::set<int64_t> out;
        for (const auto& e : events)
            if (e.kind == "skip_step" && e.source == "policy") out.insert(e.step);
        return out;
    }
};

Collector train(const RunConfig& c) {
    Trainer t(c);
    Collector col;
    t.run(col);
    return col;
}

// A small model at a high LR (the forecast suite's fast blow-up): a raw max logit that grows past
// 30 within a few dozen steps, and a dirty batch at step 30. Where the blow-up's own loss and
// grad norm jump is chaotic (seed 2 of this model trips a 16-step, 2-sigma rule nowhere before
// step 30); the dirty batch trips it on every seed (seeds 1337, 1-5: grad norm 15.7-157 against
// a line of 0.9-4.4).
RunConfig blowup(int64_t steps) {
    RunConfig c = testsupport::tinyRunConfig(steps);
    c.model.nLayers = 2;
    c.optim.lr = 0.1;
    c.schedule.warmupSteps = 10;
    c.probes.every = 2;
    c.probes.attnMapEvery = 0;
    c.eval.every = 0;
    c.events = {eventFromJson({{"step", 30}, {"kind", "dirty_batch"}}, "test")};
    return c;
}

}  // namespace

// A skip_step event in the config: the step computes its loss but makes no update, so every
// loss up to it is the twin's and the next one is not; no update norm at that step only.
TEST(SkipPolicy, ASkippedStepLeavesTheWeightsAsTheyWere) {
    RunConfig c = testsupport::tinyRunConfig(12);
    const Collector plain = train(c);
    c.events.push_back(eventFromJson({{"step", 6}, {"kind", "skip_step"}}, "test"));
    const Collector skipped = train(c);
    ASSERT_EQ(skipped.steps.size(), 12u);
    for (int s = 0; s <= 6; ++s) EXPECT_EQ(skipped.steps[s].loss, plain.steps[s].loss) << s;
    EXPECT_NE(skipped.steps[7].loss, plain.steps[7].loss);
    for (int s = 0; s < 12; ++s)
        EXPECT_EQ(std::isnan(skipped.steps[s].updateNorm), s == 6) << "step " << s;
    ASSERT_EQ(skipped.events.size(), 1u);
    EXPECT_EQ(skipped.events[0].kind, "skip_step");
    EXPECT_EQ(skipped.events[0].source, "config");
}

// The sigma policy skips exactly the steps SkipStepDetector names from the losses and grad
// norms the run reports (the same values, read before each update), says why, and makes no
// update there.
TEST(SkipPolicy, SigmaSkipsExactlyTheStepsItsRuleNames) {
    RunConfig c = blowup(60);
    c.optim.skipStep = SkipStepPolicy::Sigma;
    c.optim.skipWindow = 16;
    c.optim.skipSigma = 2.0;
    const Collector run = train(c);
    ASSERT_EQ(run.steps.size(), 60u);
    SkipStepDetector rule(16, 2.0);
    std::set<int64_t> expected;
    for (const StepMetrics& m : run.steps)
        if (rule.observe(m.loss, m.gradNorm).skip) expected.insert(m.step);
    ASSERT_TRUE(expected.count(30)) << "the dirty batch should trip the rule";
    EXPECT_EQ(run.policySkips(), expected);
    for (const StepMetrics& m : run.steps)
        EXPECT_EQ(std::isnan(m.updateNorm), expected.count(m.step) > 0) << "step " << m.step;
    for (const EventRecord& e : run.events) {
        if (e.source != "policy") continue;
        EXPECT_NE(e.paramsJson.find("mean"), std::string::npos) << e.paramsJson;
    }
}

// The forecast policy: after the first forecast (made at a probe step m), the LR is x0.3 for
// 20 steps from m + 1 and back after, against the twin without the policy, which is the same
// run up to m.
TEST(SkipPolicy, AForecastLowersTheLrForItsSteps) {
    RunConfig c = blowup(60);
    const Collector twin = train(c);
    c.optim.skipStep = SkipStepPolicy::Forecast;
    c.optim.forecastLrFactor = 0.3;
    c.optim.forecastLrSteps = 20;
    const Collector run = train(c);
    ASSERT_FALSE(run.forecasts.empty());
    const int64_t m = run.forecasts.front().step;
    ASSERT_LT(m + 21, 60);
    for (int64_t s = 0; s <= m; ++s) EXPECT_EQ(run.steps[s].loss, twin.steps[s].loss) << s;
    for (int64_t s = m + 1; s <= m + 20; ++s)
        EXPECT_NEAR(run.steps[s].lr, 0.3 * twin.steps[s].lr, 1e-12 * twin.steps[s].lr) << s;
    EXPECT_DOUBLE_EQ(run.steps[m + 21].lr, twin.steps[m + 21].lr);
    std::vector<std::pair<int64_t, std::string>> policy;
    for (const EventRecord& e : run.events)
        if (e.source == "policy") policy.emplace_back(e.step, e.paramsJson);
    ASSERT_GE(policy.size(), 2u);
    EXPECT_EQ(policy[0].first, m + 1);
    EXPECT_EQ(nlohmann::json::parse(policy[0].second)["factor"], 0.3);
    EXPECT_EQ(policy[1].first, m + 21);
    EXPECT_EQ(nlohmann::json::parse(policy[1].second)["factor"], 1.0);
}

// Stopped and resumed, each policy acts as in the run that never stopped: the sigma window and
// a lowering in progress are in the checkpoint.
TEST(SkipPolicy, BothPoliciesResumeAsIfTheyNeverStopped) {
    for (const SkipStepPolicy policy : {SkipStepPolicy::Sigma, SkipStepPolicy::Forecast}) {
        RunConfig c = blowup(50);
        c.optim.skipStep = policy;
        c.optim.skipWindow = 16;
        c.optim.skipSigma = 2.0;
        c.optim.forecastLrSteps = 30;
        const testsupport::ResumePair r = testsupport::trainedWholeAndResumed(c, 24);
        EXPECT_EQ(r.stoppedStatus, RunStatus::Stopped);
        EXPECT_EQ(r.resumedFrom, 25);
        ASSERT_EQ(r.full.size(), 50u);
        ASSERT_EQ(r.resumed.size(), 50u);
        for (size_t i = 0; i < r.full.size(); ++i) {
            EXPECT_EQ(r.full[i].loss, r.resumed[i].loss) << nameOf(policy) << " step " << i;
            EXPECT_EQ(r.full[i].lr, r.resumed[i].lr) << nameOf(policy) << " step " << i;
        }
        std::vector<std::pair<int64_t, std::string>> a, b;
        for (const auto& e : r.fullEvents) a.emplace_back(e.step, e.kind + e.source);
        for (const auto& e : r.resumedEvents) b.emplace_back(e.step, e.kind + e.source);
        EXPECT_EQ(a, b) << nameOf(policy);
        bool after = false;  // the policy acted after the resume too (sigma: the dirty batch)
        for (const auto& e : r.fullEvents) after = after || (e.source == "policy" && e.step > 24);
        EXPECT_TRUE(after) << nameOf(policy);
    }
}
