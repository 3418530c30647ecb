// qklab/analysis/lesson_values.h — numbers in lesson text that come from the run on screen.
//
// A chaotic run (high LR, no QK-norm) gives other numbers on another CPU, BLAS or thread
// count, so a lesson cannot state "122 at step 10" as a fact. It writes a placeholder, and the
// player fills it from the run the class is watching (live, replayed or stored):
//
//   {{logit_max_raw at=10}}            the value at step 10 (the worst layer: highest, or
//                                      lowest for entropy; layer=N for one layer)
//   {{logit_max_raw max}}              over the run so far, each step at its worst layer
//                                      (also: min, last)
//   {{logit_max_raw first_above=30}}   the first step past 30 (also: first_below=0.5)
//   {{val_loss at=99 run=lesson-blowup-healthy}}   another run this lesson trains
//   {{custom:train/acc last}}          a scalar the run logged besides qklab's metrics (a
//                                      Python run's run.log({"train/acc": ...})); the name is
//                                      one word, and layer= does not apply
//   {{forecast step}}                  the run's first forecast (qklab/analysis/forecast.h):
//                                      "step 96", where it was made; eta: "step 136", the
//                                      crossing it predicts; text: its sentence ("at this rate
//                                      the raw max logit of layer 1 passes 30 in about 40
//                                      steps"); layer=N for layer N's first
//
// A run not there yet, or a step not reached, shows "…"; a line that never crossed, or no
// forecast yet, "not yet". checkLessonValues (called by checkLessonPlayable) refuses a placeholder
// that names no metric, a step the run never reaches or never probes, a layer it does not have, or
// a run the lesson does not train. Torch-free.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "qklab/config/run_config.h"
#include "qklab/store/records.h"

namespace qklab {

struct Lesson;

struct LessonValue {
    enum class What {
        At,
        Max,
        Min,
        Last,
        FirstAbove,
        FirstBelow,
        ForecastStep,
        ForecastEta,
        ForecastText
    };
    // a lessonMetrics() name, "custom:NAME" (a custom scalar) or "forecast" (the Forecast*
    // words)
    std::string metric;
    What what = What::Last;
    double arg = 0;  // the step (At) or the line (FirstAbove, FirstBelow)
    std::optional<int> layer;
    std::string run;     // "" = the run the step is about
    std::string source;  // the placeholder as written, "{{…}}"
};

// The placeholders of one text, in order. Throws Error{InvalidConfig} naming the placeholder
// when one does not parse (an unknown metric, word or key, a bad number).
std::vector<LessonValue> lessonValuesIn(const std::string& text);

// What a placeholder reads: a run's step rows, layer-level probe rows (head = -1) and custom
// scalars (RunStore::customScalars: by name, then step; none for qklab's own runs) and
// forecasts (RunStore::forecasts: by step).
struct LessonRunRows {
    const std::vector<StepMetrics>* steps = nullptr;
    const std::vector<ProbeStats>* probes = nullptr;
    const std::vector<CustomScalar>* customScalars = nullptr;
    const std::vector<Forecast>* forecasts = nullptr;
};
// The rows of `run` ("" = the step's own run), or nullopt when there is no such run (yet).
using LessonRowsLookup = std::function<std::optional<LessonRunRows>(const std::string& run)>;

// The number a placeholder stands for, unrounded: the value (At, Max, Min, Last) or the step
// (FirstAbove, FirstBelow, ForecastStep, ForecastEta); nullopt when the run has no such value
// (yet), never crossed the line, or for ForecastText (words, not a number). What `qklab-cli value`
// prints and the claim checker (scripts/check-claims.py) reads.
std::optional<double> lessonValueNumber(const LessonValue& v, const LessonRunRows& rows);

// The text with every placeholder replaced by its value ("122", "0.196", "step 10"): what the
// player shows. Unparsable placeholders stay as written (the checker refused them already).
std::string fillLessonValues(const std::string& text, const LessonRowsLookup& rows);

// The checker's part: every placeholder in the step texts and callouts reads a run the lesson
// trains (`configs`: each start_preset step's run name → its config), a step that run
// reaches and records the metric at, and a layer it has. A placeholder without run= reads the
// run of the latest start_preset step at or before its own. Throws Error{InvalidConfig}
// naming `origin`, the step and the placeholder.
void checkLessonValues(const Lesson& lesson, const std::string& origin,
                       const std::map<std::string, RunConfig>& configs);

}  // namespace qklab
