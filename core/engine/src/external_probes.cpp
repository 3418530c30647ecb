// external_probes.cpp — qklab's probes on queries and keys another model computed
// (qklab/engine/external_probes.h): the layer's logits are rebuilt as the model's softmax saw them,
// then reduced by the engine's own computeProbes and attentionMaps.
#include "qklab/engine/external_probes.h"

#include <torch/torch.h>

#include <limits>
#include <string>

#include "attention.h"
#include "probes.h"
#include "qklab/analysis/histogram_bins.h"
#include "qklab/util/error.h"

namespace qklab {
namespace {

void checkLayer(const ExternalLayer& l, size_t index) {
    const std::string where = "layer " + std::to_string(index);
    if (!l.q || !l.k || !l.qRaw || !l.kRaw)
        throw Error(ErrorCode::InvalidRequest, where + ": q, k, q_raw and k_raw are all needed");
    for (const at::Tensor* t : {l.q, l.k, l.qRaw, l.kRaw}) {
        if (t->dim() != 4 || !t->is_floating_point())
            throw Error(ErrorCode::InvalidRequest,
                        where + ": q and k must be floating (B, H, T, D) tensors, got " +
                            std::to_string(t->dim()) + " dimensions");
        if (!t->sizes().slice(0, 3).equals(l.q->sizes().slice(0, 3)))
            throw Error(ErrorCode::InvalidRequest,
                        where + ": q, k, q_raw and k_raw need the same (B, H, T)");
    }
    if (l.hidden && (l.hidden->dim() != 3 || !l.hidden->is_floating_point() ||
                     l.hidden->size(0) != l.q->size(0) || l.hidden->size(1) != l.q->size(2)))
        throw Error(ErrorCode::InvalidRequest,
                    where + ": hidden must be the block's floating (B, T, C) output");
    if (l.k->size(3) != l.q->size(3))
        throw Error(ErrorCode::InvalidRequest, where + ": q and k need the same head width D");
    if (!(l.scale > 0) || !(l.softcap >= 0) || l.softcap == std::numeric_limits<double>::infinity())
        throw Error(ErrorCode::InvalidRequest,
                    where + ": the scale must be > 0 and the softcap >= 0 and finite");
}

// The capture qklab's own attention makes, from the external layer's q and k, in fp32.
AttentionCapture captureOf(const ExternalLayer& l) {
    AttentionCapture cap;
    cap.q = l.q->detach().to(torch::kFloat32);
    cap.k = l.k->detach().to(torch::kFloat32);
    cap.qRaw = l.qRaw->detach().to(torch::kFloat32);
    cap.kRaw = l.kRaw->detach().to(torch::kFloat32);
    const int64_t T = cap.q.size(2);
    cap.raw = torch::matmul(cap.q, cap.k.transpose(-2, -1)) * l.scale;  // (B, H, T, T)
    cap.capped = l.softcap > 0 ? torch::tanh(cap.raw / l.softcap) * l.softcap : cap.raw;
    auto future = torch::ones({T, T}, cap.raw.options().dtype(torch::kBool)).triu(1);
    cap.probs = torch::softmax(cap.capped.masked_fill(future, -INFINITY), -1);
    // probes.cpp reduces it in fp32 beside the logits' statistics, so on their device.
    if (l.hidden) cap.hidden = l.hidden->detach().to(cap.q.device());
    return cap;
}

}  // namespace

struct ExternalProber::Impl {
    ProbeConfig probes;
    MapMoments mapMoments;
};

ExternalProber::ExternalProber(const ProbeConfig& probes)
    : m_impl(new Impl{probes, MapMoments(probes.every, probes.attnMapEvery)}) {}

ExternalProber::~ExternalProber() = default;

ExternalProbes ExternalProber::probe(int64_t step, const std::vector<ExternalLayer>& layers) {
    torch::NoGradGuard noGrad;
    ExternalProbes out;
    std::vector<AttentionCapture> captures;
    for (size_t i = 0; i < layers.size(); ++i) {
        checkLayer(layers[i], i);
        captures.push_back(captureOf(layers[i]));
        // One layer at a time: each layer may have its own cap (the settings carry one).
        ProbeSettings settings;
        settings.bins = histogramBinsOf(m_impl->probes);
        settings.softcap = layers[i].softcap > 0 ? SoftcapKind::Tanh : SoftcapKind::None;
        settings.softcapC = layers[i].softcap;
        const size_t firstStat = out.stats.size(), firstHist = out.histograms.size();
        computeProbes(step, {captures.back()}, settings, out.stats, out.histograms);
        for (size_t r = firstStat; r < out.stats.size(); ++r)
            out.stats[r].layer = static_cast<int32_t>(i);
        for (size_t h = firstHist; h < out.histograms.size(); ++h)
            out.histograms[h].layer = static_cast<int32_t>(i);
    }
    if (const auto reason = m_impl->mapMoments.reasonAt(step, false, out.stats)) {
        out.maps = attentionMaps(step, captures);
        for (AttentionMap& m : out.maps) m.reason = *reason;
        m_impl->mapMoments.taken(step);
    }
    return out;
}

}  // namespace qklab
