// trainer_policy.cpp — optim.skip_step, the skip-step policies of a run (issue 40): the sigma
// rule judges each step, read back before its update, and skips the update of a step above the
// line (a skip_step event of source "policy"); the forecast policy lowers the LR for a while
// after a forecast of an onset (two lr_multiplier events of source "policy": down, then back).
// Their state (the sigma window, the policy's events) goes into each checkpoint, so a resumed
// run acts exactly as one that never stopped.
#include <algorithm>

#include "qklab/util/text_util.h"
#include "trainer_impl.h"

namespace qklab {

namespace {

void insertByStep(std::vector<Event>& events, const Event& e) {
    auto pos = std::upper_bound(events.begin(), events.end(), e,
                                [](const Event& a, const Event& b) { return a.step < b.step; });
    events.insert(pos, e);
}

}  // namespace

void Trainer::Impl::buildPolicy() {
    if (config.optim.skipStep == SkipStepPolicy::Sigma)
        skipDetector.emplace(config.optim.skipWindow, config.optim.skipSigma);
}

// The sigma rule on a step whose loss and grad norm were read before its update.
bool Trainer::Impl::policySkips(const StepPlan& plan, PendingStep& p) {
    if (!skipDetector || !p.hostValues) return false;
    const SkipVerdict v = skipDetector->observe(p.hostValues->first, p.hostValues->second);
    if (!v.skip) return false;
    Event e;
    e.step = plan.step;
    e.kind = EventKind::SkipStep;
    e.args.why = v.why;
    e.source = EventSource::Policy;
    p.events.push_back(
        EventRecord{e.step, nameOf(e.kind), eventParamsJson(e).dump(), nameOf(e.source)});
    return true;
}

// A forecast made at `step` (read back at its end, before step + 1 runs): the LR times
// optim.forecast_lr_factor from step + 1 for optim.forecast_lr_steps steps, unless a lowering
// is in progress already.
void Trainer::Impl::actOnForecasts(int64_t step, const std::vector<Forecast>& forecasts) {
    if (config.optim.skipStep != SkipStepPolicy::Forecast || forecasts.empty()) return;
    const int64_t from = step + 1;
    for (const Event& e : config.events)
        if (e.source == EventSource::Policy && e.step >= from) return;  // lowered already
    if (from >= config.schedule.steps) return;
    const double current = settingsAt(config, from).lrFactor;
    Event down;
    down.step = from;
    down.kind = EventKind::LrMultiplier;
    down.args.factor = current * config.optim.forecastLrFactor;
    down.source = EventSource::Policy;
    insertByStep(config.events, down);
    Event back = down;
    back.step = from + config.optim.forecastLrSteps;
    back.args.factor = current;
    if (back.step < config.schedule.steps) insertByStep(config.events, back);
}

// {"window": [[loss, grad norm], ...], "events": [the policy's events]}.
std::string Trainer::Impl::policyState() const {
    nlohmann::json window = nlohmann::json::array(), events = nlohmann::json::array();
    if (skipDetector)
        for (const auto& [loss, grad] : skipDetector->window()) window.push_back({loss, grad});
    for (const Event& e : config.events)
        if (e.source == EventSource::Policy) events.push_back(eventToJson(e));
    return nlohmann::json{{"window", window}, {"events", events}}.dump();
}

void Trainer::Impl::restorePolicyState(const std::string& text, const std::string& where) {
    nlohmann::json j;
    try {
        j = parseJsonText(text);
    } catch (const std::exception&) {
        throw Error(ErrorCode::BadCheckpoint, where + ": the policy state is not JSON");
    }
    if (!j.is_object() || !j.value("window", nlohmann::json()).is_array() ||
        !j.value("events", nlohmann::json()).is_array())
        throw Error(ErrorCode::BadCheckpoint, where + ": the policy state is not readable");
    std::vector<std::pair<double, double>> window;
    for (const auto& v : j["window"]) {
        if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number())
            throw Error(ErrorCode::BadCheckpoint,
                        where + ": a policy window entry is not two numbers");
        window.emplace_back(v[0].get<double>(), v[1].get<double>());
    }
    if (skipDetector) skipDetector->restore(window);
    for (const auto& v : j["events"]) {
        Event e;
        try {
            e = eventFromJson(v, where + " policy event");
        } catch (const Error& err) {
            throw Error(ErrorCode::BadCheckpoint, err.what());
        }
        e.source = EventSource::Policy;
        // The stored config may hold it already (a preset that wrote "source": "policy").
        const bool known =
            std::any_of(config.events.begin(), config.events.end(),
                        [&](const Event& o) { return eventToJson(o) == eventToJson(e); });
        if (!known) insertByStep(config.events, e);
    }
}

}  // namespace qklab
