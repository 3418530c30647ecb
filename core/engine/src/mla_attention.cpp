// mla_attention.cpp — multi-head latent attention with QK-norm: the training path (keys
// materialised), the two decode caches, and QK-Clip's per-head scaling. See mla_attention.h.
#include "mla_attention.h"

#include <cmath>

#include "qklab/util/error.h"

namespace qklab {

namespace F = torch::nn::functional;

namespace {

torch::nn::Linear linear(int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

// 1/S(z) of the variant the absorbed decode factors out: RMS, or the L2 norm for l2_scale. z is
// (B, H, T, d); whole_rms takes one scalar over all heads. Same epsilon as qkNormalize, so the
// absorbed logits equal the materialised ones to rounding.
torch::Tensor inverseNorm(const torch::Tensor& z, QkNormVariant kind) {
    if (kind == QkNormVariant::L2Scale) return 1.0 / z.norm(2, -1, true).clamp_min(kQkNormEps);
    if (kind == QkNormVariant::WholeRms)
        return torch::rsqrt(z.pow(2).mean({1, 3}, true) + kQkNormEps);
    return torch::rsqrt(z.pow(2).mean(-1, true) + kQkNormEps);
}

// The RoPE parts are normalised without gains: plain RMS, or L2 for l2_scale.
torch::Tensor ropeNormalize(const torch::Tensor& z, QkNormVariant kind) {
    if (kind == QkNormVariant::L2Scale)
        return F::normalize(z, F::NormalizeFuncOptions().dim(-1).eps(kQkNormEps));
    return z * torch::rsqrt(z.pow(2).mean(-1, true) + kQkNormEps);
}

// q (B, H, n, d) against keys every head shares (B, T, d): one GEMM over the H * n query rows,
// never an H-fold expanded copy of the keys (the latent cache is read once per step).
torch::Tensor sharedKeyScores(const torch::Tensor& q, const torch::Tensor& keys) {
    const int64_t B = q.size(0), H = q.size(1), n = q.size(2);
    auto rows = q.reshape({B, H * n, q.size(3)});
    return torch::bmm(rows, keys.transpose(1, 2)).view({B, H, n, keys.size(1)});
}

}  // namespace

LatentAttentionImpl::LatentAttentionImpl(const RunConfig& c)
    : m_nHeads(c.model.nHeads),
      m_dHead(c.dHead()),
      m_dC(c.attention.mla.dC),
      m_dRope(c.attention.mla.dRope) {
    const int64_t C = c.model.dModel, H = m_nHeads, qOut = H * (m_dHead + m_dRope);
    m_kvDown = register_module("kv_down", linear(C, m_dC));
    m_kvNorm = register_parameter("kv_norm", torch::ones({m_dC}));
    m_kUp = register_module("k_up", linear(m_dC, H * m_dHead));
    m_vUp = register_module("v_up", linear(m_dC, H * m_dHead));
    if (m_dRope > 0) m_kRope = register_module("k_rope", linear(C, m_dRope));
    if (c.attention.mla.qLora > 0) {
        m_qDown = register_module("q_down", linear(C, c.attention.mla.qLora));
        m_qNorm = register_parameter("q_norm", torch::ones({c.attention.mla.qLora}));
        m_qUp = register_module("q_up", linear(c.attention.mla.qLora, qOut));
    } else {
        m_q = register_module("q", linear(C, qOut));
    }
    m_proj = register_module("proj", linear(H * m_dHead, C));
    const int64_t groups = c.attention.qkGainPerHead ? H : 1;
    m_qGain = register_parameter("q_gain", torch::ones({groups, m_dHead}));
    m_kGain = register_parameter("k_gain", torch::ones({groups, m_dHead}));
    m_wholeQGain = register_parameter("whole_q_gain", torch::ones({H * m_dHead}));
    m_wholeKGain = register_parameter("whole_k_gain", torch::ones({H * m_dHead}));
    const double T = static_cast<double>(c.model.seqLen);
    m_l2Scale = register_parameter("l2_scale", torch::full({H}, std::log2(T * T - T)));
    // Registered last: a run without a gate draws the same initial weights as before it existed.
    if (c.attention.gate != AttentionGate::None)
        m_gate = register_module("gate", OutputGate(c.attention.gate, C, H, m_dHead));
    if (c.attention.sigmaReparam != SigmaReparamScope::None) registerSigmas();
}

// After the gate, for the same reason; u and v are drawn by the Transformer, after all else.
void LatentAttentionImpl::registerSigmas() {
    auto add = [this](const std::string& name, torch::nn::Linear& lin, SpectralReparam& sr) {
        if (lin) sr = register_module(name + "_sigma", SpectralReparam(lin->weight));
    };
    add("kv_down", m_kvDown, m_kvDownSigma);
    add("k_up", m_kUp, m_kUpSigma);
    add("v_up", m_vUp, m_vUpSigma);
    add("k_rope", m_kRope, m_kRopeSigma);
    add("q_down", m_qDown, m_qDownSigma);
    add("q_up", m_qUp, m_qUpSigma);
    add("q", m_q, m_qSigma);
    add("proj", m_proj, m_projSigma);
}

std::vector<torch::Tensor> LatentAttentionImpl::qkGains() {
    return {m_qGain, m_kGain, m_wholeQGain, m_wholeKGain, m_l2Scale};
}

LatentAttentionImpl::Projection LatentAttentionImpl::project(const torch::Tensor& x,
                                                             const torch::Tensor& cos,
                                                             const torch::Tensor& sin) {
    const int64_t B = x.size(0), T = x.size(1), H = m_nHeads;
    Projection p;
    p.latent = rmsNorm(reparamLinear(m_kvDown, m_kvDownSigma, x), m_kvNorm);
    auto q = m_qUp ? reparamLinear(m_qUp, m_qUpSigma,
                                   rmsNorm(reparamLinear(m_qDown, m_qDownSigma, x), m_qNorm))
                   : reparamLinear(m_q, m_qSigma, x);
    q = q.view({B, T, H, m_dHead + m_dRope}).transpose(1, 2);  // (B, H, T, dh + dr)
    p.qContent = q.narrow(-1, 0, m_dHead);
    if (m_dRope > 0) {
        p.qRope = applyRope(q.narrow(-1, m_dHead, m_dRope), cos, sin);
        p.kRope =
            applyRope(reparamLinear(m_kRope, m_kRopeSigma, x).view({B, 1, T, m_dRope}), cos, sin);
    }
    return p;
}

torch::Tensor LatentAttentionImpl::contentKeys(const torch::Tensor& latent) {
    const int64_t B = latent.size(0), T = latent.size(1);
    return reparamLinear(m_kUp, m_kUpSigma, latent).view({B, T, m_nHeads, m_dHead}).transpose(1, 2);
}

// Values never materialise per key: (probs @ c) W_UV per head, the absorbed value path.
torch::Tensor LatentAttentionImpl::valuesFrom(const torch::Tensor& probs,
                                              const torch::Tensor& latent) {
    const int64_t B = probs.size(0), H = probs.size(1), n = probs.size(2);
    auto context = torch::bmm(probs.reshape({B, H * n, probs.size(3)}), latent)
                       .view({B, H, n, m_dC});  // (B, H, n, d_c)
    auto wv = reparamWeight(m_vUp, m_vUpSigma).view({1, m_nHeads, m_dHead, m_dC});
    return torch::matmul(context, wv.transpose(2, 3));  // (B, H, n, dh)
}

bool LatentAttentionImpl::normsKeys(const AttentionSwitches& sw) const {
    return sw.qkNorm != QkNormVariant::None && sw.alpha > 0.0;
}

bool LatentAttentionImpl::normsQueries(const AttentionSwitches& sw) const {
    return normsKeys(sw) && sw.normOn != QkNormTarget::K;
}

torch::Tensor LatentAttentionImpl::normContent(const torch::Tensor& x, const AttentionSwitches& sw,
                                               bool query) {
    if (!(query ? normsQueries(sw) : normsKeys(sw))) return x;
    auto normed =
        qkNormalize(x, sw.qkNorm, query ? m_qGain : m_kGain, query ? m_wholeQGain : m_wholeKGain);
    return mixNormed(normed, x, sw.alpha);
}

torch::Tensor LatentAttentionImpl::normRope(const torch::Tensor& x, const AttentionSwitches& sw,
                                            bool query) {
    if (!(query ? normsQueries(sw) : normsKeys(sw))) return x;
    return mixNormed(ropeNormalize(x, sw.qkNorm), x, sw.alpha);
}

torch::Tensor LatentAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                           const torch::Tensor& sin, const torch::Tensor& mask,
                                           const AttentionSwitches& sw, AttentionCapture* capture) {
    const int64_t B = x.size(0), T = x.size(1), H = m_nHeads;
    const Projection p = project(x, cos, sin);
    const auto kC = contentKeys(p.latent);
    auto q = normContent(p.qContent, sw, true), k = normContent(kC, sw, false);
    torch::Tensor qRaw = p.qContent, kRaw = kC;
    if (m_dRope > 0) {
        const std::vector<int64_t> shape{B, H, T, m_dRope};
        q = torch::cat({q, normRope(p.qRope, sw, true)}, -1);
        k = torch::cat({k, normRope(p.kRope, sw, false).expand(shape)}, -1);
        if (capture) {
            qRaw = torch::cat({qRaw, p.qRope}, -1);
            kRaw = torch::cat({kRaw, p.kRope.expand(shape)}, -1);
        }
    }
    auto v = reparamLinear(m_vUp, m_vUpSigma, p.latent).view({B, T, H, m_dHead}).transpose(1, 2);
    auto y = attendCausal(q, k, v, mask, sw, m_l2Scale, capture);  // (B, H, T, dh)
    if (m_gate) y = m_gate(y, x);
    if (capture) {
        capture->q = q.detach();
        capture->k = k.detach();
        capture->qRaw = qRaw.detach();
        capture->kRaw = kRaw.detach();
    }
    return reparamLinear(m_proj, m_projSigma, y.transpose(1, 2).reshape({B, T, H * m_dHead}));
}

// ---- the absorbed form ---------------------------------------------------------------------

torch::Tensor LatentAttentionImpl::absorbQuery(const torch::Tensor& qContent,
                                               const AttentionSwitches& sw) {
    if (normsKeys(sw) && sw.alpha < 1.0)
        throw Error(ErrorCode::Unsupported,
                    "the absorbed MLA decode needs the QK-norm fully on or fully off (alpha = "
                    "1 or 0), not mid-anneal (alpha = " +
                        std::to_string(sw.alpha) + "); use the materialised cache");
    auto q = qContent;
    const int64_t groups = m_qGain.size(0);
    auto gain = [&](const torch::Tensor& g, const torch::Tensor& whole) {
        if (sw.qkNorm == QkNormVariant::RmsAffine) return g.view({1, groups, 1, m_dHead});
        if (sw.qkNorm == QkNormVariant::WholeRms) return whole.view({1, m_nHeads, 1, m_dHead});
        return torch::Tensor();
    };
    if (normsQueries(sw)) {
        // a_q scales the query (d_head values per head), never the (Tq, Tk) scores.
        q = q * inverseNorm(qContent, sw.qkNorm);
        if (auto g = gain(m_qGain, m_wholeQGain); g.defined()) q = q * g;
    }
    if (normsKeys(sw))
        if (auto g = gain(m_kGain, m_wholeKGain); g.defined()) q = q * g;
    // q~ = (gamma_q * gamma_k * q) W_UK per head: W_UK rows of head h are (dh, d_c).
    auto wk = reparamWeight(m_kUp, m_kUpSigma).view({1, m_nHeads, m_dHead, m_dC});
    return torch::matmul(q, wk);  // (B, H, T, d_c)
}

torch::Tensor LatentAttentionImpl::keyInvRms(const torch::Tensor& latent,
                                             const AttentionSwitches& sw) {
    // The key is materialised once, when its token enters the cache, for its one scalar.
    return inverseNorm(contentKeys(latent), sw.qkNorm).squeeze(-1);  // (B, G, T)
}

torch::Tensor LatentAttentionImpl::absorbedContentLogits(const torch::Tensor& qContent,
                                                         const torch::Tensor& latent,
                                                         const torch::Tensor& invRms,
                                                         const AttentionSwitches& sw) {
    auto scores = sharedKeyScores(absorbQuery(qContent, sw), latent);  // (B, H, Tq, Tk)
    if (invRms.defined()) scores = scores * invRms.unsqueeze(2);
    return scores;
}

torch::Tensor LatentAttentionImpl::materialisedLogits(const torch::Tensor& x,
                                                      const torch::Tensor& cos,
                                                      const torch::Tensor& sin,
                                                      const AttentionSwitches& sw) {
    const Projection p = project(x, cos, sin);
    auto raw = torch::matmul(normContent(p.qContent, sw, true),
                             normContent(contentKeys(p.latent), sw, false).transpose(2, 3));
    if (m_dRope > 0)
        raw = raw + torch::matmul(normRope(p.qRope, sw, true),
                                  normRope(p.kRope, sw, false).transpose(2, 3));
    return raw * logitScaleTensor(sw, m_l2Scale);
}

torch::Tensor LatentAttentionImpl::absorbedLogits(const torch::Tensor& x, const torch::Tensor& cos,
                                                  const torch::Tensor& sin,
                                                  const AttentionSwitches& sw) {
    const Projection p = project(x, cos, sin);
    const auto invRms = normsKeys(sw) ? keyInvRms(p.latent, sw) : torch::Tensor();
    auto raw = absorbedContentLogits(p.qContent, p.latent, invRms, sw);
    if (m_dRope > 0)
        raw = raw + torch::matmul(normRope(p.qRope, sw, true),
                                  normRope(p.kRope, sw, false).transpose(2, 3));
    return raw * logitScaleTensor(sw, m_l2Scale);
}

torch::Tensor LatentAttentionImpl::maxLogitPerHead(const torch::Tensor& x, const torch::Tensor& cos,
                                                   const torch::Tensor& sin,
                                                   const AttentionSwitches& sw) {
    return maxCausalLogitPerHead(materialisedLogits(x, cos, sin, sw));
}

void LatentAttentionImpl::clipHead(int64_t head, double factor) {
    TORCH_CHECK(!m_projSigma, "QK-Clip with attention.sigma_reparam is refused by validation");
    auto& wq = (m_qUp ? m_qUp : m_q)->weight;  // rows per head: [content dh | rope dr]
    const int64_t row = head * (m_dHead + m_dRope);
    wq.narrow(0, row, m_dHead).mul_(factor);
    if (m_dRope > 0) wq.narrow(0, row + m_dHead, m_dRope).mul_(factor * factor);
    m_kUp->weight.narrow(0, head * m_dHead, m_dHead).mul_(factor);
}

std::vector<QuackPair> LatentAttentionImpl::quackPairs(double initStd) {
    const int64_t H = m_nHeads, D = m_dHead, R = m_dRope;
    const auto& wq = (m_qUp ? m_qUp : m_q)->weight;  // rows per head: [content dh | rope dr]
    std::vector<QuackPair> out{
        quackPair({wq, 0, 0, H, D, D + R}, {m_kUp->weight, 0, 0, H, D, D}, initStd)};
    if (R > 0)
        out.push_back(
            quackPair({wq, 0, D, H, R, D + R}, {m_kRope->weight, 0, 0, 1, R, R}, initStd));
    return out;
}

// ---- decode --------------------------------------------------------------------------------

int64_t LatentAttentionImpl::keyScalarGroups(const RunConfig& c, const AttentionSwitches& sw) {
    if (sw.qkNorm == QkNormVariant::None || sw.alpha <= 0.0) return 0;
    return sw.qkNorm == QkNormVariant::WholeRms ? 1 : c.model.nHeads;
}

void LatentAttentionImpl::allocateCache(LayerCache& cache, int64_t batch, int64_t capacity,
                                        DecodeCache mode, const AttentionSwitches& sw,
                                        const torch::TensorOptions& options) const {
    cache.latent = torch::zeros({batch, capacity, m_dC}, options);
    if (m_dRope > 0) cache.ropeKey = torch::zeros({batch, capacity, m_dRope}, options);
    if (mode == DecodeCache::Materialised) {
        cache.contentKeys = torch::zeros({batch, m_nHeads, capacity, m_dHead}, options);
    } else if (sw.qkNorm != QkNormVariant::None && sw.alpha > 0.0) {
        const int64_t groups = sw.qkNorm == QkNormVariant::WholeRms ? 1 : m_nHeads;
        cache.keyInvRms = torch::zeros({batch, groups, capacity}, options);
    }
}

torch::Tensor LatentAttentionImpl::decode(const torch::Tensor& x, const torch::Tensor& cos,
                                          const torch::Tensor& sin, const AttentionSwitches& sw,
                                          LayerCache& cache, int64_t past, DecodeCache mode) {
    const int64_t B = x.size(0), n = x.size(1), total = past + n;
    const Projection p = project(x, cos, sin);
    cache.latent.narrow(1, past, n).copy_(p.latent);
    const auto latent = cache.latent.narrow(1, 0, total);
    torch::Tensor raw;
    if (mode == DecodeCache::Materialised) {
        cache.contentKeys.narrow(2, past, n).copy_(normContent(contentKeys(p.latent), sw, false));
        raw = torch::matmul(normContent(p.qContent, sw, true),
                            cache.contentKeys.narrow(2, 0, total).transpose(2, 3));
    } else {
        torch::Tensor invRms;
        if (cache.keyInvRms.defined()) {
            cache.keyInvRms.narrow(2, past, n).copy_(keyInvRms(p.latent, sw));
            invRms = cache.keyInvRms.narrow(2, 0, total);
        }
        raw = absorbedContentLogits(p.qContent, latent, invRms, sw);
    }
    if (m_dRope > 0) {
        cache.ropeKey.narrow(1, past, n).copy_(normRope(p.kRope, sw, false).squeeze(1));
        raw = raw + sharedKeyScores(normRope(p.qRope, sw, true), cache.ropeKey.narrow(1, 0, total));
    }
    raw = raw * logitScaleTensor(sw, m_l2Scale);
    auto probs = torch::softmax(softcapLogits(raw, sw) + decodeMask(past, n, raw.options()), -1);
    auto y = valuesFrom(probs, latent);  // (B, H, n, dh)
    if (m_gate) y = m_gate(y, x);
    return reparamLinear(m_proj, m_projSigma,
                         y.transpose(1, 2).reshape({B, n, m_nHeads * m_dHead}));
}

}  // namespace qklab
