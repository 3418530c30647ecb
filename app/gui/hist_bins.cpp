// hist_bins.cpp — bin edges and the symlog transform, mirroring how the probes bin logits.
#include "hist_bins.h"

#include <cmath>

namespace qklab::gui {

double symlog10(double x) {
    return (x < 0 ? -1.0 : 1.0) * std::log10(1.0 + std::fabs(x));
}

double invSymlog10(double y) {
    return (y < 0 ? -1.0 : 1.0) * (std::pow(10.0, std::fabs(y)) - 1.0);
}

double HistBins::toRaw(double x) const {
    return symlog ? invSymlog10(x) : x;
}

double HistBins::fromRaw(double logit) const {
    return symlog ? symlog10(logit) : logit;
}

QString HistBins::axisLabel() const {
    return symlog ? QStringLiteral("raw attention logit (symlog axis)")
                  : QStringLiteral("raw attention logit");
}

HistBins histBinsOf(const ProbeConfig& probes) {
    HistBins b;
    b.symlog = probes.histScale == "symlog";
    const int n = static_cast<int>(std::max<int64_t>(probes.histBins, 1));
    b.edges.resize(n + 1);
    // Edges are computed as lo + i * width (not by accumulation) so they match the engine's
    // bin index floor((x - lo) / width) at every edge.
    const double lo = probes.histMin, hi = probes.histMax;
    const double w = (hi - lo) / n;
    for (int i = 0; i <= n; ++i) b.edges[i] = lo + i * w;
    b.edges[n] = hi;
    return b;
}

}  // namespace qklab::gui
