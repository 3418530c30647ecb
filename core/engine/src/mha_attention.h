// mha_attention.h — multi-head causal self-attention: one fused q/k/v projection, the QK-norm
// variant (before or after RoPE, mixed by the anneal's alpha), RoPE, and the shared causal
// softmax; a key/value decode cache. The AttentionImpl a Block holds for attention.kind = mha.
#pragma once

#include "attention.h"
#include "output_gate.h"
#include "sigma_reparam.h"

namespace qklab {

class CausalSelfAttentionImpl : public AttentionImpl {
  public:
    explicit CausalSelfAttentionImpl(const RunConfig& c);
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin, const torch::Tensor& mask,
                          const AttentionSwitches& sw, AttentionCapture* capture) override;
    // Keys and values are cached as they enter attention (normalised, roped): one mode.
    torch::Tensor decode(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                         const AttentionSwitches& sw, LayerCache& cache, int64_t past,
                         DecodeCache mode) override;
    void allocateCache(LayerCache& cache, int64_t batch, int64_t capacity, DecodeCache mode,
                       const AttentionSwitches& sw,
                       const torch::TensorOptions& options) const override;
    torch::Tensor maxLogitPerHead(const torch::Tensor& x, const torch::Tensor& cos,
                                  const torch::Tensor& sin, const AttentionSwitches& sw) override;
    // W_qkv rows of the head's query and key scale by factor each (refused with sigmaReparam).
    void clipHead(int64_t head, double factor) override;
    std::vector<torch::Tensor> qkGains() override;
    // Head h's q rows of W_qkv against its k rows.
    std::vector<QuackPair> quackPairs(double initStd) override;

  private:
    struct Projection {
        torch::Tensor q, k, v;     // (B, H, T, d) as they enter attention (normed, roped)
        torch::Tensor qRaw, kRaw;  // (B, H, T, d) straight out of the projection
    };
    Projection project(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                       const AttentionSwitches& sw);
    int64_t m_nHeads, m_dHead;
    bool m_rope;
    torch::nn::Linear m_qkv{nullptr}, m_proj{nullptr};
    OutputGate m_gate{nullptr};  // attention.gate; null = none
    // attention.sigma_reparam: W_qkv as three matrices (q, k, v), and W_o; null = none.
    SpectralReparam m_qkvSigma{nullptr}, m_projSigma{nullptr};
    torch::Tensor m_qGain, m_kGain;            // (G, dh), G = n_heads or 1 (shared)
    torch::Tensor m_wholeQGain, m_wholeKGain;  // (C) for whole-projection RMS (OLMo 2)
    torch::Tensor m_l2Scale;                   // (H) learnable g replacing s (Henry et al.)
};

}  // namespace qklab
