// captured_step_test.cpp — run.cuda_graphs' step scheduling, on the CPU, with a stand-in graph.
//
// A CUDA graph records the launches of one training step and replays them on the same
// buffers. The stand-in records the step's body and re-runs it on replay, on the same static
// tensors: what it computes is what a graph computes, provided the trainer does its part (new
// batch copied into the static inputs, outputs read from the static outputs, gradients not
// reset between backward and update, the LR read from its device tensor, eager steps around
// the graph for probes and events, a new capture when the shapes change). A trainer that got
// any of these wrong gives another loss curve than the eager run, which these tests compare
// exactly. tests/core/engine/gpu_test.cpp checks real graphs on a GPU.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "qklab/config/events.h"
#include "qklab/engine/trainer.h"
#include "support/optim_fixture.h"
#include "support/stand_in_graph.h"

using namespace qklab;
using namespace qklab::testing_support;

namespace {

RunConfig graphConfig(int64_t steps) {
    RunConfig c = eventfulConfig(steps);
    c.run.readback = Readback::Deferred;  // graphs need it (the update follows the loss)
    return c;
}

LossRecorder run(const RunConfig& c, const std::shared_ptr<GraphCounts>& counts) {
    TrainerOptions options;
    if (counts)
        options.stepGraphFactory = [counts] { return std::make_unique<StandInGraph>(counts); };
    Trainer t(c, options);
    EXPECT_EQ(t.cudaGraphs(), counts != nullptr);  // what the CLI asks
    EXPECT_EQ(t.deviceDescription().find("CUDA graphs") != std::string::npos, counts != nullptr);
    LossRecorder r;
    EXPECT_EQ(t.run(r).status, RunStatus::Finished);
    EXPECT_EQ(t.replayedSteps(), counts ? counts->replays : 0);  // what the run reports
    return r;
}

}  // namespace

TEST(CapturedSteps, AReplayedRunEqualsTheEagerRunExactly) {
    const RunConfig c = graphConfig(60);
    const auto eager = run(c, nullptr);
    auto counts = std::make_shared<GraphCounts>();
    const auto graphed = run(c, counts);
    expectSameReport(graphed, eager);
    // One capture: the LR multiplier changes a device tensor, not the graph. Eager: the 9
    // probe steps (0, 7, ..., 56), the event step 20, and the 2 steps that make the key stable
    // (1, 2); every other step is a replay, the capture's first included.
    EXPECT_EQ(counts->captures, 1);
    EXPECT_EQ(counts->replays, 60 - 9 - 1 - 2);
}

TEST(CapturedSteps, AContextSwitchCapturesAnew) {
    RunConfig c = graphConfig(50);
    c.events.push_back(
        eventFromJson({{"step", 30}, {"kind", "context_length"}, {"seq_len", 16}}, "test"));
    const auto eager = run(c, nullptr);
    auto counts = std::make_shared<GraphCounts>();
    const auto graphed = run(c, counts);
    expectSameReport(graphed, eager);
    EXPECT_EQ(counts->captures, 2);  // T = 32, then T = 16
    EXPECT_GT(counts->replays, 30);
}

TEST(CapturedSteps, AFailedCaptureLeavesEveryStepEager) {
    const RunConfig c = graphConfig(30);
    const auto eager = run(c, nullptr);
    auto counts = std::make_shared<GraphCounts>();
    counts->failCapture = true;
    const auto graphed = run(c, counts);
    expectSameReport(graphed, eager);
    EXPECT_EQ(counts->replays, 0);
}

TEST(CapturedSteps, AnAnnealRunsEagerlyAndItsFrozenGainsAreCapturedAfterIt) {
    RunConfig c = graphConfig(60);
    c.attention.qkNorm = QkNormVariant::Rms;
    // Steps 24 to 40 of 60: alpha changes every step and the gains are frozen.
    c.anneal.qkNorm.start = 0.4;
    c.anneal.qkNorm.end = 2.0 / 3.0;
    const auto eager = run(c, nullptr);
    auto counts = std::make_shared<GraphCounts>();
    const auto graphed = run(c, counts);
    expectSameReport(graphed, eager);
    // alpha = 1 before the anneal; inside it alpha changes every step (eager); after it alpha
    // = 0 with the gains still frozen (their gradients dropped inside the graph).
    EXPECT_EQ(counts->captures, 2);
}

TEST(CapturedSteps, EveryStepReadbackKeepsGraphsOff) {
    RunConfig c = graphConfig(30);
    c.run.readback = Readback::EveryStep;
    auto counts = std::make_shared<GraphCounts>();
    TrainerOptions options;
    options.stepGraphFactory = [counts] { return std::make_unique<StandInGraph>(counts); };
    Trainer t(c, options);
    EXPECT_FALSE(t.cudaGraphs());
    EXPECT_EQ(t.deviceDescription().find("CUDA graphs"), std::string::npos);
    c.run.cudaGraphs = AutoSwitch::On;
    c.run.device = DeviceKind::Cuda;
    EXPECT_THROW(validate(c), Error);
}
