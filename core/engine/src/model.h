// model.h — the byte-level decoder-only transformer (private to core: includes torch):
// embeddings, pre-RMSNorm blocks of attention (MHA or MLA, engine/attention.h) and a GELU MLP,
// the LM head, the loss, incremental decoding and QK-Clip.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "attention.h"
#include "qklab/config/run_config.h"
#include "qklab/store/records.h"
#include "sigma_reparam.h"

namespace qklab {

// The decode caches of every layer, filled to `length` of `capacity` positions.
struct DecodeState {
    DecodeCache mode = DecodeCache::Materialised;  // Materialised or Absorbed
    int64_t length = 0;                            // positions filled
    int64_t capacity = 0;
    std::vector<LayerCache> layers;
};

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
    Attention attn{nullptr};                               // MHA or MLA (attention.kind)

  private:
    torch::Tensor m_norm1, m_norm2;  // RMSNorm weights (C)
    torch::nn::Linear m_fc{nullptr}, m_out{nullptr};
    SpectralReparam m_fcSigma{nullptr}, m_outSigma{nullptr};  // attention.sigma_reparam = all
};
TORCH_MODULE(Block);

struct ForwardResult {
    torch::Tensor loss;    // scalar: cross-entropy (+ z-loss, + mu-loss)
    torch::Tensor ceLoss;  // scalar: cross-entropy alone
    // (5) fp32, detached: mean and max of log Z over the tokens, the max output logit,
    // mean(log Z^2) (the z-loss term before its coefficient) and ||mu||, the norm of the output
    // embedding's mean row, in OutputLogitStat's order.
    torch::Tensor outputLogitStats;
};

// The entries of ForwardResult::outputLogitStats.
enum OutputLogitStat : int64_t {
    kLogZMean,
    kLogZMax,
    kOutLogitMax,
    kZLossTerm,
    kMuNorm,
    kOutputLogitStats
};

// The statistics of ForwardResult::outputLogitStats from `logits` (N, V), their log Z (N) and
// ||mu||^2 (a scalar).
torch::Tensor outputLogitStats(const torch::Tensor& logits, const torch::Tensor& logZ,
                               const torch::Tensor& muSquared);

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
    // optim.quack: every block's query/key pairs (engine/quack.h), in block order.
    std::vector<QuackPair> quackPairs(double initStd);
    // optim.kind = muon: the decayed parameters split between Muon and AdamW.
    struct MuonSplit {
        // Every 2-D weight inside the blocks (attention projections, MLA's, the output gate's,
        // the MLP's), in parameter order, with their names and how many equal row blocks each
        // is orthogonalised as: MHA's fused qkv (3C, C) is three matrices, q, k and v.
        std::vector<std::string> names;
        std::vector<torch::Tensor> hidden;
        std::vector<int64_t> rowBlocks;
        std::vector<torch::Tensor> adamw;  // the rest of decayedParameters(): embeddings, head
    };
    MuonSplit muonSplit();
    int64_t parameterCount();
    // The output embedding, (V, C): the LM head's weight, or the token embedding when tied.
    torch::Tensor outputEmbedding();
    // optim.output_centring = mu_centring (Stollenwerk et al. 2026): e_i <- e_i - mu, mu the
    // mean row, in place and without gradient (after each update; a device op, no readback).
    void centreOutputEmbedding();
    int64_t nLayers() const { return static_cast<int64_t>(m_blocks.size()); }
    int64_t maxSeqLen() const { return m_maxT; }
    Block& block(int64_t i) { return m_blocks.at(static_cast<size_t>(i)); }

  private:
    torch::Tensor causalMask(int64_t T, const torch::TensorOptions& options);
    torch::Tensor embed(const torch::Tensor& tokens, int64_t past);
    torch::Tensor head(const torch::Tensor& x);
    int64_t m_dModel, m_nHeads, m_maxT;
    double m_outputSoftcap, m_zLoss;
    double m_muLoss;  // the mu-loss coefficient; 0 unless optim.output_centring = mu_loss
    torch::nn::Embedding m_tokens{nullptr}, m_positions{nullptr};
    std::vector<Block> m_blocks;
    torch::Tensor m_finalNorm;
    torch::nn::Linear m_head{nullptr};
    torch::Tensor m_cos, m_sin;  // (maxT, d_rope) rotary tables (buffers)
    // The (T, T) additive causal masks made so far, one per T, device and dtype, kept for the
    // model's life: a captured CUDA graph reads a mask by its address, so a mask that a context
    // switch replaced must never be freed while a graph may replay (engine/captured_step.h).
    std::vector<torch::Tensor> m_masks;
};
TORCH_MODULE(Transformer);

// bf16 autocast on (matmuls in bf16, fp32 master weights) or off for this thread. Call
// at::autocast::clear_cache() after the backward pass: cached bf16 weights go stale.
void setBf16Autocast(const torch::Device& device, bool on);

// bf16 autocast for a scope when `on`; off again when the scope ends, by an exception too.
class Bf16AutocastScope {
  public:
    Bf16AutocastScope(const torch::Device& device, bool on) : m_device(device), m_on(on) {
        if (m_on) setBf16Autocast(m_device, true);
    }
    ~Bf16AutocastScope() {
        if (m_on) setBf16Autocast(m_device, false);
    }
    Bf16AutocastScope(const Bf16AutocastScope&) = delete;
    Bf16AutocastScope& operator=(const Bf16AutocastScope&) = delete;

  private:
    torch::Device m_device;
    bool m_on;
};

}  // namespace qklab
