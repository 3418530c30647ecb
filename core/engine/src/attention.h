// attention.h — what every attention kind shares (private to core: includes torch): the
// per-step switches, the probe capture, the decode cache of one layer, the math both kinds run
// (QK-norm variants, RoPE, logit scale, softcap, the causal softmax), and the interface a
// Block holds, AttentionImpl, which MHA (mha_attention.h) and MLA (mla_attention.h) implement.
//
// Everything a stability lesson needs is switchable per step through AttentionSwitches
// (QK-norm variant and anneal weight alpha, softcap kind and width), so interventions and
// anneals need no model rebuild. Attention runs explicitly (logits materialised) whenever
// something needs the logits: the probes (raw and capped logits, softmax) and the softcap. On
// all other steps it can run through LibTorch 2.x's fused scaled_dot_product_attention, which
// never materialises the (T, T) logits and has its own backward.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <vector>

#include "qklab/config/run_config.h"
#include "qklab/config/schedules.h"
#include "qklab/store/records.h"
#include "quack.h"

namespace qklab {

// at::scaled_dot_product_attention with an explicit scale arrived in LibTorch 2.1; Debian's
// 1.13 always takes the explicit path.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define QKLAB_HAVE_FUSED_ATTENTION 1
constexpr bool kHaveFusedAttention = true;
#else
constexpr bool kHaveFusedAttention = false;
#endif

// fusedAttentionAllowed (qklab/config/schedules.h) in a build with the fused kernel.
bool fusedAttentionPossible(const AttentionSwitches& sw, bool probing);

// What one layer's attention hands to the probes (all detached; filled only on probe steps).
// Under MLA, q and k are the concatenated content and RoPE parts (width d_head + d_rope).
struct AttentionCapture {
    torch::Tensor raw;         // (B, H, T, T) logits before softcap, unmasked
    torch::Tensor capped;      // (B, H, T, T) after softcap (== raw without cap)
    torch::Tensor probs;       // (B, H, T, T) softmax
    torch::Tensor q, k;        // (B, H, T, dqk) as they enter the dot product (pre-scale)
    torch::Tensor qRaw, kRaw;  // (B, H, T, dqk) straight out of the projection
    torch::Tensor hidden;      // (B, T, C) the block's output (undefined: not handed over)
};

// One layer's decode cache (see qklab/engine/generate.h for the layouts). Tensors are allocated for
// `capacity` positions; the first DecodeState::length are filled.
struct LayerCache {
    torch::Tensor k, v;         // MHA: (B, H, cap, d_head) keys (normalised, roped) and values
    torch::Tensor latent;       // MLA: (B, cap, d_c) the latent c_t
    torch::Tensor ropeKey;      // MLA: (B, cap, d_rope) the shared RoPE key, normalised
    torch::Tensor contentKeys;  // MLA materialised: (B, H, cap, d_head) normalised content keys
    torch::Tensor keyInvRms;    // MLA absorbed with QK-norm: (B, G, cap) a_t = 1/S(k_t)
};

// One attention layer, as a Block holds it: multi-head (CausalSelfAttentionImpl) or multi-head
// latent attention (LatentAttentionImpl). Both register the same way under the Block's "attn",
// so checkpoints name their parameters block<i>.attn.<name> whichever kind a run uses.
class AttentionImpl : public torch::nn::Module {
  public:
    // x: (B, T, C) the block's normed input; cos/sin: (T, d_rope); mask: (T, T) additive
    // (0 / -inf). Returns (B, T, C). capture: filled on probe steps, else null.
    virtual torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos,
                                  const torch::Tensor& sin, const torch::Tensor& mask,
                                  const AttentionSwitches& sw, AttentionCapture* capture) = 0;
    // New tokens x (B, n, C) at positions [past, past + n): appended to the cache, attended.
    // mode is the cache allocateCache made (MLA keeps keys Materialised or the latent Absorbed).
    virtual torch::Tensor decode(const torch::Tensor& x, const torch::Tensor& cos,
                                 const torch::Tensor& sin, const AttentionSwitches& sw,
                                 LayerCache& cache, int64_t past, DecodeCache mode) = 0;
    virtual void allocateCache(LayerCache& cache, int64_t batch, int64_t capacity, DecodeCache mode,
                               const AttentionSwitches& sw,
                               const torch::TensorOptions& options) const = 0;
    // QK-Clip: per head (H), the max scaled raw causal logit on x; and the scaling of one head's
    // own weights that multiplies its logits by factor^2.
    virtual torch::Tensor maxLogitPerHead(const torch::Tensor& x, const torch::Tensor& cos,
                                          const torch::Tensor& sin,
                                          const AttentionSwitches& sw) = 0;
    virtual void clipHead(int64_t head, double factor) = 0;
    // The learnable QK scales (q, k, whole q, whole k gains and l2 scale), frozen in an anneal.
    virtual std::vector<torch::Tensor> qkGains() = 0;
    // optim.quack: the query/key weight slices whose LRs depend on each other (engine/quack.h).
    virtual std::vector<QuackPair> quackPairs(double initStd) = 0;
};
TORCH_MODULE(Attention);

// The attention of one block, of the kind c.attention.kind names.
Attention makeAttention(const RunConfig& c);

// ---- the math both kinds share ----------------------------------------------------------

torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps = 1e-6);

// The decode's causal mask for n new queries at positions [past, past + n) over past + n keys.
torch::Tensor decodeMask(int64_t past, int64_t n, const torch::TensorOptions& options);

// Rotate-half RoPE (GPT-NeoX layout). x: (..., T, d); cos/sin: (T, d).
torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
// alpha * normed + (1 - alpha) * raw (the anneal's mix of vectors).
torch::Tensor mixNormed(const torch::Tensor& normed, const torch::Tensor& raw, double alpha);
// One QK-norm variant on x (B, H, T, d): gain (G, d) with G = H or 1; wholeGain (H * d).
torch::Tensor qkNormalize(const torch::Tensor& x, QkNormVariant kind, const torch::Tensor& gain,
                          const torch::Tensor& wholeGain);
constexpr double kQkNormEps = 1e-6;  // RMS and L2 epsilon (the absorbed decode uses it too)

// softmax(s * q k^T + mask) v with softcap and probes, shared by MHA and MLA. q, k: (B, H, T, d)
// as they enter the dot product; v: (B, H, T, dv); l2Scale (H) is g for the l2_scale variant.
// Returns (B, H, T, dv).
torch::Tensor attendCausal(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const torch::Tensor& mask, const AttentionSwitches& sw,
                           const torch::Tensor& l2Scale, AttentionCapture* capture);
// The logit scale in effect: s, or g interpolated with s by alpha for l2_scale. (1, H, 1, 1).
torch::Tensor logitScaleTensor(const AttentionSwitches& sw, const torch::Tensor& l2Scale);
// Softcap of raw logits as the switches say.
torch::Tensor softcapLogits(const torch::Tensor& raw, const AttentionSwitches& sw);
// Per head (H), the max over the batch of the causal raw (pre-softcap) scaled logits.
torch::Tensor maxCausalLogitPerHead(const torch::Tensor& raw);

}  // namespace qklab
