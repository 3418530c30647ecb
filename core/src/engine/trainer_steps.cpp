// trainer_steps.cpp — one training step of a run: eagerly (forward with probes and maps,
// backward, clip; the update follows in the run loop) or through a CUDA graph (forward to
// update in one replay), and the attention maps before an event.
#include <ATen/autocast_mode.h>

#include <algorithm>
#include <limits>

#include "engine/trainer_impl.h"

namespace qklab {

// The model as it stands before this step's events, on this step's batch, under the settings
// without them: against the step's own (after-event) map only the switch differs. None when
// the events change nothing in the forward pass (LR, a dirty batch: same weights, same map).
std::vector<AttentionMap> Trainer::Impl::mapsBeforeEvents(int64_t step, const Batch& batch,
                                                          const StepSettings& after) {
    if (!mapMoments.wantsBefore(step)) return {};
    RunConfig without = config;
    without.events.erase(std::remove_if(without.events.begin(), without.events.end(),
                                        [&](const Event& e) { return e.step == step; }),
                         without.events.end());
    auto sw = switchesFor(settingsAt(without, step));
    const auto swAfter = switchesFor(after);
    if (sw.qkNorm == swAfter.qkNorm && sw.alpha == swAfter.alpha && sw.softcap == swAfter.softcap &&
        sw.softcapC == swAfter.softcapC)
        return {};
    sw.fused = false;  // the maps need the explicit softmax
    torch::NoGradGuard noGrad;
    std::vector<AttentionCapture> captures;
    {
        Bf16AutocastScope autocast(device, bf16);
        model->forward(batch.x.to(device), batch.y.to(device), sw, &captures);
    }
    if (bf16) at::autocast::clear_cache();
    auto maps = attentionMaps(step - 1, captures);
    labelMaps(maps, MapReason::BeforeEvent, batch.x);
    mapMoments.taken(step - 1);
    return maps;
}

namespace {

// The step's settings as the record shows them.
void describeStep(PendingStep& p, int64_t step, const StepSettings& s,
                  const AttentionSwitches& sw) {
    StepMetrics& m = p.metrics;
    m.step = step;
    m.lr = s.lr;
    m.alpha = s.alpha;
    m.softcapC = s.softcapC;
    m.seqLen = s.seqLen;
    m.attentionPath = sw.fused ? "fused" : "explicit";
    p.qkNormActive = s.qkNorm != QkNormVariant::None && s.alpha > 0;
}

}  // namespace

PendingStep Trainer::Impl::trainStep(int64_t step, const StepSettings& s, const Batch& batch,
                                     bool eventStep) {
    PendingStep p;
    auto sw = switchesFor(s);
    const bool probing = probingAt(step, eventStep);
    sw.fused = config.run.fusedAttention && fusedAttentionPossible(sw, probing);
    optimizer->setLr(s.lr);

    auto x = batch.x.to(device), y = batch.y.to(device);
    std::vector<AttentionCapture> captures;
    // bf16: the forward runs under autocast (matmuls in bf16, fp32 master weights); the
    // backward follows the forward's dtypes. Probes convert to fp32 themselves.
    ForwardResult result;
    {
        Bf16AutocastScope autocast(device, bf16);
        result = model->forward(x, y, sw, probing ? &captures : nullptr);
    }
    if (bf16) at::autocast::clear_cache();  // cached bf16 weight copies go stale after the update
    for (auto& prm : params) prm.mutable_grad() = torch::Tensor();  // zero_grad(set_to_none)
    result.loss.backward();
    const double clipTo =
        config.optim.gradClip > 0 ? config.optim.gradClip : std::numeric_limits<double>::infinity();
    p.gradNorm = clipGradNorm(params, clipTo);
    p.loss = result.loss.detach();
    p.outputLogits = result.outputLogitStats;

    if (probing) {
        probeSettings.softcap = sw.softcap;
        probeSettings.softcapC = sw.softcapC;
        computeProbes(step, captures, probeSettings, p.probeStats, p.histograms);
        if (const auto reason = mapMoments.reasonAt(step, eventStep, p.probeStats)) {
            p.maps = attentionMaps(step, captures);
            labelMaps(p.maps, *reason, batch.x);
            mapMoments.taken(step);
        }
        p.probed = true;
        captures.clear();  // free the (B, H, T, T) tensors before the update
    }
    describeStep(p, step, s, sw);
    return p;
}

// A step through the CUDA graph (forward, backward, clip and update in one replay), or
// nullopt: the step runs eagerly. Probe and event steps are never in the graph (they need the
// logits, or change the model). An anneal's frozen gains are part of the graph's key: their
// gradients are dropped between clip and update, as in the eager step.
std::optional<PendingStep> Trainer::Impl::graphStep(int64_t step, const StepSettings& s,
                                                    const Batch& batch, bool eventStep) {
    if (!graphs || eventStep || probingAt(step, eventStep)) return std::nullopt;
    const bool freezeGains = s.annealing && config.anneal.qkNorm.freezeGain;
    auto sw = switchesFor(s);
    sw.fused = config.run.fusedAttention && fusedAttentionPossible(sw, false);
    optimizer->setLr(s.lr);  // a device tensor: the graph reads the new value
    const GraphKey key{sw, batch.x.size(0), batch.x.size(1), freezeGains};
    const double clipTo =
        config.optim.gradClip > 0 ? config.optim.gradClip : std::numeric_limits<double>::infinity();
    // By value: a stand-in graph re-runs the body on replay.
    auto body = [this, sw, clipTo, freezeGains](const torch::Tensor& x, const torch::Tensor& y) {
        ForwardResult result;
        {
            // Off again even when a capture throws mid-forward.
            Bf16AutocastScope autocast(device, bf16);
            result = model->forward(x, y, sw, nullptr);
        }
        for (auto& prm : params) prm.mutable_grad() = torch::Tensor();
        result.loss.backward();
        auto gradNorm = clipGradNorm(params, clipTo);
        if (freezeGains)
            for (auto& g : gains) g.mutable_grad() = torch::Tensor();
        optimizer->step();
        return StepTensors{result.loss.detach(), gradNorm, result.outputLogitStats,
                           optimizer->lastUpdateNorm()};
    };
    // The autocast cache would keep bf16 weight copies made during the capture: off.
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    auto out = graphs->tryStep(key, batch.x.to(device), batch.y.to(device), body);
    at::autocast::set_autocast_cache_enabled(cache);
    if (!out) return std::nullopt;
    PendingStep p;
    p.loss = out->loss;
    p.gradNorm = out->gradNorm;
    p.outputLogits = out->outputLogits;
    p.updateNorm = out->updateNorm;
    p.graphed = true;
    describeStep(p, step, s, sw);
    return p;
}

}  // namespace qklab
