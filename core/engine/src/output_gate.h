// output_gate.h — attention.gate (Qiu et al. 2025, "Gated Attention for Large Language
// Models", arXiv 2505.06708, their position G1): each head's attention output, before the output
// projection, times sigmoid(x W_g), where x is the block's normed input: one gate per head and
// token (headwise, W_g: d_model -> n_heads) or per channel (elementwise, d_model -> d_model).
// The paper reports that it removes the attention sink (first-token share 46.7% -> 4.8%) and
// the massive activations (1053 -> 94). MHA and MLA both call it on their (B, H, T, d_head)
// output. Private to core: includes torch.
#pragma once

#include <torch/torch.h>

#include "qklab/config/run_config.h"

namespace qklab {

class OutputGateImpl : public torch::nn::Module {
  public:
    OutputGateImpl(AttentionGate kind, int64_t dModel, int64_t nHeads, int64_t dHead);
    // y: (B, H, T, d_head) attention output; x: (B, T, d_model) the attention's input.
    torch::Tensor forward(const torch::Tensor& y, const torch::Tensor& x);
    torch::nn::Linear& weight() { return m_w; }

  private:
    AttentionGate m_kind;
    int64_t m_nHeads, m_dHead;
    torch::nn::Linear m_w{nullptr};
};
TORCH_MODULE(OutputGate);

}  // namespace qklab
