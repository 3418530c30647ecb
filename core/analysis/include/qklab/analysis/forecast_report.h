// qklab/analysis/forecast_report.h — how well the forecasts of a set of runs saw their onsets
// coming (`qklab-cli forecast-report`; domain brief section 9).
//
// Each run's onset is runOnset (qklab/analysis/onsets.h) of its stored rows; its forecasts are
// the stored ones (the forecasts table), so the score is of what the run warned as it trained.
// A forecast at step s covers the steps s .. s + kForecastHorizonSteps: it catches the run's
// onset o when o - s >= kMinLeadSteps and o is inside that window (its lead is o - s); it is a
// false alarm when no onset is inside it. Forecasts from the onset on are not scored (the run is
// in trouble already). An onset is caught by its earliest catching forecast.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "qklab/analysis/onsets.h"
#include "qklab/store/run_store.h"

namespace qklab {

constexpr int64_t kMinLeadSteps = 5;

// What is scored of one run.
struct ScoredRun {
    int64_t runId = 0, seed = 0;
    std::string label;  // the sweep's name and the point's coordinates, or the run's name
    int64_t steps = 0;  // steps the run did
    std::optional<Onset> onset;
    std::vector<Forecast> forecasts;
};

// One run's verdict.
struct RunVerdict {
    int64_t lead = -1;        // steps between the catching forecast and the onset; -1: none
    int64_t etaError = 0;     // predicted step - onset step, of the catching forecast
    int falseAlarms = 0;      // forecasts with no onset inside their window
    int64_t scoredSteps = 0;  // the steps false alarms are counted over (before the onset)
    std::string why;          // a miss: why ("no forecast", "forecast 3 steps ahead", ...)
};
RunVerdict judgeRun(const ScoredRun& r);

struct LeadStats {
    int onsets = 0, caught = 0;
    double median = NAN, p10 = NAN;  // of the leads of the caught onsets (steps)
};

struct ForecastScore {
    int runs = 0, onsets = 0, caught = 0, healthyRuns = 0;
    double recall = NAN;                    // caught / onsets
    std::map<OnsetKind, LeadStats> byKind;  // onsets by kind
    std::map<std::string, LeadStats> byLabel;
    int falseAlarms = 0, healthyFalseAlarms = 0;
    int64_t scoredSteps = 0, healthySteps = 0;
    double falseAlarmsPer10k = NAN, healthyFalseAlarmsPer10k = NAN;
    double etaErrorMedian = NAN;     // median |predicted - onset| over the caught onsets
    double etaRelErrorMedian = NAN;  // the same over the lead
    struct Miss {
        int64_t runId = 0, seed = 0;
        std::string label, why;
    };
    std::vector<Miss> misses;
};
ForecastScore scoreForecasts(const std::vector<ScoredRun>& runs);

// A stored run as scored: its rows, its config's spike settings (defaults when the config does
// not read), its forecasts: the stored ones, or with `replay` the ones this build's forecaster
// makes of the stored probes (what tuning the forecaster compares; replayForecasts).
ScoredRun scoredRun(RunStore& store, const RunInfo& run, const std::string& label,
                    bool replay = false);
// The forecasts a Forecaster makes of `probes` (in step order), fed one probed step at a time
// as RunMonitor feeds it.
std::vector<Forecast> replayForecasts(const std::vector<ProbeStats>& probes);

}  // namespace qklab
