// hist_bins.h — the run's histogram bins (qklab/analysis/histogram_bins.h) and their axis label.
#pragma once

#include <QString>

#include "qklab/analysis/histogram_bins.h"

namespace qklab::gui {

using HistBins = HistogramBins;

inline HistBins histBinsOf(const ProbeConfig& probes) {
    return histogramBinsOf(probes);
}

QString histogramAxisLabel(const HistBins& bins);

}  // namespace qklab::gui
