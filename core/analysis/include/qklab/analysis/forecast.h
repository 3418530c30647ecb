// qklab/analysis/forecast.h — the forecaster: a warning before the raw max logit passes the
// intervention line (an onset, qklab/analysis/onsets.h), with when.
//
// Per layer and head (the rows a probe has: layer rows, head = -1, and head rows where the run
// stores them), the log of the raw max logit over its latest kForecastWindowProbes probes is fit
// to a line: Theil-Sen (the median of the pairwise slopes, robust to one odd probe) for the
// rate and the crossing, and the least-squares slope's t-statistic for whether the growth is
// more than noise. A forecast is made when the latest value is at least kForecastFloor, the
// growth is significant, and the fitted line crosses the line within kForecastHorizonSteps.
// One forecast per layer and episode. An episode ends kForecastRearmProbes calm probes (no
// crossing in sight, all below the line) after it came true, or once its horizon has passed
// without a crossing: a false alarm is not repeated while its own window is open.
//
// RunMonitor holds one, so qklab's runs and the Python package's both get it. Torch-free.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "qklab/analysis/spikes.h"
#include "qklab/store/records.h"

namespace qklab {

constexpr int kForecastWindowProbes = 6;        // probes in the fit
constexpr int kForecastMinProbes = 4;           // fewer: no fit
constexpr double kForecastFloor = 8.0;          // raw max logit below this: too early to tell
constexpr double kForecastMinT = 4.0;           // least-squares slope / its standard error
constexpr double kForecastMinRise = 1.15;       // the fitted rise over the window, as a ratio
constexpr int64_t kForecastHorizonSteps = 150;  // a crossing further off is no forecast
constexpr int kForecastRearmProbes = 3;         // calm probes before a layer can warn again

// What the fit of one series says (exposed for tests).
struct GrowthFit {
    bool ok = false;   // enough points
    double rate = 0;   // Theil-Sen slope of ln(value) per step
    double level = 0;  // the fitted ln(value) at the latest step
    double t = 0;      // least-squares slope / its standard error (inf when exact)
    double rise = 1;   // exp(rate x the window's span in steps)
};
// Fit of (step, value) points (values > 0), oldest first.
GrowthFit fitGrowth(const std::vector<std::pair<int64_t, double>>& points);

// Steps from the latest point until the fit passes `line` (none when it does not rise).
std::optional<double> stepsToCross(const GrowthFit& fit, double line);

class Forecaster {
  public:
    explicit Forecaster(double line = kInterveneMaxLogit) : m_line(line) {}
    // One probed step's rows: the forecasts they make (at most one per layer).
    std::vector<Forecast> addProbes(int64_t step, const std::vector<ProbeStats>& rows);

  private:
    std::optional<Forecast> forecastFor(int64_t step, const ProbeStats& row);
    double m_line;
    std::map<std::pair<int32_t, int32_t>, std::deque<std::pair<int64_t, double>>> m_series;
    // Per layer with an episode open: the step of its forecast, whether the line was passed
    // since, and the calm probes in a row.
    struct Episode {
        int64_t warnedAt = 0;
        bool crossed = false;
        int calm = 0;
    };
    std::map<int32_t, Episode> m_episodes;
};

// "at this rate the raw max logit of layer 1 passes 30 in about 40 steps (step 240; now 12.5,
// x1.26 per 10 steps)"
std::string forecastText(const Forecast& f);

}  // namespace qklab
