// qklab/spikes.h — spike detection and diagnosis.
//
// Detection follows llm.c's OutlierDetector: a rolling window of the last N values, and the
// z-score of the newest value against it. Diagnosis reads the probes recorded *before* the
// spike and applies the domain brief's three cases and four prescription tiers (section 4).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "qklab/records.h"

namespace qklab {

class RollingZScore {
  public:
    RollingZScore(int64_t window, int64_t minHistory);
    // z-score of x against the values seen before it (nullopt while history is short, or when
    // x is not finite), then x joins the window.
    std::optional<double> push(double x);
    int64_t size() const { return static_cast<int64_t>(m_values.size()); }

  private:
    int64_t m_window, m_minHistory;
    std::deque<double> m_values;
    double m_sum = 0, m_sumSq = 0;
};

// Layer-level (head = -1) probe rows of one probed step, reduced to what the diagnosis needs.
struct ProbeSummary {
    int64_t step = 0;
    double maxLogit = 0;  // max over layers of the raw max logit
    double p99Logit = 0;
    double qkNorm = 0;  // max over layers of max(q p90, k p90), raw projections
};
ProbeSummary summarizeProbes(int64_t step, const std::vector<ProbeStats>& rows);

struct DiagnosisContext {
    bool qkNormActive = false;  // QK-norm on (alpha > 0) when the spike happened
    int64_t spikesSoFar = 0;    // including this one
    int64_t stepsSoFar = 0;
};

// Classify a spike from the probe history (oldest first: the first entry is the run's first
// probe, the last the probe nearest before the spike). Fills kind, tier, probe fields and the
// diagnosis text of `spike`.
void diagnoseSpike(Spike& spike, const std::vector<ProbeSummary>& history,
                   const DiagnosisContext& ctx);

// Thresholds from the domain brief.
constexpr double kHealthyMaxLogit = 20.0;
constexpr double kHealthyP99Logit = 10.0;
constexpr double kInterveneMaxLogit = 30.0;
constexpr double kInterveneP99Logit = 15.0;

}  // namespace qklab
