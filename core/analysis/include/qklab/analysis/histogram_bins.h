// qklab/analysis/histogram_bins.h — the bins the probes count raw attention logits into.
//
// probes.hist_bins equal-width bins over [probes.hist_min, probes.hist_max], in the configured
// scale: linear, or symlog = sign(x)*log10(1+|x|) so that logits from 0.1 to 10^6 fit one
// axis. The engine counts with these bins and the views draw them as they are (never
// rebinned), so both take them from here.
#pragma once

#include <cstdint>
#include <vector>

#include "qklab/config/run_config.h"

namespace qklab {

double symlog10(double x);     // sign(x) * log10(1 + |x|)
double invSymlog10(double y);  // its inverse

struct HistogramBins {
    std::vector<double> edges;  // count() + 1 edges, in the histogram's scale
    bool symlog = false;

    int count() const { return edges.empty() ? 0 : static_cast<int>(edges.size()) - 1; }
    double lo() const { return edges.front(); }
    double hi() const { return edges.back(); }
    double width() const { return count() > 0 ? edges[1] - edges[0] : 1.0; }
    double center(int bin) const { return 0.5 * (edges[bin] + edges[bin + 1]); }
    double fromRaw(double logit) const { return symlog ? symlog10(logit) : logit; }
    double toRaw(double x) const { return symlog ? invSymlog10(x) : x; }
    // The bin a raw logit is counted in: [edge_k, edge_k+1) is bin k, the last bin also holds
    // the upper edge; -1 below lo, count() above hi.
    int64_t binOf(double logit) const;
};

HistogramBins histogramBinsOf(const ProbeConfig& probes);

}  // namespace qklab
