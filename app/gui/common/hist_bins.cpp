// hist_bins.cpp — the axis label of a run's logit histograms.
#include "common/hist_bins.h"

namespace qklab::gui {

QString histogramAxisLabel(const HistBins& bins) {
    return bins.symlog ? QStringLiteral("raw attention logit (symlog axis)")
                       : QStringLiteral("raw attention logit");
}

}  // namespace qklab::gui
