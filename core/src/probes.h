// probes.h — attention statistics from one probed forward pass (private to core).
#pragma once

#include <vector>

#include "model.h"
#include "qklab/histogram_bins.h"
#include "qklab/records.h"

namespace qklab {

struct ProbeSettings {
    HistogramBins bins;  // the histogram's edges and scale
    SoftcapKind softcap = SoftcapKind::None;
    double softcapC = 0;
    bool exactPercentiles = false;  // false: percentiles on at most kMaxQuantileSamples per row
};

// Per layer and head (+ head = -1 for the whole layer): logit max/p99/mean raw and capped,
// q/k norm p90 (effective and raw), entropy, share at the cap, and raw-logit histograms.
// Percentiles use kthvalue (torch::quantile fails above 2^24 elements and is slow) on at most
// kMaxQuantileSamples values per row; above that on an evenly strided sample (the tiny config
// has 132k valid logits per head: exact kthvalue on all of them made probes cost ~15% of
// training at probes.every = 10). Max, mean, histograms and shares always use every value.
void computeProbes(int64_t step, const std::vector<AttentionCapture>& captures,
                   const ProbeSettings& settings, std::vector<ProbeStats>& stats,
                   std::vector<LogitHistogram>& histograms);

// Softmax maps of the first sequence in the batch, top-left block of at most maxSize tokens.
std::vector<AttentionMap> attentionMaps(int64_t step, const std::vector<AttentionCapture>& captures,
                                        int64_t maxSize = 128);

}  // namespace qklab
