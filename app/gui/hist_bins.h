// hist_bins.h — the exact bin edges of a run's stored logit histograms.
//
// The engine counts raw logits into probes.hist_bins equal-width bins over
// [probes.hist_min, probes.hist_max] in the configured scale (linear, or
// symlog = sign(x)*log10(1+|x|)). The views draw those bins as they are (no rebinning), so the
// edges must be computed from the run's own config, not from the app's defaults.
#pragma once

#include <QString>
#include <vector>

#include "qklab/run_config.h"

namespace qklab::gui {

struct HistBins {
    std::vector<double> edges;  // bins + 1 edges, in the histogram's scale
    bool symlog = false;

    int count() const { return edges.empty() ? 0 : static_cast<int>(edges.size()) - 1; }
    double center(int bin) const { return 0.5 * (edges[bin] + edges[bin + 1]); }
    double width() const { return count() > 0 ? edges[1] - edges[0] : 1.0; }
    // A coordinate on the histogram axis back in raw logit units (for labels and tooltips).
    double toRaw(double x) const;
    double fromRaw(double logit) const;
    QString axisLabel() const;
};

HistBins histBinsOf(const ProbeConfig& probes);

double symlog10(double x);
double invSymlog10(double y);

}  // namespace qklab::gui
