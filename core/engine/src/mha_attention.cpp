// mha_attention.cpp — multi-head causal self-attention: projection, QK-norm, RoPE, the shared
// causal softmax, the key/value decode cache and QK-Clip's per-head scaling. See mha_attention.h.
#include "mha_attention.h"

#include <cmath>

namespace qklab {

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const RunConfig& c)
    : m_nHeads(c.model.nHeads), m_dHead(c.dHead()), m_rope(c.model.rope) {
    const int64_t C = c.model.dModel;
    m_qkv =
        register_module("qkv", torch::nn::Linear(torch::nn::LinearOptions(C, 3 * C).bias(false)));
    m_proj = register_module("proj", torch::nn::Linear(torch::nn::LinearOptions(C, C).bias(false)));
    const int64_t groups = c.attention.qkGainPerHead ? m_nHeads : 1;
    // All QK gains exist whatever the variant, so an intervention can switch variants mid-run;
    // an unused gain gets no gradient and AdamW leaves it alone.
    m_qGain = register_parameter("q_gain", torch::ones({groups, m_dHead}));
    m_kGain = register_parameter("k_gain", torch::ones({groups, m_dHead}));
    m_wholeQGain = register_parameter("whole_q_gain", torch::ones({C}));
    m_wholeKGain = register_parameter("whole_k_gain", torch::ones({C}));
    // Henry et al. 2020 initialise the learnable scale to log2(T^2 - T).
    const double T = static_cast<double>(c.model.seqLen);
    m_l2Scale = register_parameter("l2_scale", torch::full({m_nHeads}, std::log2(T * T - T)));
    // Registered last: a run without a gate draws the same initial weights as before it existed.
    if (c.attention.gate != AttentionGate::None)
        m_gate = register_module("gate", OutputGate(c.attention.gate, C, m_nHeads, m_dHead));
    // After the gate, for the same reason; u and v are drawn by the Transformer, after all else.
    if (c.attention.sigmaReparam != SigmaReparamScope::None) {
        m_qkvSigma = register_module("qkv_sigma", SpectralReparam(m_qkv->weight, 3));
        m_projSigma = register_module("proj_sigma", SpectralReparam(m_proj->weight));
    }
}

std::vector<torch::Tensor> CausalSelfAttentionImpl::qkGains() {
    return {m_qGain, m_kGain, m_wholeQGain, m_wholeKGain, m_l2Scale};
}

CausalSelfAttentionImpl::Projection CausalSelfAttentionImpl::project(const torch::Tensor& x,
                                                                     const torch::Tensor& cos,
                                                                     const torch::Tensor& sin,
                                                                     const AttentionSwitches& sw) {
    const int64_t B = x.size(0), T = x.size(1), H = m_nHeads, D = m_dHead;
    auto qkv = reparamLinear(m_qkv, m_qkvSigma, x)
                   .view({B, T, 3, H, D})
                   .permute({2, 0, 3, 1, 4});  // (3, B, H, T, D)
    Projection p{qkv[0], qkv[1], qkv[2], qkv[0], qkv[1]};
    const bool norming = sw.qkNorm != QkNormVariant::None && sw.alpha > 0.0;
    auto applyNorm = [&]() {
        if (!norming) return;
        if (sw.normOn != QkNormTarget::K)
            p.q = mixNormed(qkNormalize(p.q, sw.qkNorm, m_qGain, m_wholeQGain), p.q, sw.alpha);
        p.k = mixNormed(qkNormalize(p.k, sw.qkNorm, m_kGain, m_wholeKGain), p.k, sw.alpha);
        if (sw.normOn == QkNormTarget::QKV)
            p.v = mixNormed(p.v * torch::rsqrt(p.v.pow(2).mean(-1, true) + kQkNormEps), p.v,
                            sw.alpha);
    };
    if (!sw.normAfterRope) applyNorm();
    if (m_rope) {
        p.q = applyRope(p.q, cos, sin);
        p.k = applyRope(p.k, cos, sin);
    }
    if (sw.normAfterRope) applyNorm();
    return p;
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                               const torch::Tensor& sin, const torch::Tensor& mask,
                                               const AttentionSwitches& sw,
                                               AttentionCapture* capture) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
    const Projection p = project(x, cos, sin, sw);
    auto y = attendCausal(p.q, p.k, p.v, mask, sw, m_l2Scale, capture);  // (B, H, T, D)
    if (m_gate) y = m_gate(y, x);
    if (capture) {
        capture->q = p.q.detach();
        capture->k = p.k.detach();
        capture->qRaw = p.qRaw.detach();
        capture->kRaw = p.kRaw.detach();
    }
    return reparamLinear(m_proj, m_projSigma, y.transpose(1, 2).reshape({B, T, C}));
}

void CausalSelfAttentionImpl::allocateCache(LayerCache& cache, int64_t batch, int64_t capacity,
                                            DecodeCache, const AttentionSwitches&,
                                            const torch::TensorOptions& options) const {
    cache.k = torch::zeros({batch, m_nHeads, capacity, m_dHead}, options);
    cache.v = torch::zeros({batch, m_nHeads, capacity, m_dHead}, options);
}

torch::Tensor CausalSelfAttentionImpl::decode(const torch::Tensor& x, const torch::Tensor& cos,
                                              const torch::Tensor& sin, const AttentionSwitches& sw,
                                              LayerCache& cache, int64_t past, DecodeCache) {
    const int64_t B = x.size(0), n = x.size(1), C = x.size(2);
    const Projection p = project(x, cos, sin, sw);
    cache.k.narrow(2, past, n).copy_(p.k);
    cache.v.narrow(2, past, n).copy_(p.v);
    auto keys = cache.k.narrow(2, 0, past + n), values = cache.v.narrow(2, 0, past + n);
    auto raw = torch::matmul(p.q * logitScaleTensor(sw, m_l2Scale), keys.transpose(2, 3));
    auto probs = torch::softmax(softcapLogits(raw, sw) + decodeMask(past, n, raw.options()), -1);
    auto y = torch::matmul(probs, values);  // (B, H, n, D)
    if (m_gate) y = m_gate(y, x);
    return reparamLinear(m_proj, m_projSigma, y.transpose(1, 2).reshape({B, n, C}));
}

torch::Tensor CausalSelfAttentionImpl::maxLogitPerHead(const torch::Tensor& x,
                                                       const torch::Tensor& cos,
                                                       const torch::Tensor& sin,
                                                       const AttentionSwitches& sw) {
    const Projection p = project(x, cos, sin, sw);
    auto raw = torch::matmul(p.q * logitScaleTensor(sw, m_l2Scale), p.k.transpose(2, 3));
    return maxCausalLogitPerHead(raw);
}

std::vector<QuackPair> CausalSelfAttentionImpl::quackPairs(double initStd) {
    // W_qkv rows: [q heads | k heads | v heads], as clipHead reads them.
    const int64_t H = m_nHeads, D = m_dHead;
    const auto& w = m_qkv->weight;
    return {quackPair({w, 0, 0, H, D, D}, {w, H * D, 0, H, D, D}, initStd)};
}

void CausalSelfAttentionImpl::clipHead(int64_t head, double factor) {
    // W_qkv rows: [q heads | k heads | v heads], each head d_head rows.
    const int64_t C = m_nHeads * m_dHead;
    TORCH_CHECK(!m_qkvSigma, "QK-Clip with attention.sigma_reparam is refused by validation");
    auto& w = m_qkv->weight;
    w.narrow(0, head * m_dHead, m_dHead).mul_(factor);
    w.narrow(0, C + head * m_dHead, m_dHead).mul_(factor);
}

}  // namespace qklab
