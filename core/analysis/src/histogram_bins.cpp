// histogram_bins.cpp — bin edges and the symlog transform shared by the probes and the views.
#include "qklab/analysis/histogram_bins.h"

#include <algorithm>
#include <cmath>

namespace qklab {

double symlog10(double x) {
    return (x < 0 ? -1.0 : 1.0) * std::log10(1.0 + std::fabs(x));
}

double invSymlog10(double y) {
    return (y < 0 ? -1.0 : 1.0) * (std::pow(10.0, std::fabs(y)) - 1.0);
}

HistogramBins histogramBinsOf(const ProbeConfig& probes) {
    HistogramBins b;
    b.symlog = probes.histScale == HistScale::Symlog;
    const int n = static_cast<int>(std::max<int64_t>(probes.histBins, 1));
    b.edges.resize(n + 1);
    // lo + i * width (not accumulated), so that every edge matches the bin index
    // floor((x - lo) / width) the counting uses.
    // The engine compares float32 logits with the edges: keep them at float precision so that
    // both sides agree on the bin of a value sitting on an edge.
    const double lo = probes.histMin, hi = probes.histMax;
    const double w = (hi - lo) / n;
    for (int i = 0; i <= n; ++i) b.edges[i] = static_cast<float>(lo + i * w);
    b.edges[n] = static_cast<float>(hi);
    return b;
}

int64_t HistogramBins::binOf(double logit) const {
    const double x = fromRaw(logit);
    if (x < lo()) return -1;
    if (x > hi()) return count();
    // Number of inner edges <= x: [edge_k, edge_k+1) is bin k, and the upper edge is in the last.
    const auto inner = std::upper_bound(edges.begin() + 1, edges.end() - 1, x);
    return static_cast<int64_t>(inner - (edges.begin() + 1));
}

}  // namespace qklab
