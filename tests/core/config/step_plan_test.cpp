// step_plan_test.cpp — planStep and stepEnd: the cadence rules of a training step (probes,
// maps before events, graphs, fused attention, QK-Clip, validation, checkpoints, readback and
// flush), checked against plans worked out by hand on small configs. Torch-free.
#include "qklab/config/step_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "qklab/config/events.h"

using namespace qklab;

namespace {

// Ten steps; probes every 3, validation every 4, a checkpoint every 5.
RunConfig cadenced() {
    RunConfig c;
    c.schedule.steps = 10;
    c.schedule.warmupSteps = 0;
    c.probes.every = 3;
    c.eval.every = 4;
    c.run.checkpointEvery = 5;
    return c;
}

LoopFacts deferred() {
    LoopFacts f;
    f.deferredReadback = true;
    f.fusedKernel = true;
    return f;
}

// The steps in [0, steps) whose plan has `field` set, as "0 3 6 9".
template <class F>
std::string stepsWhere(const RunConfig& c, const LoopFacts& f, F field) {
    std::string out;
    for (int64_t s = 0; s < c.schedule.steps; ++s)
        if (field(planStep(c, s, f))) out += (out.empty() ? "" : " ") + std::to_string(s);
    return out;
}

Event softcapEvent(int64_t step, SoftcapKind cap, double c) {
    Event e;
    e.step = step;
    e.kind = EventKind::Softcap;
    e.args.cap = cap;
    e.args.c = c;
    return e;
}

}  // namespace

TEST(StepPlan, ProbeEvalCheckpointCadence) {
    const RunConfig c = cadenced();
    const LoopFacts f = deferred();
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.probe; }), "0 3 6 9");
    // (step + 1) % 4 == 0, and always the last step.
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.evaluate; }), "3 7 9");
    // (step + 1) % 5 == 0, but not the last step: the run's end saves that one.
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.checkpointEvery; }), "4");
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.lastStep; }), "9");
    // Deferred readback reads back for a probe, a validation or a checkpoint; flushes a probe.
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.readBack; }), "0 3 4 6 7 9");
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.flush; }), "0 3 6 9");
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.readBeforeUpdate; }), "");
    // Every-step readback: every step, before its update.
    LoopFacts everyStep = f;
    everyStep.deferredReadback = false;
    const std::string all = "0 1 2 3 4 5 6 7 8 9";
    EXPECT_EQ(stepsWhere(c, everyStep, [](const StepPlan& p) { return p.readBack; }), all);
    EXPECT_EQ(stepsWhere(c, everyStep, [](const StepPlan& p) { return p.readBeforeUpdate; }), all);
}

TEST(StepPlan, OffSwitchesPlanNothing) {
    RunConfig c = cadenced();
    c.probes.every = 0;
    c.eval.every = 0;
    c.run.checkpointEvery = 0;
    const LoopFacts f = deferred();
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.probe; }), "");
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.evaluate; }), "9");  // the end
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.checkpointEvery; }), "");
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.readBack; }), "9");
}

TEST(StepPlan, EventStepsProbeAndMapBeforeOnlyWhereTheSwitchesChange) {
    RunConfig c = cadenced();
    c.probes.attnMapEvery = 6;
    c.events = {softcapEvent(4, SoftcapKind::Tanh, 30)};
    LoopFacts f = deferred();
    f.events = true;
    f.lastMapStep = 0;
    // Off the probe schedule, an event step probes; the model before the softcap is mapped.
    const StepPlan p = planStep(c, 4, f);
    EXPECT_TRUE(p.probe);
    EXPECT_TRUE(p.mapsBeforeEvents);
    EXPECT_EQ(p.beforeSwitches.softcap, SoftcapKind::None);
    EXPECT_EQ(p.beforeSwitches.softcapC, 0.0);
    EXPECT_FALSE(p.beforeSwitches.fused);  // the maps need the explicit softmax
    EXPECT_EQ(p.switches.softcap, SoftcapKind::Tanh);
    EXPECT_EQ(p.switches.softcapC, 30.0);
    // Step 3 has maps already: the same weights, no second map.
    f.lastMapStep = 3;
    EXPECT_FALSE(planStep(c, 4, f).mapsBeforeEvents);
    EXPECT_TRUE(planStep(c, 4, f).probe);
    // An LR change leaves the forward pass as it was: no before map.
    Event lr;
    lr.step = 4;
    lr.kind = EventKind::LrMultiplier;
    lr.args.factor = 0.5;
    c.events = {lr};
    f.lastMapStep = 0;
    EXPECT_FALSE(planStep(c, 4, f).mapsBeforeEvents);
    EXPECT_DOUBLE_EQ(planStep(c, 4, f).settings.lrFactor, 0.5);
    // Without maps (attn_map_every = 0) an event step probes only on schedule.
    c.events = {softcapEvent(4, SoftcapKind::Tanh, 30)};
    c.probes.attnMapEvery = 0;
    EXPECT_FALSE(planStep(c, 4, f).probe);
    EXPECT_FALSE(planStep(c, 4, f).mapsBeforeEvents);
}

TEST(StepPlan, FusedAttentionOnlyWhereNoLogitsAreNeeded) {
    const RunConfig c = cadenced();
    const LoopFacts f = deferred();
    const StepPlan plain = planStep(c, 1, f), probed = planStep(c, 3, f);
    EXPECT_TRUE(plain.switches.fused);
    EXPECT_FALSE(probed.switches.fused);     // probes need the logits
    EXPECT_TRUE(probed.evalSwitches.fused);  // validation never probes
    RunConfig capped = c;
    capped.attention.softcap.kind = SoftcapKind::Tanh;
    EXPECT_FALSE(planStep(capped, 1, f).switches.fused);  // the cap acts on the logits
    EXPECT_FALSE(planStep(capped, 1, f).evalSwitches.fused);
    RunConfig off = c;
    off.run.fusedAttention = false;
    EXPECT_FALSE(planStep(off, 1, f).switches.fused);
    LoopFacts noKernel = f;
    noKernel.fusedKernel = false;
    EXPECT_FALSE(planStep(c, 1, noKernel).switches.fused);
    // Apart from `fused`, the switches are the step's settings.
    AttentionSwitches sw = plain.switches;
    sw.fused = false;
    EXPECT_EQ(sw, attentionSwitches(c, settingsAt(c, 1)));
}

TEST(StepPlan, GraphsOnlyOnPlainSteps) {
    const RunConfig c = cadenced();
    LoopFacts f = deferred();
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.tryGraph; }), "");
    f.graphs = true;
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.tryGraph; }), "1 2 4 5 7 8");
    f.events = true;  // an event changes the model
    EXPECT_FALSE(planStep(c, 1, f).tryGraph);
}

TEST(StepPlan, QkClipCadenceAndEvents) {
    RunConfig c = cadenced();
    c.attention.qkClip.tau = 10;
    c.attention.qkClip.every = 3;
    const LoopFacts f = deferred();
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.qkClip; }), "2 5 8");
    // A qk_clip event switches it on from its step, at the configured cadence.
    c.attention.qkClip.tau = 0;
    Event e;
    e.step = 4;
    e.kind = EventKind::QkClip;
    e.args.tau = 5;
    c.events = {e};
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.qkClip; }), "5 8");
    EXPECT_EQ(planStep(c, 5, f).settings.qkClipTau, 5.0);
}

TEST(StepPlan, AnnealFreezesGainsFromItsFirstStep) {
    RunConfig c = cadenced();
    c.attention.qkNorm = QkNormVariant::RmsAffine;
    c.anneal.qkNorm = {0.5, 1.0, AnnealShape::Linear};  // steps 5 .. 9
    const LoopFacts f = deferred();
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.freezeGains; }), "5 6 7 8 9");
    EXPECT_EQ(planStep(c, 9, f).switches.alpha, 0.0);
    c.anneal.qkNorm.freezeGain = false;
    EXPECT_EQ(stepsWhere(c, f, [](const StepPlan& p) { return p.freezeGains; }), "");
}

TEST(StepPlan, TheClockAddsRollingCheckpointsReadbacksAndFlushes) {
    RunConfig c = cadenced();
    c.run.checkpointSeconds = 60;
    LoopFacts f = deferred();
    f.checkpointFolder = true;
    const StepPlan plain = planStep(c, 1, f);
    EXPECT_FALSE(plain.readBack);
    StepClock clock{1, 0.1, 0.1, 59.9};
    StepEnd e = stepEnd(c, plain, f, clock);
    EXPECT_FALSE(e.checkpoint || e.readBack || e.flush);
    clock.sinceCheckpoint = 60;  // rolling: read back first, then save
    e = stepEnd(c, plain, f, clock);
    EXPECT_TRUE(e.checkpoint && e.readBack);
    EXPECT_FALSE(e.flush);                                             // the save flushes itself
    EXPECT_FALSE(stepEnd(c, planStep(c, 9, f), f, clock).checkpoint);  // the end saves
    f.checkpointFolder = false;
    EXPECT_FALSE(stepEnd(c, plain, f, clock).checkpoint);
    clock.sinceCheckpoint = 0;
    clock.pendingSteps = kMaxPendingSteps;  // deferred readback: at least this often
    EXPECT_TRUE(stepEnd(c, plain, f, clock).readBack);
    clock.pendingSteps = 1;
    clock.sinceReadback = 0.6;  // ... and every half second
    e = stepEnd(c, plain, f, clock);
    EXPECT_TRUE(e.readBack);
    EXPECT_FALSE(e.flush);
    clock.sinceFlush = 0.6;
    EXPECT_TRUE(stepEnd(c, plain, f, clock).flush);
    clock.sinceReadback = 0.1;  // a flush follows a readback only
    EXPECT_FALSE(stepEnd(c, plain, f, clock).flush);
    EXPECT_TRUE(stepEnd(c, planStep(c, 3, f), f, clock).flush);  // a probe flushes at once
}

// One equality for the switches: a CUDA graph replays only for equal ones and a before-event map
// is taken only for unequal ones, so each field must count.
TEST(StepPlan, SwitchesDifferInAnyOneField) {
    const AttentionSwitches base;
    std::vector<AttentionSwitches> changed(8, base);
    changed[0].qkNorm = QkNormVariant::Rms;
    changed[1].normOn = QkNormTarget::K;
    changed[2].normAfterRope = true;
    changed[3].alpha = 0.5;
    changed[4].scale = 0.25;
    changed[5].softcap = SoftcapKind::Tanh;
    changed[6].softcapC = 30;
    changed[7].fused = true;
    EXPECT_EQ(base, AttentionSwitches{});
    for (const AttentionSwitches& sw : changed) EXPECT_NE(sw, base);
}
