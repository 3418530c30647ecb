// forecast_view.h — a forecast (qklab/analysis/forecast.h) where users look: the line above the
// live plots with its countdown, the dashed extension of the raw max logit curve to the
// predicted crossing, and the Spikes view's entry beside what then happened.
//
// What happened is read from the run's onsets (qklab/analysis/onsets.h), the labels
// forecast-report scores against: a forecast came true when an onset falls inside its horizon
// (its step .. step + kForecastHorizonSteps), and its horizon passed when the run went beyond
// that window without one. The same rows give the same words live, in replay and for a stored
// run opened later.
#pragma once

#include <QString>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "qklab/analysis/onsets.h"
#include "qklab/store/records.h"

class QCustomPlot;

namespace qklab::gui {

struct ForecastOutcome {
    enum class State { Pending, CameTrue, HorizonPassed };
    State state = State::Pending;
    std::optional<Onset> onset;  // CameTrue: the first onset inside the horizon
};

// Where `f` stands once the run has reached `latestStep`, against the run's `onsets`.
ForecastOutcome forecastOutcome(const Forecast& f, const std::vector<Onset>& onsets,
                                int64_t latestStep);

// "the raw max logit of layer 1 passed 30 (31.2)", "a loss spike (4.1)", "the loss diverged".
QString onsetText(const Onset& o);

// The line above the plots: "Forecast: at this rate the raw max logit of layer 1 passes 30 in
// about 40 steps — step 136", the countdown from `latestStep`; once decided, what came of it.
QString forecastLineText(const Forecast& f, const ForecastOutcome& o, int64_t latestStep);

// The Spikes view's entry (rich text, with a step link): the forecast, then what happened.
QString forecastTimelineHtml(const Forecast& f, const ForecastOutcome& o);

// Draws each forecast as a dashed line on `plot` (items with role "forecast") from its step and
// value to its predicted step at the threshold; `xOf` maps a step to the plot's x.
void setForecastExtensions(QCustomPlot* plot, const std::vector<Forecast>& forecasts,
                           const std::function<double(double)>& xOf);

}  // namespace qklab::gui
