// step_plan.cpp — the decisions about one training step (see qklab/config/step_plan.h).
#include "qklab/config/step_plan.h"

#include <algorithm>

namespace qklab {
namespace {

// Steps are counted from 0; a cadence of N acts after steps N-1, 2N-1, ...
bool everyNth(int64_t every, int64_t step) {
    return every > 0 && (step + 1) % every == 0;
}

// The switches of `step` without the events that take effect there: the model as it stands
// before them (stored at step - 1).
AttentionSwitches switchesBeforeEvents(const RunConfig& c, int64_t step) {
    RunConfig without = c;
    without.events.erase(std::remove_if(without.events.begin(), without.events.end(),
                                        [&](const Event& e) { return e.step == step; }),
                         without.events.end());
    return attentionSwitches(without, settingsAt(without, step));
}

// What follows the forward pass: the update, QK-Clip, validation, the checkpoint cadence, and
// the readback and flush those ask for.
void planAfterForward(const RunConfig& c, const LoopFacts& facts, StepPlan& p) {
    const int64_t step = p.step;
    // Learnable QK scales are frozen during an anneal: the optimizer would otherwise inflate
    // them to compensate, and they would explode as alpha reaches 0.
    // anneal.qk_norm.freeze_gain = false leaves them learnable, to show that.
    p.freezeGains = p.settings.annealing && c.anneal.qkNorm.freezeGain;
    // Every-step readback checks the step before the update (one transfer for both values),
    // so a diverged run keeps the weights of its last good step.
    // The sigma skip-step rule judges every step before its update.
    p.readBeforeUpdate = !facts.deferredReadback || c.optim.skipStep == SkipStepPolicy::Sigma;
    p.qkClip = p.settings.qkClipTau > 0 && everyNth(c.attention.qkClip.every, step);
    p.lastStep = step + 1 == c.schedule.steps;
    p.evaluate = everyNth(c.eval.every, step) || p.lastStep;
    p.checkpointEvery = everyNth(c.run.checkpointEvery, step) && !p.lastStep;
    // A probe's rows, a validation and a checkpoint are read back (and a probe flushed) now.
    p.readBack = !facts.deferredReadback || p.probe || p.evaluate || p.checkpointEvery;
    p.flush = p.probe;
}

}  // namespace

StepPlan planStep(const RunConfig& c, int64_t step, const LoopFacts& facts) {
    StepPlan p;
    p.step = step;
    p.settings = settingsAt(c, step);
    p.events = facts.events;
    // Maps on both sides of every event: probed although off the probe schedule.
    const bool mapsOn = c.probes.every > 0 && c.probes.attnMapEvery > 0;
    p.probe = (c.probes.every > 0 && step % c.probes.every == 0) || (mapsOn && facts.events);
    const AttentionSwitches explicitSwitches = attentionSwitches(c, p.settings);
    // The before-event map, unless step - 1 has one already (the same weights), and only where
    // the events change the forward pass (not LR or a dirty batch: same weights, same map).
    if (mapsOn && facts.events && step > 0 && facts.lastMapStep != step - 1) {
        p.beforeSwitches = switchesBeforeEvents(c, step);
        p.mapsBeforeEvents = p.beforeSwitches != explicitSwitches;
    }
    auto fusedWhere = [&](bool probing) {
        AttentionSwitches sw = explicitSwitches;
        sw.fused = c.run.fusedAttention && facts.fusedKernel && fusedAttentionAllowed(sw, probing);
        return sw;
    };
    p.switches = fusedWhere(p.probe);
    p.evalSwitches = fusedWhere(false);
    // Probe and event steps need the logits or change the model: eager. So does a step the
    // sigma rule may skip (a replayed graph makes its update).
    p.tryGraph =
        facts.graphs && !facts.events && !p.probe && c.optim.skipStep != SkipStepPolicy::Sigma;
    planAfterForward(c, facts, p);
    return p;
}

StepEnd stepEnd(const RunConfig& c, const StepPlan& plan, const LoopFacts& facts,
                const StepClock& clock) {
    StepEnd e;
    const bool rolling = c.run.checkpointSeconds > 0 && facts.checkpointFolder &&
                         clock.sinceCheckpoint >= c.run.checkpointSeconds;
    e.checkpoint = plan.checkpointEvery || (rolling && !plan.lastStep);
    e.readBack = plan.readBack || e.checkpoint || clock.pendingSteps >= kMaxPendingSteps ||
                 clock.sinceReadback > kReadbackSeconds;
    e.flush = e.readBack && (plan.flush || clock.sinceFlush > kFlushSeconds);
    return e;
}

}  // namespace qklab
