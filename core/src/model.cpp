// model.cpp — the transformer: embeddings, pre-RMSNorm blocks with explicit causal attention
// (projection, QK-norm variant with anneal, RoPE, scale, softcap, mask, softmax), GELU MLP,
// final norm, LM head, cross-entropy with optional z-loss and output softcap.
#include "model.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <cmath>

#include "qklab/error.h"

namespace qklab {

namespace F = torch::nn::functional;

// Guarded across LibTorch 1.13 (Debian) and 2.4+, where a per-device API replaced
// set_enabled/set_cpu_enabled.
void setBf16Autocast(const torch::Device& device, bool on) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(device.type(), on);
    if (on) at::autocast::set_autocast_dtype(device.type(), at::kBFloat16);
#else
    if (device.is_cuda()) {
        at::autocast::set_enabled(on);
        if (on) at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    } else {
        at::autocast::set_cpu_enabled(on);
        if (on) at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    }
#endif
}

bool fusedAttentionPossible(const AttentionSwitches& sw, bool probing) {
    return kHaveFusedAttention && !probing && sw.softcap == SoftcapKind::None;
}

torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
    return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight;
}

namespace {

// Rotate-half RoPE (GPT-NeoX layout). x: (B, H, T, dh); cos/sin: (T, dh).
torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos,
                        const torch::Tensor& sin) {
    const int64_t half = x.size(-1) / 2;
    auto x1 = x.narrow(-1, 0, half);
    auto x2 = x.narrow(-1, half, half);
    return x * cos + torch::cat({-x2, x1}, -1) * sin;
}

// softmax(q k^T + causal mask) v through the fused kernel; q carries the logit scale already.
torch::Tensor fusedCausalAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v) {
#ifdef QKLAB_HAVE_FUSED_ATTENTION
    return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                            /*is_causal=*/true, /*scale=*/1.0);
#else
    (void)k;
    (void)v;
    TORCH_CHECK(false, "fused attention needs LibTorch 2.1 or newer");
    return q;
#endif
}

torch::Tensor mix(const torch::Tensor& normed, const torch::Tensor& raw, double alpha) {
    if (alpha >= 1.0) return normed;
    return normed * alpha + raw * (1.0 - alpha);
}

}  // namespace

// ---- attention ---------------------------------------------------------------------------

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
}

std::vector<torch::Tensor> CausalSelfAttentionImpl::qkGains() {
    return {m_qGain, m_kGain, m_wholeQGain, m_wholeKGain, m_l2Scale};
}

torch::Tensor CausalSelfAttentionImpl::normalize(const torch::Tensor& x, const torch::Tensor& gain,
                                                 QkNormVariant kind,
                                                 const torch::Tensor& wholeGain) {
    constexpr double eps = 1e-6;
    const int64_t groups = gain.defined() ? gain.size(0) : 1;
    switch (kind) {
        case QkNormVariant::Rms:
            return x * torch::rsqrt(x.pow(2).mean(-1, true) + eps);
        case QkNormVariant::RmsAffine:
            return x * torch::rsqrt(x.pow(2).mean(-1, true) + eps) *
                   gain.view({1, groups, 1, m_dHead});
        case QkNormVariant::LayerNorm:
            return torch::layer_norm(x, {m_dHead}, {}, {}, 1e-5) *
                   gain.view({1, groups, 1, m_dHead});
        case QkNormVariant::L2Scale:
            return F::normalize(x, F::NormalizeFuncOptions().dim(-1).eps(eps));
        case QkNormVariant::WholeRms:  // over the whole projection (all heads at once), OLMo 2
            return x * torch::rsqrt(x.pow(2).mean({1, 3}, true) + eps) *
                   wholeGain.view({1, m_nHeads, 1, m_dHead});
        case QkNormVariant::None:
            break;
    }
    return x;
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                               const torch::Tensor& sin, const torch::Tensor& mask,
                                               const AttentionSwitches& sw,
                                               AttentionCapture* capture) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), H = m_nHeads, D = m_dHead;
    auto qkv = m_qkv(x).view({B, T, 3, H, D}).permute({2, 0, 3, 1, 4});  // (3, B, H, T, D)
    torch::Tensor q = qkv[0], k = qkv[1], v = qkv[2];
    const torch::Tensor qRaw = q, kRaw = k;

    const bool norming = sw.qkNorm != QkNormVariant::None && sw.alpha > 0.0;
    auto applyNorm = [&]() {
        if (!norming) return;
        if (sw.normOn != QkNormTarget::K)
            q = mix(normalize(q, m_qGain, sw.qkNorm, m_wholeQGain), q, sw.alpha);
        k = mix(normalize(k, m_kGain, sw.qkNorm, m_wholeKGain), k, sw.alpha);
        if (sw.normOn == QkNormTarget::QKV)
            v = mix(v * torch::rsqrt(v.pow(2).mean(-1, true) + 1e-6), v, sw.alpha);
    };
    if (!sw.normAfterRope) applyNorm();
    if (m_rope) {
        q = applyRope(q, cos, sin);
        k = applyRope(k, cos, sin);
    }
    if (sw.normAfterRope) applyNorm();

    // The scale goes on q (B,H,T,D) rather than on the (B,H,T,T) logits: same math, less work.
    torch::Tensor qs;
    if (norming && sw.qkNorm == QkNormVariant::L2Scale) {
        // g replaces s; during an anneal it is interpolated with the vectors so that alpha = 0
        // is exactly the raw path with the fixed scale s.
        auto g = m_l2Scale * sw.alpha + sw.scale * (1.0 - sw.alpha);
        qs = q * g.view({1, H, 1, 1});
    } else {
        qs = q * sw.scale;
    }
    if (sw.fused && !capture && fusedAttentionPossible(sw, false)) {
        auto y = fusedCausalAttention(qs, k, v);  // (B, H, T, D)
        return m_proj(y.transpose(1, 2).reshape({B, T, C}));
    }
    auto q3 = qs.reshape({B * H, T, D});
    auto kT = k.reshape({B * H, T, D}).transpose(1, 2);  // (B*H, D, T)

    torch::Tensor att;  // (B*H, T, T) masked logits fed to softmax
    if (sw.softcap == SoftcapKind::None && !capture) {
        att = torch::baddbmm(mask, q3, kT);  // raw + mask in one kernel
    } else {
        auto raw = torch::bmm(q3, kT);
        torch::Tensor capped = raw;
        if (sw.softcap == SoftcapKind::Tanh)
            capped = torch::tanh(raw / sw.softcapC) * sw.softcapC;
        else if (sw.softcap == SoftcapKind::Clamp)
            capped = raw.clamp(-sw.softcapC, sw.softcapC);
        att = capped + mask;
        if (capture) {
            capture->raw = raw.detach().view({B, H, T, T});
            capture->capped = capped.detach().view({B, H, T, T});
        }
    }
    auto probs = torch::softmax(att, -1);
    auto y = torch::bmm(probs, v.reshape({B * H, T, D}));  // (B*H, T, D)
    if (capture) {
        capture->probs = probs.detach().view({B, H, T, T});
        capture->q = q.detach();
        capture->k = k.detach();
        capture->qRaw = qRaw.detach();
        capture->kRaw = kRaw.detach();
    }
    y = y.view({B, H, T, D}).transpose(1, 2).reshape({B, T, C});
    return m_proj(y);
}

// ---- block -------------------------------------------------------------------------------

BlockImpl::BlockImpl(const RunConfig& c) {
    const int64_t C = c.model.dModel;
    attn = register_module("attn", CausalSelfAttention(c));
    m_norm1 = register_parameter("norm1", torch::ones({C}));
    m_norm2 = register_parameter("norm2", torch::ones({C}));
    m_fc = register_module(
        "fc", torch::nn::Linear(torch::nn::LinearOptions(C, c.model.mlpRatio * C).bias(false)));
    m_out = register_module(
        "out", torch::nn::Linear(torch::nn::LinearOptions(c.model.mlpRatio * C, C).bias(false)));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                 const torch::Tensor& sin, const torch::Tensor& mask,
                                 const AttentionSwitches& sw, AttentionCapture* capture) {
    auto h = x + attn->forward(rmsNorm(x, m_norm1), cos, sin, mask, sw, capture);
    return h + m_out(torch::gelu(m_fc(rmsNorm(h, m_norm2))));
}

// ---- transformer -------------------------------------------------------------------------

TransformerImpl::TransformerImpl(const RunConfig& c)
    : m_dModel(c.model.dModel),
      m_nHeads(c.model.nHeads),
      m_maxT(c.maxSeqLen()),
      m_outputSoftcap(c.model.outputSoftcap),
      m_zLoss(c.optim.zLoss) {
    const int64_t C = m_dModel, V = 256, D = c.dHead();
    m_tokens = register_module("tokens", torch::nn::Embedding(V, C));
    if (!c.model.rope) m_positions = register_module("positions", torch::nn::Embedding(m_maxT, C));
    for (int64_t i = 0; i < c.model.nLayers; ++i)
        m_blocks.push_back(register_module("block" + std::to_string(i), Block(c)));
    m_finalNorm = register_parameter("final_norm", torch::ones({C}));
    if (!c.model.tieEmbeddings)
        m_head =
            register_module("head", torch::nn::Linear(torch::nn::LinearOptions(C, V).bias(false)));

    // Rotary tables for the longest context any event asks for.
    auto invFreq = torch::pow(c.model.ropeBase, -torch::arange(0, D, 2, torch::kFloat64) / D);
    auto t = torch::arange(m_maxT, torch::kFloat64);
    auto freqs = torch::outer(t, invFreq);      // (maxT, D/2)
    auto emb = torch::cat({freqs, freqs}, -1);  // (maxT, D)
    m_cos = register_buffer("rope_cos", emb.cos().to(torch::kFloat32));
    m_sin = register_buffer("rope_sin", emb.sin().to(torch::kFloat32));

    // GPT-2 style init; residual projections scaled by 1/sqrt(2 * n_layers).
    torch::NoGradGuard noGrad;
    const double std = c.model.initStd;
    const double residualStd = std / std::sqrt(2.0 * c.model.nLayers);
    for (auto& item : named_parameters()) {
        const std::string& name = item.key();
        auto& p = item.value();
        if (p.dim() < 2) continue;  // norms and gains keep their init
        if (name.find("gain") != std::string::npos) continue;
        const bool residual =
            name.find("attn.proj") != std::string::npos || name.find(".out.") != std::string::npos;
        p.normal_(0.0, residual ? residualStd : std);
    }
}

const torch::Tensor& TransformerImpl::causalMask(int64_t T, const torch::Device& device) {
    if (!m_mask.defined() || m_mask.size(0) != T || m_mask.device() != device) {
        m_mask = torch::full({T, T}, -std::numeric_limits<float>::infinity(),
                             torch::TensorOptions().device(device))
                     .triu(1);
    }
    return m_mask;
}

ForwardResult TransformerImpl::forward(const torch::Tensor& tokens, const torch::Tensor& targets,
                                       const AttentionSwitches& sw,
                                       std::vector<AttentionCapture>* captures) {
    const int64_t T = tokens.size(1);
    auto x = m_tokens(tokens);  // (B, T, C)
    if (m_positions) x = x + m_positions(torch::arange(T, tokens.options()));
    auto cos = m_cos.narrow(0, 0, T), sin = m_sin.narrow(0, 0, T);
    const auto& mask = causalMask(T, tokens.device());
    if (captures) captures->assign(m_blocks.size(), AttentionCapture{});
    for (size_t i = 0; i < m_blocks.size(); ++i)
        x = m_blocks[i]->forward(x, cos, sin, mask, sw, captures ? &(*captures)[i] : nullptr);
    x = rmsNorm(x, m_finalNorm);
    auto logits = m_head ? m_head(x) : torch::linear(x, m_tokens->weight);  // (B, T, V)
    if (m_outputSoftcap > 0) logits = torch::tanh(logits / m_outputSoftcap) * m_outputSoftcap;
    auto flat = logits.reshape({-1, logits.size(-1)}).to(torch::kFloat32);
    ForwardResult r;
    r.ceLoss = F::cross_entropy(flat, targets.reshape({-1}));
    r.loss = r.ceLoss;
    if (m_zLoss > 0) r.loss = r.ceLoss + m_zLoss * torch::logsumexp(flat, -1).pow(2).mean();
    return r;
}

std::vector<torch::Tensor> TransformerImpl::qkGains() {
    std::vector<torch::Tensor> out;
    for (auto& b : m_blocks)
        for (auto& g : b->attn->qkGains()) out.push_back(g);
    return out;
}

std::vector<torch::Tensor> TransformerImpl::decayedParameters() {
    std::vector<torch::Tensor> out;
    for (auto& item : named_parameters())
        if (item.value().dim() >= 2 && item.key().find("gain") == std::string::npos)
            out.push_back(item.value());
    return out;
}

std::vector<torch::Tensor> TransformerImpl::undecayedParameters() {
    std::vector<torch::Tensor> out;
    for (auto& item : named_parameters())
        if (item.value().dim() < 2 || item.key().find("gain") != std::string::npos)
            out.push_back(item.value());
    return out;
}

int64_t TransformerImpl::parameterCount() {
    int64_t n = 0;
    for (auto& p : parameters()) n += p.numel();
    return n;
}

}  // namespace qklab
