// quack.h — QuacK (Anson & Aitchison, "Controlling changes to attention logits", arXiv
// 2511.21377): learning rates of the query and key weights that depend on the other one's
// norm, eta_Q ∝ 1/||W_K||, eta_K ∝ 1/||W_Q|| (private to core: includes torch).
//
// Why: a head's logit is x^T W_Q^T W_K y. One step changes it, to first order, by
// x^T dW_Q^T W_K y + x^T W_Q^T dW_K y, and |x^T dW_Q^T W_K y| <= |x| |y| ||dW_Q|| ||W_K||. With
// dW_Q = eta_Q U (U the optimizer's normalised update, AdamW's or Muon's) and eta_Q = eta rho /
// ||W_K||, that term is at most eta rho ||U|| |x| |y| whatever the size of W_K: the worst-case
// change of the logits per step no longer grows as the weights grow (the paper's lemma).
//
// What qklab had to decide (the paper's method section could not be read here: only its
// abstract and summaries, which state the rule as above; docs/EXPERIMENTS.md says the same):
// - the norm: Frobenius, per head. Per head because each head's logits depend only on its own
//   rows of W_Q and W_K; Frobenius because it bounds the spectral norm from above (so the bound
//   above still holds) and costs one reduction, no power iteration, on the device each step.
// - the constant: rho = the norm that slice of W_K (or W_Q) is expected to have at init,
//   model.init_std sqrt(rows x cols). So the multiplier is 1 at init (QuacK starts as the
//   optimizer it wraps, optim.lr keeps its meaning) and falls as the partner grows.
// - the multiplier scales the whole per-parameter step, weight decay included, as a parameter
//   group's LR would (PyTorch's param_groups, which is how per-tensor LRs are set there).
// - MLA: W_Q and W_K are the head-specific factors of the bilinear form q_C . k_C + q_R . k_R,
//   as QK-Clip reads them in Kimi K2: W_UQ's content rows (q_up, or q without q_lora) against
//   W_UK's rows (k_up) per head; W_UQ's RoPE rows against W_KR (k_rope), which every head
//   shares, so W_KR's multiplier uses the largest head's ||W_QR,h||. The down projections
//   W_DQ and W_DKV are left alone: their outputs pass an RMSNorm (q_norm, kv_norm) before the
//   up projections, so their scale does not reach the logits (like the block's own RMSNorm).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace qklab {

// `heads` blocks of `rows` rows of a weight (rows, cols): head h's rows start at
// base + h * stride + offset. MHA's fused qkv: q = {w, 0, 0, H, dh, dh}, k = {w, C, 0, ...}.
struct HeadRows {
    torch::Tensor weight;
    int64_t base = 0, offset = 0, heads = 1, rows = 0, stride = 0;
};

// A query slice and the key slice its logits are taken against. key.heads is query.heads
// (a key per head) or 1 (one key every head shares: MLA's W_KR).
struct QuackPair {
    HeadRows query, key;
    double queryRef = 1, keyRef = 1;  // rho of a query head and of a key head
};

// A pair with rho = initStd sqrt(rows x cols) of each side's head slice.
QuackPair quackPair(HeadRows query, HeadRows key, double initStd);

// Per head (heads), ||the head's rows||_F, in float64.
torch::Tensor headNorms(const HeadRows& s);

// The LR multipliers of one pair from the current weights, float64: the query heads'
// keyRef / ||W_K,h|| (heads of the query) and the key heads' queryRef / ||W_Q,h|| (or, for a
// shared key, queryRef / max_h ||W_Q,h||).
struct QuackScales {
    torch::Tensor query, key;
};
QuackScales quackScales(const QuackPair& pair);

// Writes per-head multipliers into a (rows, 1) per-row scale of s.weight.
void writeRowScales(torch::Tensor& rowScale, const HeadRows& s, const torch::Tensor& perHead);

}  // namespace qklab
