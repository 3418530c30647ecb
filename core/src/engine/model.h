// model.h — the byte-level decoder-only transformer (private to core: includes torch).
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

#include <optional>
#include <vector>

#include "qklab/records.h"
#include "qklab/run_config.h"
#include "qklab/schedules.h"

namespace qklab {

struct AttentionSwitches {
    QkNormVariant qkNorm = QkNormVariant::None;
    QkNormTarget normOn = QkNormTarget::QK;
    bool normAfterRope = false;
    double alpha = 1.0;  // q = alpha * norm(q) + (1 - alpha) * q_raw (same for k)
    double scale = 0.0;  // s, fixed during an anneal
    SoftcapKind softcap = SoftcapKind::None;
    double softcapC = 50.0;
    bool fused = false;  // fused kernel (only where fusedAttentionPossible says so)
};

// at::scaled_dot_product_attention with an explicit scale arrived in LibTorch 2.1; Debian's
// 1.13 always takes the explicit path.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define QKLAB_HAVE_FUSED_ATTENTION 1
constexpr bool kHaveFusedAttention = true;
#else
constexpr bool kHaveFusedAttention = false;
#endif

// True when a step's attention needs no explicit logits: nothing probes it and no softcap acts
// on the logits. The QK-norm anneal mixes q/k vectors before the dot product, so an annealing
// step can be fused too.
bool fusedAttentionPossible(const AttentionSwitches& sw, bool probing);

// What one layer's attention hands to the probes (all detached; filled only on probe steps).
// Under MLA, q and k are the concatenated content and RoPE parts (width d_head + d_rope).
struct AttentionCapture {
    torch::Tensor raw;         // (B, H, T, T) logits before softcap, unmasked
    torch::Tensor capped;      // (B, H, T, T) after softcap (== raw without cap)
    torch::Tensor probs;       // (B, H, T, T) softmax
    torch::Tensor q, k;        // (B, H, T, dqk) as they enter the dot product (pre-scale)
    torch::Tensor qRaw, kRaw;  // (B, H, T, dqk) straight out of the projection
};

// One layer's decode cache (see qklab/generate.h for the layouts). Tensors are allocated for
// `capacity` positions; the first DecodeState::length are filled.
struct LayerCache {
    torch::Tensor k, v;         // MHA: (B, H, cap, d_head) keys (normalised, roped) and values
    torch::Tensor latent;       // MLA: (B, cap, d_c) the latent c_t
    torch::Tensor ropeKey;      // MLA: (B, cap, d_rope) the shared RoPE key, normalised
    torch::Tensor contentKeys;  // MLA materialised: (B, H, cap, d_head) normalised content keys
    torch::Tensor keyInvRms;    // MLA absorbed with QK-norm: (B, G, cap) a_t = 1/S(k_t)
};

struct DecodeState {
    DecodeCache mode = DecodeCache::Materialised;  // Materialised or Absorbed
    int64_t length = 0;                            // positions filled
    int64_t capacity = 0;
    std::vector<LayerCache> layers;
};

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

struct QkvProjection {
    torch::Tensor q, k, v;     // (B, H, T, d) as they enter attention (normed, roped)
    torch::Tensor qRaw, kRaw;  // (B, H, T, d) straight out of the projection
};

class CausalSelfAttentionImpl : public torch::nn::Module {
  public:
    explicit CausalSelfAttentionImpl(const RunConfig& c);
    // x: (B, T, C); cos/sin: (T, dh); mask: (T, T) additive (0 / -inf)
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin, const torch::Tensor& mask,
                          const AttentionSwitches& sw, AttentionCapture* capture);
    // New tokens x (B, n, C) at positions [past, past + n): appended to the cache, attended.
    torch::Tensor decode(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                         const AttentionSwitches& sw, LayerCache& cache, int64_t past);
    void allocateCache(LayerCache& cache, int64_t batch, int64_t capacity,
                       const torch::TensorOptions& options) const;
    // QK-Clip: per head, the max scaled raw logit on x; and the scaling of one head.
    torch::Tensor maxLogitPerHead(const torch::Tensor& x, const torch::Tensor& cos,
                                  const torch::Tensor& sin, const torch::Tensor& mask,
                                  const AttentionSwitches& sw);
    void clipHead(int64_t head, double factor);
    std::vector<torch::Tensor> qkGains();  // learnable QK scales, frozen during an anneal

  private:
    QkvProjection project(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin, const AttentionSwitches& sw);
    int64_t m_nHeads, m_dHead;
    bool m_rope;
    torch::nn::Linear m_qkv{nullptr}, m_proj{nullptr};
    torch::Tensor m_qGain, m_kGain;            // (G, dh), G = n_heads or 1 (shared)
    torch::Tensor m_wholeQGain, m_wholeKGain;  // (C) for whole-projection RMS (OLMo 2)
    torch::Tensor m_l2Scale;                   // (H) learnable g replacing s (Henry et al.)
};
TORCH_MODULE(CausalSelfAttention);

}  // namespace qklab

#include "engine/mla_attention.h"

namespace qklab {

class BlockImpl : public torch::nn::Module {
  public:
    explicit BlockImpl(const RunConfig& c);
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin, const torch::Tensor& mask,
                          const AttentionSwitches& sw, AttentionCapture* capture);
    torch::Tensor decode(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                         const AttentionSwitches& sw, LayerCache& cache, int64_t past,
                         DecodeCache mode);
    // The residual stream after this block, given its input (shared by forward and decode).
    torch::Tensor mlp(const torch::Tensor& h);
    torch::Tensor attentionInput(const torch::Tensor& x);  // the pre-attention RMSNorm
    CausalSelfAttention attn{nullptr};                     // attention.kind = mha
    LatentAttention mla{nullptr};                          // attention.kind = mla

  private:
    torch::Tensor m_norm1, m_norm2;  // RMSNorm weights (C)
    torch::nn::Linear m_fc{nullptr}, m_out{nullptr};
};
TORCH_MODULE(Block);

struct ForwardResult {
    torch::Tensor loss;    // scalar: cross-entropy (+ z-loss)
    torch::Tensor ceLoss;  // scalar: cross-entropy alone
};

class TransformerImpl : public torch::nn::Module {
  public:
    explicit TransformerImpl(const RunConfig& c);
    // tokens, targets: (B, T) int64. captures: one per layer when probing, else null.
    ForwardResult forward(const torch::Tensor& tokens, const torch::Tensor& targets,
                          const AttentionSwitches& sw, std::vector<AttentionCapture>* captures);
    // LM-head logits (B, T, V) of a whole sequence, no cache (output softcap applied).
    torch::Tensor logits(const torch::Tensor& tokens, const AttentionSwitches& sw,
                         std::vector<AttentionCapture>* captures = nullptr);
    // Incremental decoding: logits (B, n, V) of n new tokens appended to the cache.
    DecodeState newDecodeState(DecodeCache mode, int64_t batch, int64_t capacity,
                               const AttentionSwitches& sw);
    torch::Tensor decode(const torch::Tensor& tokens, DecodeState& state,
                         const AttentionSwitches& sw);
    // QK-Clip on the batch `tokens`, layer by layer: a head whose max scaled raw logit exceeds
    // tau has its query/key weights scaled so that it is exactly tau; the next layer is then
    // measured on the clipped layer's output, so every head ends <= tau on this batch.
    std::vector<QkClip> qkClip(const torch::Tensor& tokens, const AttentionSwitches& sw, double tau,
                               int64_t step);
    std::vector<torch::Tensor> decayedParameters();    // matrices and embeddings
    std::vector<torch::Tensor> undecayedParameters();  // norm weights and QK gains
    std::vector<torch::Tensor> qkGains();
    int64_t parameterCount();
    int64_t nLayers() const { return static_cast<int64_t>(m_blocks.size()); }
    int64_t maxSeqLen() const { return m_maxT; }
    Block& block(int64_t i) { return m_blocks.at(static_cast<size_t>(i)); }

  private:
    const torch::Tensor& causalMask(int64_t T, const torch::TensorOptions& options);
    torch::Tensor embed(const torch::Tensor& tokens, int64_t past);
    torch::Tensor head(const torch::Tensor& x);
    int64_t m_dModel, m_nHeads, m_maxT;
    double m_outputSoftcap, m_zLoss;
    torch::nn::Embedding m_tokens{nullptr}, m_positions{nullptr};
    std::vector<Block> m_blocks;
    torch::Tensor m_finalNorm;
    torch::nn::Linear m_head{nullptr};
    torch::Tensor m_cos, m_sin;  // (maxT, d_rope) rotary tables (buffers)
    torch::Tensor m_mask;        // cached (T, T) additive causal mask
};
TORCH_MODULE(Transformer);

torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps = 1e-6);

// The attention switches of a step: what the trainer, the decoder and the tests run with.
AttentionSwitches attentionSwitches(const RunConfig& c, const StepSettings& s);

// bf16 autocast on (matmuls in bf16, fp32 master weights) or off for this thread. Call
// at::autocast::clear_cache() after the backward pass: cached bf16 weights go stale.
void setBf16Autocast(const torch::Device& device, bool on);

}  // namespace qklab
