// probes.h — attention statistics from one probed forward pass (private to core).
#pragma once

#include <optional>
#include <vector>

#include "model.h"
#include "qklab/analysis/histogram_bins.h"
#include "qklab/store/records.h"

namespace qklab {

struct ProbeSettings {
    HistogramBins bins;  // the histogram's edges and scale
    SoftcapKind softcap = SoftcapKind::None;
    double softcapC = 0;
};

// The nearest-rank percentile of x's values: the k-th smallest of N values with
// k = ceil(percent * N / 100), i.e. the smallest value that at least `percent` % of them are
// <= to (NaN counts as the largest value). Exact, on every value: one torch::topk per row
// keeps the largest few (about 1 % per head for p99) and kthvalue picks from those.
struct RowPercentiles {
    torch::Tensor rows;   // (R): each row's percentile
    torch::Tensor whole;  // (): the percentile of all R * N values (a layer over its heads)
};
RowPercentiles percentiles(const torch::Tensor& x, int64_t percent);   // x: (R > 0, N > 0)
torch::Tensor rowPercentile(const torch::Tensor& x, int64_t percent);  // percentiles(..).rows

// Per layer and head (+ head = -1 for the whole layer): logit max/p99/mean raw and capped,
// q/k norm p90 (effective and raw), entropy, share at the cap, and raw-logit histograms.
// Percentiles are exact, on every value (rowPercentile; torch::quantile fails above 2^24
// elements and is slow). Until issue 25 they came from kthvalue on an evenly strided sample of
// at most 32,768 values per row; docs/BENCHMARKS.md has what exact ones cost.
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
    // The latest step with maps (-1: none): planStep takes a before-event map only where
    // step - 1 has none (the same weights).
    int64_t lastMapStep() const { return m_lastMapStep; }
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
