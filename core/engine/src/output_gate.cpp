// output_gate.cpp — the sigmoid gate on the attention output (see output_gate.h).
#include "output_gate.h"

namespace qklab {

OutputGateImpl::OutputGateImpl(AttentionGate kind, int64_t dModel, int64_t nHeads, int64_t dHead)
    : m_kind(kind), m_nHeads(nHeads), m_dHead(dHead) {
    const int64_t out = kind == AttentionGate::Headwise ? nHeads : nHeads * dHead;
    m_w =
        register_module("w", torch::nn::Linear(torch::nn::LinearOptions(dModel, out).bias(false)));
}

torch::Tensor OutputGateImpl::forward(const torch::Tensor& y, const torch::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1);
    const auto g = torch::sigmoid(m_w(x));  // (B, T, H) or (B, T, H * d_head)
    if (m_kind == AttentionGate::Headwise) return y * g.transpose(1, 2).unsqueeze(-1);
    return y * g.view({B, T, m_nHeads, m_dHead}).transpose(1, 2);
}

}  // namespace qklab
