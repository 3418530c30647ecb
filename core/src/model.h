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

#include "qklab/run_config.h"

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
struct AttentionCapture {
    torch::Tensor raw;         // (B, H, T, T) logits before softcap, unmasked
    torch::Tensor capped;      // (B, H, T, T) after softcap (== raw without cap)
    torch::Tensor probs;       // (B, H, T, T) softmax
    torch::Tensor q, k;        // (B, H, T, dh) as they enter the dot product (pre-scale)
    torch::Tensor qRaw, kRaw;  // (B, H, T, dh) straight out of the projection
};

class CausalSelfAttentionImpl : public torch::nn::Module {
  public:
    explicit CausalSelfAttentionImpl(const RunConfig& c);
    // x: (B, T, C); cos/sin: (T, dh); mask: (T, T) additive (0 / -inf)
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin, const torch::Tensor& mask,
                          const AttentionSwitches& sw, AttentionCapture* capture);
    std::vector<torch::Tensor> qkGains();  // learnable QK scales, frozen during an anneal

  private:
    torch::Tensor normalize(const torch::Tensor& x, const torch::Tensor& gain, QkNormVariant kind,
                            const torch::Tensor& wholeGain);
    int64_t m_nHeads, m_dHead;
    bool m_rope;
    torch::nn::Linear m_qkv{nullptr}, m_proj{nullptr};
    torch::Tensor m_qGain, m_kGain;            // (G, dh), G = n_heads or 1 (shared)
    torch::Tensor m_wholeQGain, m_wholeKGain;  // (C) for whole-projection RMS (OLMo 2)
    torch::Tensor m_l2Scale;                   // (H) learnable g replacing s (Henry et al.)
};
TORCH_MODULE(CausalSelfAttention);

class BlockImpl : public torch::nn::Module {
  public:
    explicit BlockImpl(const RunConfig& c);
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin, const torch::Tensor& mask,
                          const AttentionSwitches& sw, AttentionCapture* capture);
    CausalSelfAttention attn{nullptr};

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
    std::vector<torch::Tensor> decayedParameters();    // matrices and embeddings
    std::vector<torch::Tensor> undecayedParameters();  // norm weights and QK gains
    std::vector<torch::Tensor> qkGains();
    int64_t parameterCount();
    int64_t nLayers() const { return static_cast<int64_t>(m_blocks.size()); }

  private:
    const torch::Tensor& causalMask(int64_t T, const torch::Device& device);
    int64_t m_dModel, m_nHeads, m_maxT;
    double m_outputSoftcap, m_zLoss;
    torch::nn::Embedding m_tokens{nullptr}, m_positions{nullptr};
    std::vector<Block> m_blocks;
    torch::Tensor m_finalNorm;
    torch::nn::Linear m_head{nullptr};
    torch::Tensor m_cos, m_sin;  // (maxT, dh) rotary tables (buffers)
    torch::Tensor m_mask;        // cached (T, T) additive causal mask
};
TORCH_MODULE(Transformer);

torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps = 1e-6);

// bf16 autocast on (matmuls in bf16, fp32 master weights) or off for this thread. Call
// at::autocast::clear_cache() after the backward pass: cached bf16 weights go stale.
void setBf16Autocast(const torch::Device& device, bool on);

}  // namespace qklab
