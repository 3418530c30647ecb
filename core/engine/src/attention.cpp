// attention.cpp — the math MHA and MLA share (QK-norm variants, RoPE, logit scale, softcap,
// the causal softmax, explicit or fused) and the choice of attention kind. See attention.h.
#include "attention.h"

#include <cmath>
#include <limits>

#include "mha_attention.h"
#include "mla_attention.h"

namespace qklab {

namespace F = torch::nn::functional;

Attention makeAttention(const RunConfig& c) {
    // Exactly the holder's type: a shared_ptr of a subclass would pick ModuleHolder's
    // forwarding constructor, which tries to construct the abstract AttentionImpl.
    std::shared_ptr<AttentionImpl> impl;
    if (c.attention.kind == AttentionKind::Mla)
        impl = std::make_shared<LatentAttentionImpl>(c);
    else
        impl = std::make_shared<CausalSelfAttentionImpl>(c);
    return Attention(impl);
}

bool fusedAttentionPossible(const AttentionSwitches& sw, bool probing) {
    return kHaveFusedAttention && fusedAttentionAllowed(sw, probing);
}

torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
    return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight;
}

torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos,
                        const torch::Tensor& sin) {
    const int64_t half = x.size(-1) / 2;
    auto x1 = x.narrow(-1, 0, half);
    auto x2 = x.narrow(-1, half, half);
    return x * cos + torch::cat({-x2, x1}, -1) * sin;
}

torch::Tensor mixNormed(const torch::Tensor& normed, const torch::Tensor& raw, double alpha) {
    if (alpha >= 1.0) return normed;
    return normed * alpha + raw * (1.0 - alpha);
}

torch::Tensor qkNormalize(const torch::Tensor& x, QkNormVariant kind, const torch::Tensor& gain,
                          const torch::Tensor& wholeGain) {
    const int64_t H = x.size(1), D = x.size(-1);
    const int64_t groups = gain.defined() ? gain.size(0) : 1;
    switch (kind) {
        case QkNormVariant::Rms:
            return x * torch::rsqrt(x.pow(2).mean(-1, true) + kQkNormEps);
        case QkNormVariant::RmsAffine:
            return x * torch::rsqrt(x.pow(2).mean(-1, true) + kQkNormEps) *
                   gain.view({1, groups, 1, D});
        case QkNormVariant::LayerNorm:
            return torch::layer_norm(x, {D}, {}, {}, 1e-5) * gain.view({1, groups, 1, D});
        case QkNormVariant::L2Scale:
            return F::normalize(x, F::NormalizeFuncOptions().dim(-1).eps(kQkNormEps));
        case QkNormVariant::WholeRms:  // over the whole projection (all heads at once), OLMo 2
            return x * torch::rsqrt(x.pow(2).mean({1, 3}, true) + kQkNormEps) *
                   wholeGain.view({1, H, 1, D});
        case QkNormVariant::None:
            break;
    }
    return x;
}

torch::Tensor decodeMask(int64_t past, int64_t n, const torch::TensorOptions& options) {
    // Query i (position past + i) sees keys 0 .. past + i.
    return torch::full({n, past + n}, -std::numeric_limits<float>::infinity(), options)
        .triu(past + 1);
}

torch::Tensor logitScaleTensor(const AttentionSwitches& sw, const torch::Tensor& l2Scale) {
    const int64_t H = l2Scale.size(0);
    if (sw.qkNorm == QkNormVariant::L2Scale && sw.alpha > 0.0)
        // g replaces s; during an anneal it is interpolated with the vectors so that alpha = 0
        // is exactly the raw path with the fixed scale s.
        return (l2Scale * sw.alpha + sw.scale * (1.0 - sw.alpha)).view({1, H, 1, 1});
    return torch::full({1, H, 1, 1}, sw.scale, l2Scale.options());
}

torch::Tensor softcapLogits(const torch::Tensor& raw, const AttentionSwitches& sw) {
    if (sw.softcap == SoftcapKind::Tanh) return torch::tanh(raw / sw.softcapC) * sw.softcapC;
    if (sw.softcap == SoftcapKind::Clamp) return raw.clamp(-sw.softcapC, sw.softcapC);
    return raw;
}

torch::Tensor maxCausalLogitPerHead(const torch::Tensor& raw) {
    const int64_t T = raw.size(-1);
    auto keep = torch::ones({T, T}, raw.options().dtype(torch::kBool)).tril();
    auto masked = raw.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
    return masked.amax({0, 2, 3});  // (H)
}

namespace {

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

}  // namespace

torch::Tensor attendCausal(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const torch::Tensor& mask, const AttentionSwitches& sw,
                           const torch::Tensor& l2Scale, AttentionCapture* capture) {
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), Dv = v.size(3);
    // The scale goes on q (B,H,T,D) rather than on the (B,H,T,T) logits: same math, less work.
    auto qs = q * logitScaleTensor(sw, l2Scale);
    if (sw.fused && !capture && fusedAttentionPossible(sw, false))
        return fusedCausalAttention(qs, k, v);  // (B, H, T, Dv)
    auto q3 = qs.reshape({B * H, T, D});
    auto kT = k.reshape({B * H, T, D}).transpose(1, 2);  // (B*H, D, T)
    torch::Tensor att;                                   // (B*H, T, T) masked logits fed to softmax
    if (sw.softcap == SoftcapKind::None && !capture) {
        att = torch::baddbmm(mask, q3, kT);  // raw + mask in one kernel
    } else {
        auto raw = torch::bmm(q3, kT);
        auto capped = softcapLogits(raw, sw);
        att = capped + mask;
        if (capture) {
            capture->raw = raw.detach().view({B, H, T, T});
            capture->capped = capped.detach().view({B, H, T, T});
        }
    }
    auto probs = torch::softmax(att, -1);
    if (capture) capture->probs = probs.detach().view({B, H, T, T});
    return torch::bmm(probs, v.reshape({B * H, T, Dv})).view({B, H, T, Dv});
}

}  // namespace qklab
