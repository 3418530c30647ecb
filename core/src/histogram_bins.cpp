// histogram_bins.cpp — bin edges and the symlog transform shared by the probes and the views.
#include "qklab/histogram_bins.h"

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
    const double lo = probes.histMin, hi = probes.histMax;
    const double w = (hi - lo) / n;
    for (int i = 0; i <= n; ++i) b.edges[i] = lo + i * w;
    b.edges[n] = hi;
    return b;
}

int64_t HistogramBins::binOf(double logit) const {
    const double x = fromRaw(logit);
    if (x < lo()) return -1;
    if (x > hi()) return count();
    return std::min<int64_t>(count() - 1, static_cast<int64_t>(std::floor((x - lo()) / width())));
}

}  // namespace qklab
