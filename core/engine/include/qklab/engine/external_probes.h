// qklab/engine/external_probes.h — qklab's probes on attention that qklab did not compute: a model
// the user trains in their own loop (the Python package, app/python) hands over each layer's
// queries and keys as its softmax sees them, and gets the same statistics, histograms and
// maps as qklab's own runs (core/engine/src/probes.cpp computes both).
//
// Tensors are named by forward declaration only: this header stays torch-free, and only the
// engine and the Python extension, which link LibTorch, call it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "qklab/config/run_config.h"
#include "qklab/store/records.h"

namespace at {
class Tensor;
}

namespace qklab {

// One layer as its softmax sees it: logits = softcap(scale * q k^T) under the causal mask.
struct ExternalLayer {
    const at::Tensor* q = nullptr;     // (B, H, T, D) after projection, RoPE and QK-norm
    const at::Tensor* k = nullptr;     // (B, H, T, D), key heads repeated to H
    const at::Tensor* qRaw = nullptr;  // (B, H, T, D) straight out of the projection
    const at::Tensor* kRaw = nullptr;
    double scale = 1.0;
    double softcap = 0;  // tanh cap C (C tanh(x / C)); 0 = none
    // (B, T, C) the output of the layer's block (the residual stream after it), for
    // max_activation; null: not found, the probe stores NaN.
    const at::Tensor* hidden = nullptr;
};

struct ExternalProbes {
    std::vector<ProbeStats> stats;  // per layer (head -1) and head, in probeColumns()
    std::vector<LogitHistogram> histograms;
    std::vector<AttentionMap> maps;  // the first sequence's softmax, when maps were due
};

// Probes one step of an external model, with qklab's probe settings (histogram bins, map
// schedule). Maps are taken as qklab's trainer takes them (MapMoments): on steps that are a
// multiple of probes.attn_map_every and at the first probe past the intervention line (max
// raw logit > 30). Throws Error{InvalidRequest} naming the layer on tensors of the wrong rank,
// shape or values (scale, cap).
class ExternalProber {
  public:
    explicit ExternalProber(const ProbeConfig& probes);
    ~ExternalProber();
    ExternalProbes probe(int64_t step, const std::vector<ExternalLayer>& layers);

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace qklab
