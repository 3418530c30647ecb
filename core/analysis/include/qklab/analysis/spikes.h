// qklab/analysis/spikes.h — spike detection and diagnosis.
//
// Detection follows llm.c's OutlierDetector: a rolling window of the last N values, and the
// z-score of the newest value against it. Diagnosis first reads the run's own timeline: a
// change the run made to itself in the steps before the spike (an event, an intervention, an
// anneal lowering QK-norm's alpha; spike_causes.h) is named as the likeliest cause. It then
// reads the first probe at or after the spike (the trainer holds a spike back until that
// probe comes) and applies the domain brief's three cases and four prescription tiers
// (section 4): a case is decided by that probe's change against the run's own recent baseline
// (in ratio and in z-score), with the brief's absolute thresholds as a second condition, and
// the text is written from exactly the numbers that decided it.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "qklab/analysis/spike_causes.h"
#include "qklab/store/records.h"

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
    // What judges a weakened fuse (FuseReading): the largest share at the cap, and the largest
    // q/k p90 length product out of the projections over the one entering the dot product
    // (NaN when no layer has the latter).
    double fracAtCap = 0;
    double qkShrink = std::numeric_limits<double>::quiet_NaN();
    // What a change report reads (change_reports.h): the max logit softmax sees (after the
    // softcap) and the mean over layers of the attention entropy (nats).
    double maxCapped = 0, entropy = 0;
};
ProbeSummary summarizeProbes(int64_t step, const std::vector<ProbeStats>& rows);
// |q_raw| |k_raw| / (|q| |k|) of a row's p90 lengths: > 1 when QK-norm shortened q and k (NaN
// when the row has no lengths entering the dot product).
double qkShrinkOf(const ProbeStats& row);
// What `history` shows of a fuse a change at `changeStep` weakened: the raw max logit from the
// last probe before it on, and the share at the cap and qkShrink at that last probe.
FuseReading fuseReading(const std::vector<ProbeSummary>& history, int64_t changeStep);

// Thresholds from the domain brief (section 4): healthy below both, intervene beyond either.
constexpr double kHealthyMaxLogit = 20.0;
constexpr double kHealthyP99Logit = 10.0;
constexpr double kInterveneMaxLogit = 30.0;
constexpr double kInterveneP99Logit = 15.0;

// Where a probe's raw logits sit against those thresholds. The diagnosis and the live logit
// alarms both read this, so they never disagree about "healthy".
enum class LogitLevel { Healthy, Elevated, Intervene };
LogitLevel logitLevel(double maxLogit, double p99Logit);

// What counts as a change against the baseline (the median of up to kBaselineProbes probes
// before the latest one): a logit jump needs both ratio and z, *and* logits past the healthy
// line; rising q/k norms need both ratio and z.
constexpr int kBaselineProbes = 10;
constexpr int kMinBaselineProbes = 3;  // fewer: no relative verdict, thresholds only
constexpr double kJumpRatio = 1.5, kJumpZ = 3.0;
constexpr double kNormRiseRatio = 1.15, kNormRiseZ = 2.0;
constexpr double kChronicNormGrowth = 2.0;  // q/k norms vs the run's first probe
constexpr double kRareSpikeSteps = 5000;    // tier 1: at most one spike per this many steps

// One probe value against its baseline.
struct Change {
    double value = 0, baseline = 0;
    double ratio = 1;  // value / baseline (1 when the baseline is 0)
    double z = 0;      // (value - baseline mean) / baseline spread (spread floored at 5%)
};
// `value` against the median and spread of `baseline` (no baseline: ratio 1, z 0).
Change changeAgainst(double value, const std::vector<double>& baseline);

// The LM head at the spike (step metrics logz_mean and out_logit_max): the spike step's values
// against the median and spread of up to kOutputBaselineSteps steps before it. Output-logit
// divergence (Wortsman et al.) shows here, not in the attention probes.
constexpr int kOutputBaselineSteps = 64;
constexpr double kLogZJumpNats = 1.0;  // a log Z jump: >= this many nats and z >= kJumpZ
struct OutputLogitReading {
    bool available = false;  // false: too few steps before it, or values a file lacks (NaN)
    Change logZMean, outLogitMax;
};
// The reading of `logZ` / `outMax` (the spike step) against the earlier steps' values.
OutputLogitReading readOutputLogits(double logZ, double outMax, const std::vector<double>& logZs,
                                    const std::vector<double>& outMaxes);

// Everything the classification is decided on, kept for the text and for tests.
struct SpikeEvidence {
    int64_t probeStep = -1;
    int baselineProbes = 0;  // probes in the baseline
    Change maxLogit, qkNorm;
    double p99Logit = 0;
    double firstQkNorm = 0;  // the run's first probe
    int64_t firstProbeStep = 0;
    LogitLevel level = LogitLevel::Healthy;
    bool relative = false;  // enough baseline for ratio/z verdicts
    bool logitJump = false, normsRising = false, normsGrownSinceStart = false;
    bool rare = false;  // at most one spike per kRareSpikeSteps steps so far
    OutputLogitReading output;
    bool outputJump = false;  // log Z rose >= kLogZJumpNats (z >= kJumpZ), or the max output
                              // logit jumped (>= kJumpRatio and z >= kJumpZ)
};

struct DiagnosisContext {
    bool qkNormActive = false;  // QK-norm on (alpha > 0) when the spike happened
    int64_t spikesSoFar = 0;    // including this one
    int64_t stepsSoFar = 0;
    // What the run changed in the spike's window (changesBefore(config, spike step)): events,
    // interventions and anneals. A cause among them decides the verdict.
    std::vector<RunChange> changes;
    OutputLogitReading outputLogits;
    // The reports (change_reports.h) of earlier changes, before that window, still in force at
    // the spike and that moved the run: quoted, since their effect may outlast the window.
    std::vector<std::string> changesInForce = {};
    // The attention logit cap in force at the spike (tanh or clamp C; 0 = none): tier 2's
    // advice starts from it rather than prescribing the cap the run has (issue 38, item 13).
    double softcapC = 0;
};

SpikeEvidence spikeEvidence(const std::vector<ProbeSummary>& history, const DiagnosisContext& ctx);

// Classify a spike from the run's changes and its probe history (oldest first: the first entry
// is the run's first probe, the last the first probe at or after the spike, or the latest
// before it when none came). Fills kind, tier, probe fields and the diagnosis text of `spike`.
void diagnoseSpike(Spike& spike, const std::vector<ProbeSummary>& history,
                   const DiagnosisContext& ctx);

// The logit alarms: one rule per intervention line of the brief, on a probe column.
struct LogitAlarmRule {
    const char* column;  // a probeColumns() name
    double threshold;
    double ProbeStats::*field;
};
const std::vector<LogitAlarmRule>& logitAlarmRules();

// What an alarm is read against besides its row: the layer's first probe, the layer's q/k norm
// p90 (alarmQkNorm) at up to kBaselineProbes probes before this one, what the run changed in
// the window before it, and the attention softcap in force (C; 0 = none).
struct AlarmContext {
    ProbeStats firstRow;
    std::optional<ProbeStats> previousRow;  // the layer's probe before this one
    std::vector<double> recentQkNorms;
    bool qkNormActive = false;
    std::vector<RunChange> changes;
    double softcapC = 0;
};

// The q/k length an alarm reads from a layer row: max(q p90, k p90) of the raw projections
// without QK-norm; with QK-norm on, of q and k as they enter the dot product (normalised,
// QK-norm's gains or scale included), since only those set the logits: the raw projections'
// lengths are divided away.
double alarmQkNorm(const ProbeStats& row, bool qkNormActive);

// Tier 2's attention advice (the brief: tanh softcap C = 50, watch 500 steps, then C = 30 and/or
// grad clip 1.0), from the cap the run has (softcapC > 0) when it has one.
std::string softcapAdvice(double softcapC);

// The alarm for a layer row that crossed `rule`, stating only what its numbers show. A cause
// among the run's changes (a weakened fuse only when it was acting, judged from this row and
// the layer's previous one) decides it (run_change, or data for a dirty batch / context switch).
// Otherwise the q/k norms against the layer's recent probes: rising (>= kNormRiseRatio and
// z >= kNormRiseZ) is a runaway in progress (tier 3); flat but >= kChronicNormGrowth x the
// layer's first probe means the lengths grew earlier (tier 3, said so); neither, the logits
// are high with stable norms (tier 2, softcapAdvice). Tier 4 when QK-norm is on already: then
// the lengths read are the normalised ones (alarmQkNorm), and growth is QK-norm's gains'.
LogitAlarm makeLogitAlarm(const LogitAlarmRule& rule, const ProbeStats& row,
                          const AlarmContext& ctx);

// Numbers as the diagnosis text writes them (3 significant digits), for tests and views.
std::string diagnosisNumber(double v);

}  // namespace qklab
