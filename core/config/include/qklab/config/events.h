// qklab/config/events.h — timed changes to a run, and the one registry of their kinds.
//
// An event changes the run from its step on: the LR multiplier, the context length, one
// dirty batch, the QK-norm variant, a QK-norm anneal, the softcap, QK-Clip, one skipped update.
// Each kind is one entry in eventKinds(): its name, help, typed parameters (defaults, ranges,
// help), how it changes the step's settings, and its plot label. The JSON reader and writer,
// validation, the form's events editor, the intervention panel, the plot labels, `qklab-cli keys`
// and docs/CONFIG.md all read that registry; a new kind is added there and nowhere else.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "qklab/util/choices.h"

namespace qklab {

enum class EventKind {
    LrMultiplier,
    ContextLength,
    DirtyBatch,
    QkNorm,
    QkAnneal,
    Softcap,
    QkClip,
    SkipStep
};
template <>
struct Choices<EventKind> {
    static constexpr std::array<const char*, 8> names{
        "lr_multiplier", "context_length", "dirty_batch", "qk_norm",
        "qk_anneal",     "softcap",        "qk_clip",     "skip_step"};
};

// Who put an event into the run: its config (a preset or the form), the user mid-run (an
// intervention, which a replay turns into a config event), or the run's optim.skip_step policy
// (a skipped update, a lowered LR).
enum class EventSource { Config, User, Policy };
template <>
struct Choices<EventSource> {
    static constexpr std::array<const char*, 3> names{"config", "user", "policy"};
};

// The typed parameters of every kind; a kind reads the few its registry entry names.
struct EventArgs {
    double factor = 1.0;                         // lr_multiplier
    int64_t seqLen = 0;                          // context_length
    std::string text;                            // dirty_batch; empty = the built-in ad text
    QkNormVariant variant = QkNormVariant::Rms;  // qk_norm
    int64_t steps = 1;                           // qk_anneal
    AnnealShape shape = AnnealShape::Linear;     // qk_anneal
    SoftcapKind cap = SoftcapKind::Tanh;         // softcap
    double c = 50.0;                             // softcap
    double tau = 100.0;                          // qk_clip (0 = off)
    std::string why;                             // skip_step: what the policy saw
};

struct Event {
    int64_t step = 0;
    EventKind kind = EventKind::LrMultiplier;
    EventArgs args;
    EventSource source = EventSource::Config;
};

struct StepSettings;
struct RunConfig;

struct EventParamInfo {
    std::string key;  // JSON key, e.g. "factor"
    FieldType type;   // Float, Int, Text or Choice
    std::string help;
    bool required = true;               // optional ones take the EventArgs default
    double minValue = 0, maxValue = 0;  // Float/Int: accepted range (inclusive)
    std::vector<std::string> choices;   // Choice
    std::function<nlohmann::json(const EventArgs&)> get;
    std::function<void(EventArgs&, const nlohmann::json&)> set;  // no range check
    // Mid-run, a tighter upper bound than maxValue (the context a model was built for).
    std::function<double(const RunConfig&)> interventionMax;
};

struct EventKindInfo {
    EventKind kind;
    std::string name;    // JSON name, e.g. "lr_multiplier"
    std::string title;   // for people, e.g. "LR multiplier"
    std::string action;  // the intervention button, e.g. "Change LR"
    std::string help;    // what it does, one line
    std::vector<EventParamInfo> params;
    // Changes the settings of a step at or after the event's step (events apply in order).
    std::function<void(StepSettings&, const Event&, int64_t step)> apply;
    std::function<std::string(const EventArgs&)> label;  // plot label, e.g. "LR ×0.5"
    // What the event changed, given the settings just before it, e.g. "qk_norm none→rms": the
    // run list's key settings say what a run actually trained with, not only how it started.
    std::function<std::string(const StepSettings& before, const EventArgs&)> change;
    nlohmann::json example;  // a complete event, for docs and the form
};

const std::vector<EventKindInfo>& eventKinds();
const EventKindInfo& eventKindInfo(EventKind kind);
const EventKindInfo* findEventKind(const std::string& name);

// {"step": 300, "kind": "...", <parameters>, "source": "user"?}. Unknown keys, wrong types and
// out-of-range values throw Error{InvalidConfig} naming `where` + the key and the value.
Event eventFromJson(const nlohmann::json& j, const std::string& where);
nlohmann::json eventToJson(const Event& e);  // source only when not "config"
// The same, as text in the order people write it: step, kind, then the parameters in registry
// order (docs, the form's placeholder and tooltips).
std::string eventText(const Event& e);
// The parameters alone (what the store's events table keeps next to step, kind and source).
nlohmann::json eventParamsJson(const Event& e);
// An event rebuilt from a stored row; throws Error when the kind or parameters are not valid.
Event eventFromRecord(int64_t step, const std::string& kind, const std::string& paramsJson,
                      const std::string& source);
// A plot label for a stored event; the bare kind name when it cannot be read.
std::string eventLabel(const std::string& kind, const std::string& paramsJson);

}  // namespace qklab
