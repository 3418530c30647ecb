// lesson_values.cpp — see qklab/analysis/lesson_values.h.
#include "qklab/analysis/lesson_values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string_view>

#include "qklab/analysis/lesson.h"
#include "qklab/store/record_columns.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

namespace qklab {

namespace {

using What = LessonValue::What;

const ProbeColumn* probeColumnOf(const std::string& metric) {
    return findColumn(probeColumns(), metric);
}

const RecordColumn<StepMetrics>* stepColumnOf(const std::string& metric) {
    const auto* c = findColumn(stepMetricTable().columns, metric);
    return c && isMeasurement(*c) ? c : nullptr;
}

// "custom:NAME": a scalar the run logged besides qklab's metrics (the Python package's
// run.log), which no table lists; its name is what follows the prefix.
constexpr std::string_view kCustomPrefix = "custom:";

// "forecast": the run's first forecast, read with step, eta or text.
constexpr std::string_view kForecast = "forecast";

bool isForecast(const LessonValue& v) {
    return v.metric == kForecast;
}

bool isCustom(const std::string& metric) {
    return metric.rfind(kCustomPrefix, 0) == 0;
}

std::string customName(const std::string& metric) {
    return metric.substr(kCustomPrefix.size());
}

// Entropy falls as attention collapses: its worst layer is the lowest.
bool lowIsWorse(const std::string& metric) {
    return metric == "entropy";
}

[[noreturn]] void refuse(const std::string& source, const std::string& why) {
    throw Error(ErrorCode::InvalidConfig, clipped(source, 80) + ": " + why);
}

// A decimal number as a lesson writes one ("10", "-0.5", "1e3"): not hex, "inf" or "nan",
// which std::stod would take.
bool isDecimal(const std::string& text) {
    static const std::regex decimal(R"([-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?)");
    return text.size() <= 40 && std::regex_match(text, decimal);
}

double numberIn(const std::string& source, const std::string& key, const std::string& value) {
    if (isDecimal(value)) {
        const double v = std::strtod(value.c_str(), nullptr);
        if (std::isfinite(v)) return v;
    }
    refuse(source, key + "=" + clipped(value, 20) + " is not a number");
}

// One "key=value" or word of a placeholder.
void applyToken(LessonValue& v, const std::string& token) {
    const size_t eq = token.find('=');
    const std::string key = token.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : token.substr(eq + 1);
    if (isForecast(v) && eq == std::string::npos) {
        if (token == "step") return void(v.what = What::ForecastStep);
        if (token == "eta") return void(v.what = What::ForecastEta);
        if (token == "text") return void(v.what = What::ForecastText);
        refuse(v.source, "\"" + clipped(token, 20) +
                             "\" is not step, eta or text (a forecast's words), layer= or run=");
    }
    if (isForecast(v) && key != "layer" && key != "run")
        refuse(v.source, "\"" + clipped(key, 20) +
                             "=\" does not apply to a forecast (step, eta, "
                             "text, layer=, run=)");
    if (eq == std::string::npos) {
        if (token == "max") return void(v.what = What::Max);
        if (token == "min") return void(v.what = What::Min);
        if (token == "last") return void(v.what = What::Last);
        refuse(v.source, "\"" + clipped(token, 20) +
                             "\" is not max, min, last or one of at=, first_above=, "
                             "first_below=, layer=, run=");
    }
    if (key == "run") {
        if (value.empty()) refuse(v.source, "run= names no run");
        return void(v.run = value);
    }
    const double number = numberIn(v.source, key, value);
    if (key == "at" || key == "layer") {
        if (number < 0 || number != std::floor(number) || number > 1e9)
            refuse(v.source, key + "=" + clipped(value, 20) + " is not a step or layer index");
        if (key == "layer") return void(v.layer = static_cast<int>(number));
        v.what = What::At;
    } else if (key == "first_above") {
        v.what = What::FirstAbove;
    } else if (key == "first_below") {
        v.what = What::FirstBelow;
    } else {
        refuse(v.source, "\"" + clipped(key, 20) +
                             "=\" is not at=, first_above=, first_below=, "
                             "layer= or run=");
    }
    v.arg = number;
}

LessonValue parseOne(const std::string& source, const std::string& inside) {
    LessonValue v;
    v.source = source;
    std::istringstream words(inside);
    std::string token;
    if (!(words >> v.metric)) refuse(source, "names no metric");
    if (isCustom(v.metric)) {
        if (customName(v.metric).empty()) refuse(source, "custom: names no scalar");
    } else if (isForecast(v)) {
        v.what = What::ForecastText;  // "{{forecast}}": the sentence
    } else if (!probeColumnOf(v.metric) && !stepColumnOf(v.metric)) {
        const std::string near = closestMatch(v.metric, lessonMetrics());
        refuse(source, "\"" + clipped(v.metric, 30) + "\" is not a metric" +
                           (near.empty() ? " (a scalar the run logged: custom:NAME)"
                                         : " (did you mean \"" + near + "\"?)"));
    }
    while (words >> token) applyToken(v, token);
    if (v.layer && isCustom(v.metric))
        refuse(source, "layer=: a custom scalar is one value per step, not per layer");
    return v;
}

// Calls f(start, end, value) for each "{{…}}" of the text.
template <class F>
void forEachPlaceholder(const std::string& text, F f) {
    size_t at = 0;
    while ((at = text.find("{{", at)) != std::string::npos) {
        const size_t end = text.find("}}", at + 2);
        if (end == std::string::npos) return;
        f(at, end + 2, text.substr(at, end + 2 - at), text.substr(at + 2, end - at - 2));
        at = end + 2;
    }
}

// ---- filling ----

std::string numberText(double v) {
    char buf[32];
    if (std::fabs(v) >= 100)
        std::snprintf(buf, sizeof buf, "%.0f", v);
    else
        std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

// The (step, value) series a placeholder reads: the worst layer per probe step (or one
// layer), the step metric per step, or the custom scalar at each step it was logged at. A value the
// run did not record at a step (val_loss between evaluations) is left out; a NaN it recorded (a
// diverged loss) stays, so that "at=" and "last" say NaN rather than an earlier healthy value.
std::vector<std::pair<int64_t, double>> seriesOf(const LessonValue& v, const LessonRunRows& rows) {
    std::vector<std::pair<int64_t, double>> out;
    if (const ProbeColumn* probe = probeColumnOf(v.metric)) {
        if (!rows.probes) return out;
        for (const ProbeStats& p : *rows.probes) {
            if (p.head != -1 || (v.layer && p.layer != *v.layer)) continue;
            const double x = p.*(probe->field);
            if (!out.empty() && out.back().first == p.step) {
                double& worst = out.back().second;  // a NaN layer is the worst
                if (!std::isnan(worst))
                    worst = std::isnan(x)          ? x
                            : lowIsWorse(v.metric) ? std::min(worst, x)
                                                   : std::max(worst, x);
            } else {
                out.emplace_back(p.step, x);
            }
        }
    } else if (const auto* column = stepColumnOf(v.metric); column && rows.steps) {
        for (const StepMetrics& m : *rows.steps)
            if (const std::optional<double> x = numberOf(column->get(m)))
                out.emplace_back(m.step, *x);
    } else if (isCustom(v.metric) && rows.customScalars) {
        const std::string name = customName(v.metric);
        for (const CustomScalar& c : *rows.customScalars)  // by name, then step
            if (c.name == name) out.emplace_back(c.step, c.value);
    }
    return out;
}

// The run's first forecast (of v.layer when it names one); none yet: nullptr.
const Forecast* firstForecast(const LessonValue& v, const LessonRunRows& rows) {
    if (!rows.forecasts) return nullptr;
    const Forecast* first = nullptr;
    for (const Forecast& f : *rows.forecasts)
        if ((!v.layer || f.layer == *v.layer) && (!first || f.step < first->step)) first = &f;
    return first;
}

std::string valueText(const LessonValue& v, const LessonRunRows& rows) {
    if (v.what == What::ForecastText) {
        const Forecast* f = firstForecast(v, rows);
        return f ? f->text : "not yet";
    }
    const std::optional<double> x = lessonValueNumber(v, rows);
    if (v.what == What::FirstAbove || v.what == What::FirstBelow || v.what == What::ForecastStep ||
        v.what == What::ForecastEta)
        return x ? "step " + std::to_string(int64_t(*x)) : "not yet";
    return x ? numberText(*x) : "…";
}

// Why the run of `config` never records `v` (empty: it does).
std::string unreadable(const LessonValue& v, const RunConfig& config) {
    if (v.layer && *v.layer >= config.model.nLayers)
        return "layer " + std::to_string(*v.layer) + ": the run has " +
               std::to_string(config.model.nLayers) + " layers";
    if (v.what != What::At) return {};
    const auto step = int64_t(v.arg);
    const int64_t steps = config.schedule.steps;
    if (step >= steps)
        return "step " + std::to_string(step) + ": the run ends at step " +
               std::to_string(steps - 1);
    const int64_t every = config.probes.every;
    if (probeColumnOf(v.metric) && (every <= 0 || step % every != 0))
        return "step " + std::to_string(step) +
               " is not probed (probes.every = " + std::to_string(every) + ")";
    const bool evaluated =
        step == steps - 1 || (config.eval.every > 0 && (step + 1) % config.eval.every == 0);
    if (v.metric == "val_loss" && !evaluated)
        return "step " + std::to_string(step) +
               " has no validation loss (eval.every = " + std::to_string(config.eval.every) +
               ", and the last step)";
    return {};
}

// Every placeholder of one text of step `index`, against the run it reads.
void checkText(const std::string& text, const std::string& where, const std::string& ownRun,
               const std::map<std::string, RunConfig>& configs) {
    std::vector<LessonValue> values;
    try {
        values = lessonValuesIn(text);
    } catch (const Error& e) {
        throw Error(ErrorCode::InvalidConfig, where + e.what());
    }
    for (const LessonValue& v : values) {
        const std::string run = v.run.empty() ? ownRun : v.run;
        const auto fail = [&](const std::string& why) {
            throw Error(ErrorCode::InvalidConfig, where + clipped(v.source, 80) + ": " + why);
        };
        if (run.empty()) fail("reads no run: no step up to here trains one (add run=NAME)");
        const auto found = configs.find(run);
        if (found == configs.end()) {
            std::string names;
            for (const auto& [name, config] : configs) names += (names.empty() ? "" : ", ") + name;
            fail("run=" + clipped(run, 40) + " is not a run this lesson trains (" +
                 (names.empty() ? "it trains none" : "it trains: " + names) + ")");
        }
        if (const std::string why = unreadable(v, found->second); !why.empty()) fail(why);
    }
}

}  // namespace

void checkLessonValues(const Lesson& lesson, const std::string& origin,
                       const std::map<std::string, RunConfig>& configs) {
    std::string ownRun;
    for (size_t i = 0; i < lesson.steps.size(); ++i) {
        const LessonStep& step = lesson.steps[i];
        if (step.actionKind() == "start_preset") ownRun = lessonRunName(lesson, i);
        const std::string where = origin + ": step " + std::to_string(i + 1) + ": ";
        checkText(step.text, where + "text: ", ownRun, configs);
        // Placeholders read layer rows (every head): beside one head's histogram they quote
        // another number than the one shown (issue 37: 1063 beside head 0's 865).
        if (step.view == "histograms" && step.head && !lessonValuesIn(step.text).empty())
            throw Error(ErrorCode::InvalidConfig,
                        where +
                            "head: the text quotes layer values (every head) beside the "
                            "histogram of head " +
                            std::to_string(*step.head) + "; drop \"head\" to show all heads");
        for (size_t p = 0; p < step.pauses.size(); ++p)
            checkText(step.pauses[p].callout,
                      where + "pause[" + std::to_string(p) + "].callout: ", ownRun, configs);
    }
}

std::optional<double> lessonValueNumber(const LessonValue& v, const LessonRunRows& rows) {
    const auto series = seriesOf(v, rows);
    switch (v.what) {
        case What::At:
            for (const auto& [step, x] : series)
                if (step == int64_t(v.arg)) return x;
            return std::nullopt;
        case What::Max:
        case What::Min: {  // over the finite values; NaN only when there is no other
            if (series.empty()) return std::nullopt;
            double best = std::nan("");
            for (const auto& [step, x] : series)
                if (std::isnan(best) ||
                    (!std::isnan(x) && (v.what == What::Max ? x > best : x < best)))
                    best = x;
            return best;
        }
        case What::Last:
            if (series.empty()) return std::nullopt;
            return series.back().second;
        case What::FirstAbove:
        case What::FirstBelow:
            for (const auto& [step, x] : series)
                if (v.what == What::FirstAbove ? x > v.arg : x < v.arg) return double(step);
            return std::nullopt;
        case What::ForecastStep:
        case What::ForecastEta: {
            const Forecast* f = firstForecast(v, rows);
            if (!f) return std::nullopt;
            return double(v.what == What::ForecastStep ? f->step : f->predictedStep);
        }
        case What::ForecastText:
            return std::nullopt;
    }
    return std::nullopt;
}

std::vector<LessonValue> lessonValuesIn(const std::string& text) {
    std::vector<LessonValue> out;
    forEachPlaceholder(
        text, [&out](size_t, size_t, const std::string& source, const std::string& inside) {
            out.push_back(parseOne(source, inside));
        });
    return out;
}

std::string fillLessonValues(const std::string& text, const LessonRowsLookup& rows) {
    std::string out;
    size_t copied = 0;
    forEachPlaceholder(
        text, [&](size_t start, size_t end, const std::string& source, const std::string& inside) {
            out += text.substr(copied, start - copied);
            copied = end;
            try {
                const LessonValue v = parseOne(source, inside);
                const auto r = rows(v.run);
                out += r ? valueText(v, *r) : "…";
            } catch (const Error&) {
                out += source;
            }
        });
    return out + text.substr(copied);
}

}  // namespace qklab
