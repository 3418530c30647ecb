// probes.h — attention statistics from one probed forward pass (private to core).
#pragma once

#include <optional>
#include <vector>

#include "engine/model.h"
#include "qklab/histogram_bins.h"
#include "qklab/records.h"

namespace qklab {

struct ProbeSettings {
    HistogramBins bins;  // the histogram's edges and scale
    SoftcapKind softcap = SoftcapKind::None;
    double softcapC = 0;
    bool exactPercentiles = false;  // false: percentiles on at most kMaxQuantileSamples per row
};

// The nearest-rank percentile of each row of x (R, N > 0), as an (R) tensor: the k-th smallest
// value with k = ceil(percent * N / 100), i.e. the smallest value that at least `percent` % of
// the row is <= to (NaN counts as the largest value). Exact: torch::topk keeps the N - k + 1
// largest values (about 1 % of the row for p99) and the last of them is the k-th smallest.
torch::Tensor rowPercentile(const torch::Tensor& x, int64_t percent);

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

// Gives each map the input bytes of its positions (row 0 of `inputs`, (B, T) int64, any
// device) and why it was taken.
void labelMaps(std::vector<AttentionMap>& maps, MapReason reason, const torch::Tensor& inputs);

// When maps are taken beyond probes.attn_map_every: a collapse between two
// scheduled maps used to leave no map of it. Also at the first probe whose raw max passes the
// intervention line, and on both sides of every event: before it (same weights and batch,
// the settings without the event, stored at step - 1) and at its step (the new settings).
class MapMoments {
  public:
    MapMoments(int64_t probeEvery, int64_t mapEvery)
        : m_on(probeEvery > 0 && mapEvery > 0), m_every(mapEvery) {}
    // Whether a step with events should probe (and map) although off the probe schedule.
    bool probeEventStep(bool hasEvents) const { return m_on && hasEvents; }
    // The before-event map, unless step - 1 already has one (the same weights).
    bool wantsBefore(int64_t step) const { return m_on && step > 0 && m_lastMapStep != step - 1; }
    // Why to map a probed step, if at all; `layers` are its probe rows.
    std::optional<MapReason> reasonAt(int64_t step, bool eventStep,
                                      const std::vector<ProbeStats>& layers);
    void taken(int64_t step) { m_lastMapStep = step; }

  private:
    bool m_on;
    int64_t m_every;
    bool m_pastLineSeen = false;  // a resumed run may take the alarm map once more
    int64_t m_lastMapStep = -1;
};

}  // namespace qklab
