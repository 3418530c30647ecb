// trainer_steps.cpp — one training step of a run: eagerly (forward with probes and maps,
// backward, clip; the update follows in the run loop) or through a CUDA graph (forward to
// update in one replay), and the attention maps before an event.
#include <ATen/autocast_mode.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

#include "trainer_impl.h"

namespace qklab {

// The model as it stands before this step's events, on this step's batch, under the settings
// without them (the plan's beforeSwitches): against the step's own (after-event) map only the
// switch differs.
std::vector<AttentionMap> Trainer::Impl::mapsBeforeEvents(const StepPlan& plan,
                                                          const Batch& batch) {
    torch::NoGradGuard noGrad;
    std::vector<AttentionCapture> captures;
    {
        Bf16AutocastScope autocast(device, bf16);
        model->forward(batch.x.to(device), batch.y.to(device), plan.beforeSwitches, &captures);
    }
    if (bf16) at::autocast::clear_cache();
    auto maps = attentionMaps(plan.step - 1, captures);
    labelMaps(maps, MapReason::BeforeEvent, batch.x);
    mapMoments.taken(plan.step - 1);
    return maps;
}

namespace {

// The step's settings as the record shows them.
void describeStep(PendingStep& p, const StepPlan& plan) {
    const StepSettings& s = plan.settings;
    StepMetrics& m = p.metrics;
    m.step = plan.step;
    m.lr = s.lr;
    m.alpha = s.alpha;
    m.softcapC = s.softcapC;
    m.seqLen = s.seqLen;
    m.attentionPath = plan.switches.fused ? "fused" : "explicit";
    p.qkNormActive = s.qkNorm != QkNormVariant::None && s.alpha > 0;
}

}  // namespace

PendingStep Trainer::Impl::trainStep(const StepPlan& plan, const Batch& batch) {
    PendingStep p;
    const AttentionSwitches& sw = plan.switches;
    const bool probing = plan.probe;
    optimizer->setLr(plan.settings.lr);

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
        computeProbes(plan.step, captures, probeSettings, p.probeStats, p.histograms);
        if (const auto reason = mapMoments.reasonAt(plan.step, plan.events, p.probeStats)) {
            p.maps = attentionMaps(plan.step, captures);
            labelMaps(p.maps, *reason, batch.x);
            mapMoments.taken(plan.step);
        }
        p.probed = true;
        captures.clear();  // free the (B, H, T, T) tensors before the update
    }
    describeStep(p, plan);
    return p;
}

// A step through the CUDA graph (forward, backward, clip and update in one replay), or
// nullopt: the step runs eagerly. Only steps the plan lets try (never probe or event steps: they
// need the logits, or change the model). An anneal's frozen gains are part of the graph's key:
// their gradients are dropped between clip and update, as in the eager step.
std::optional<PendingStep> Trainer::Impl::graphStep(const StepPlan& plan, const Batch& batch) {
    if (!plan.tryGraph) return std::nullopt;
    const bool freezeGains = plan.freezeGains;
    const AttentionSwitches sw = plan.switches;
    optimizer->setLr(plan.settings.lr);  // a device tensor: the graph reads the new value
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
        stepOptimizer();
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
    describeStep(p, plan);
    return p;
}

// The step through its CUDA graph where it replays, else eagerly; a failed capture is reported
// once (the run goes on without graphs).
PendingStep Trainer::Impl::trainOrReplay(const StepPlan& plan, const Batch& batch) {
    auto graphed = graphStep(plan, batch);
    if (graphs && !graphs->failure().empty() && !graphFailureReported) {
        std::fprintf(stderr, "qklab: %s; step %lld on runs without graphs\n",
                     graphs->failure().c_str(), static_cast<long long>(plan.step));
        graphFailureReported = true;
    }
    return graphed ? std::move(*graphed) : trainStep(plan, batch);
}

LoopFacts Trainer::Impl::loopFacts(bool events) const {
    LoopFacts f;
    f.events = events;
    f.lastMapStep = mapMoments.lastMapStep();
    f.graphs = graphs != nullptr;
    f.deferredReadback = deferredReadback;
    f.fusedKernel = kHaveFusedAttention;
    f.checkpointFolder = !checkpointDir.empty();
    return f;
}

}  // namespace qklab
