// mla_attention.h — multi-head latent attention (DeepSeek-V2) with QK-norm, and its absorbed
// decode (arXiv 2606.16310). The AttentionImpl a Block holds for attention.kind = mla.
//
// Per token: a latent c = RMSNorm(x W_DKV) (d_c); per head content keys k_C = c W_UK and values
// v = c W_UV (d_head); one RoPE key k_R = RoPE(x W_KR) (d_rope) shared by all heads; queries
// [q_C | q_R] per head from x (or from a low-rank latent when q_lora > 0). Logits are
// s * (q_C . k_C + q_R . k_R), s = 1/sqrt(d_head + d_rope).
//
// QK-norm normalises the materialised content parts per head (the variant's gains on them) and
// the RoPE parts separately, without gains: with RMS both parts have length sqrt(width), so
// |logit| <= sqrt(d_head + d_rope). RMSNorm(z) = z * gamma / S(z) is a static weight times a
// per-token scalar, which is what lets the decode cache only c_t and a_t = 1/S(k_t):
//   logit = ((gamma_q * gamma_k * q_C) W_UK^T . c_t) * a_q * a_t * s + q_R . k_R * s.
#pragma once

#include "attention.h"
#include "output_gate.h"
#include "sigma_reparam.h"

namespace qklab {

class LatentAttentionImpl : public AttentionImpl {
  public:
    explicit LatentAttentionImpl(const RunConfig& c);
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin, const torch::Tensor& mask,
                          const AttentionSwitches& sw, AttentionCapture* capture) override;
    // mode Materialised caches full normalised content keys; Absorbed caches c_t and a_t.
    torch::Tensor decode(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                         const AttentionSwitches& sw, LayerCache& cache, int64_t past,
                         DecodeCache mode) override;
    void allocateCache(LayerCache& cache, int64_t batch, int64_t capacity, DecodeCache mode,
                       const AttentionSwitches& sw,
                       const torch::TensorOptions& options) const override;
    // Raw scaled logits (B, H, T, T) two ways, for the exactness tests: from materialised,
    // normalised keys (the training path), and from the latent through the absorbed query.
    torch::Tensor materialisedLogits(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin, const AttentionSwitches& sw);
    torch::Tensor absorbedLogits(const torch::Tensor& x, const torch::Tensor& cos,
                                 const torch::Tensor& sin, const AttentionSwitches& sw);
    torch::Tensor maxLogitPerHead(const torch::Tensor& x, const torch::Tensor& cos,
                                  const torch::Tensor& sin, const AttentionSwitches& sw) override;
    // QK-Clip under MLA scales only head-specific weights: the head's content query rows and
    // W_UK rows by `factor` each, its RoPE query rows by factor^2; the shared W_KR and the
    // latent stay as they are, so the head's logits scale by factor^2 exactly. Refused with
    // sigmaReparam (see run_config.cpp).
    void clipHead(int64_t head, double factor) override;
    std::vector<torch::Tensor> qkGains() override;
    // W_UQ's content rows against W_UK per head; W_UQ's RoPE rows against the shared W_KR.
    std::vector<QuackPair> quackPairs(double initStd) override;
    // Distinct key inverse-RMS scalars per token the absorbed cache keeps (G): n_heads for the
    // per-head variants, 1 for whole_rms, 0 without QK-norm on the keys.
    static int64_t keyScalarGroups(const RunConfig& c, const AttentionSwitches& sw);

  private:
    // One span of tokens through the MLA projections (before any QK-norm).
    struct Projection {
        torch::Tensor latent;    // (B, T, d_c)
        torch::Tensor qContent;  // (B, H, T, dh)
        torch::Tensor qRope;     // (B, H, T, dr), rotated
        torch::Tensor kRope;     // (B, 1, T, dr), rotated
    };
    void registerSigmas();  // attention.sigma_reparam
    Projection project(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
    torch::Tensor contentKeys(const torch::Tensor& latent);  // (B, H, T, dh) raw
    torch::Tensor valuesFrom(const torch::Tensor& probs, const torch::Tensor& latent);
    // Normalised (and alpha-mixed) content and RoPE parts as they enter the dot product.
    torch::Tensor normContent(const torch::Tensor& x, const AttentionSwitches& sw, bool query);
    torch::Tensor normRope(const torch::Tensor& x, const AttentionSwitches& sw, bool query);
    bool normsQueries(const AttentionSwitches& sw) const;
    bool normsKeys(const AttentionSwitches& sw) const;
    // The absorbed query q~ = (a_q * gamma_q * gamma_k * q_C) W_UK per head: (B, H, T, d_c).
    torch::Tensor absorbQuery(const torch::Tensor& qContent, const AttentionSwitches& sw);
    torch::Tensor keyInvRms(const torch::Tensor& latent, const AttentionSwitches& sw);
    torch::Tensor absorbedContentLogits(const torch::Tensor& qContent, const torch::Tensor& latent,
                                        const torch::Tensor& invRms, const AttentionSwitches& sw);

    int64_t m_nHeads, m_dHead, m_dC, m_dRope;
    torch::nn::Linear m_kvDown{nullptr}, m_kUp{nullptr}, m_vUp{nullptr}, m_kRope{nullptr};
    torch::nn::Linear m_q{nullptr}, m_qDown{nullptr}, m_qUp{nullptr}, m_proj{nullptr};
    OutputGate m_gate{nullptr};  // attention.gate; null = none
    // attention.sigma_reparam, one per Linear above (null where the Linear is, or with none).
    SpectralReparam m_kvDownSigma{nullptr}, m_kUpSigma{nullptr}, m_vUpSigma{nullptr};
    SpectralReparam m_kRopeSigma{nullptr}, m_qSigma{nullptr}, m_qDownSigma{nullptr};
    SpectralReparam m_qUpSigma{nullptr}, m_projSigma{nullptr};
    torch::Tensor m_kvNorm, m_qNorm;           // latent RMSNorm weights
    torch::Tensor m_qGain, m_kGain;            // (G, dh) on the content parts
    torch::Tensor m_wholeQGain, m_wholeKGain;  // (H * dh) for whole_rms
    torch::Tensor m_l2Scale;                   // (H)
};
}  // namespace qklab
