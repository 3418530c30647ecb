// events.cpp — the registry of event kinds: parameters, how each changes a step's settings,
// plot labels, JSON in and out. See qklab/config/events.h.
#include "qklab/config/events.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "qklab/config/corpus.h"
#include "qklab/config/run_config.h"
#include "qklab/config/schedules.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

namespace qklab {
namespace {

using nlohmann::json;

[[noreturn]] void paramError(const std::string& where, const std::string& key, const json& v,
                             const std::string& expected) {
    throw Error(ErrorCode::InvalidConfig,
                where + "." + key + " = " + shortJson(v) + ": expected " + expected);
}

// Typed parameter entries, in the style of the config field registry.
EventParamInfo floatParam(std::string key, std::string help, double lo, double hi,
                          double EventArgs::*member, bool required = true) {
    EventParamInfo p{
        std::move(key), FieldType::Float, std::move(help), required, lo, hi, {}, {}, {}, {}};
    p.get = [member](const EventArgs& a) { return json(a.*member); };
    p.set = [member](EventArgs& a, const json& v) { a.*member = v.get<double>(); };
    return p;
}

EventParamInfo intParam(std::string key, std::string help, double lo, double hi,
                        int64_t EventArgs::*member) {
    EventParamInfo p{std::move(key), FieldType::Int, std::move(help), true, lo, hi, {}, {}, {}, {}};
    p.get = [member](const EventArgs& a) { return json(a.*member); };
    p.set = [member](EventArgs& a, const json& v) { a.*member = v.get<int64_t>(); };
    return p;
}

// An optional text parameter (empty = the kind's default).
EventParamInfo textParam(std::string key, std::string help, std::string EventArgs::*member) {
    EventParamInfo p{std::move(key), FieldType::Text, std::move(help), false, 0, 0, {}, {}, {}, {}};
    p.get = [member](const EventArgs& a) { return json(a.*member); };
    p.set = [member](EventArgs& a, const json& v) { a.*member = v.get<std::string>(); };
    return p;
}

template <class E>
EventParamInfo choiceParam(std::string key, std::string help, E EventArgs::*member,
                           bool required = true) {
    EventParamInfo p{std::move(key),
                     FieldType::Choice,
                     std::move(help),
                     required,
                     0,
                     0,
                     choiceNames<E>(),
                     {},
                     {},
                     {}};
    p.get = [member](const EventArgs& a) { return json(nameOf(a.*member)); };
    p.set = [member](EventArgs& a, const json& v) {
        a.*member = *parseChoice<E>(v.get<std::string>());
    };
    return p;
}

std::string number(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

EventKindInfo lrMultiplier() {
    EventKindInfo k;
    k.kind = EventKind::LrMultiplier;
    k.title = "LR multiplier";
    k.action = "Change LR";
    k.help = "multiply the LR schedule by factor from this step on (replaces an earlier factor)";
    k.params = {floatParam("factor", "LR multiplier", 1e-6, 1e6, &EventArgs::factor)};
    k.apply = [](StepSettings& s, const Event& e, int64_t) { s.lrFactor = e.args.factor; };
    k.label = [](const EventArgs& a) { return "lr \u00d7" + number(a.factor); };
    k.change = [](const StepSettings& b, const EventArgs& a) {
        return "lr \u00d7" + number(b.lrFactor) + "\u2192\u00d7" + number(a.factor);
    };
    k.example = {{"step", 200}, {"kind", "lr_multiplier"}, {"factor", 0.5}};
    return k;
}

EventKindInfo contextLength() {
    EventKindInfo k;
    k.kind = EventKind::ContextLength;
    k.title = "Context length";
    k.action = "Switch context";
    k.help =
        "train with this context length from this step on (the model is built for the "
        "longest one the events name)";
    k.params = {intParam("seq_len", "context length T in bytes", 2, 65536, &EventArgs::seqLen)};
    // Positions (RoPE tables, learned embeddings) exist only up to the longest context the
    // config names, so a mid-run switch cannot go beyond it.
    k.params[0].interventionMax = [](const RunConfig& c) { return double(c.maxSeqLen()); };
    k.apply = [](StepSettings& s, const Event& e, int64_t) { s.seqLen = e.args.seqLen; };
    k.label = [](const EventArgs& a) { return "ctx " + std::to_string(a.seqLen); };
    k.change = [](const StepSettings& b, const EventArgs& a) {
        return "ctx " + std::to_string(b.seqLen) + "\u2192" + std::to_string(a.seqLen);
    };
    k.example = {{"step", 300}, {"kind", "context_length"}, {"seq_len", 256}};
    return k;
}

EventKindInfo dirtyBatch() {
    EventKindInfo k;
    k.kind = EventKind::DirtyBatch;
    k.title = "Dirty batch";
    k.action = "Inject batch";
    k.help = "the batch of this one step is heavily repeated text";
    k.params = {textParam("text", "the repeated text (default: an advert)", &EventArgs::text)};
    k.apply = [](StepSettings& s, const Event& e, int64_t step) {
        if (e.step != step) return;
        s.dirtyBatch = true;
        s.dirtyText = e.args.text.empty() ? defaultDirtyText() : e.args.text;
    };
    k.label = [](const EventArgs&) { return std::string("dirty batch"); };
    k.change = [](const StepSettings&, const EventArgs&) { return std::string("dirty batch"); };
    k.example = {{"step", 450}, {"kind", "dirty_batch"}};
    return k;
}

EventKindInfo qkNorm() {
    EventKindInfo k;
    k.kind = EventKind::QkNorm;
    k.title = "QK-norm";
    k.action = "Switch QK-norm";
    k.help = "switch the QK-norm variant from this step on (fully on: alpha = 1)";
    k.params = {choiceParam<QkNormVariant>("variant", "QK-norm variant", &EventArgs::variant)};
    k.apply = [](StepSettings& s, const Event& e, int64_t) {
        s.qkNorm = e.args.variant;
        s.alpha = 1.0;  // switching a variant on means using it fully
        s.inAnnealWindow = false;
    };
    k.label = [](const EventArgs& a) { return std::string("qk_norm ") + nameOf(a.variant); };
    k.change = [](const StepSettings& b, const EventArgs& a) {
        return std::string("qk_norm ") + nameOf(b.qkNorm) + "\u2192" + nameOf(a.variant);
    };
    k.example = {{"step", 500}, {"kind", "qk_norm"}, {"variant", "rms"}};
    return k;
}

EventKindInfo qkAnneal() {
    EventKindInfo k;
    k.kind = EventKind::QkAnneal;
    k.title = "QK-norm anneal";
    k.action = "Start anneal";
    k.help =
        "anneal QK-norm away: alpha falls 1 -> 0 over `steps` steps from this step "
        "(learnable QK gains freeze unless anneal.qk_norm.freeze_gain is false)";
    k.params = {intParam("steps", "length of the anneal in steps", 1, 1e7, &EventArgs::steps),
                choiceParam<AnnealShape>("shape", "alpha curve", &EventArgs::shape, false)};
    k.apply = [](StepSettings& s, const Event& e, int64_t step) {
        const double t =
            std::min(1.0, static_cast<double>(step - e.step) / static_cast<double>(e.args.steps));
        s.alpha = annealAlphaAt(t, e.args.shape);
        s.inAnnealWindow = true;
    };
    k.label = [](const EventArgs& a) { return "anneal " + std::to_string(a.steps) + " steps"; };
    k.change = [](const StepSettings& b, const EventArgs& a) {
        return std::string("qk_norm ") + nameOf(b.qkNorm) + " annealed out over " +
               std::to_string(a.steps) + " steps";
    };
    k.example = {{"step", 800}, {"kind", "qk_anneal"}, {"steps", 80}, {"shape", "linear"}};
    return k;
}

EventKindInfo softcap() {
    EventKindInfo k;
    k.kind = EventKind::Softcap;
    k.title = "Softcap";
    k.action = "Set softcap";
    k.help = "switch the attention-logit softcap from this step on";
    k.params = {
        choiceParam<SoftcapKind>("cap", "cap form", &EventArgs::cap),
        floatParam("c", "cap width C (ignored for cap none)", 0.1, 1e6, &EventArgs::c, false)};
    k.apply = [](StepSettings& s, const Event& e, int64_t) {
        s.softcap = e.args.cap;
        s.softcapC = e.args.c;
    };
    k.label = [](const EventArgs& a) {
        return a.cap == SoftcapKind::None
                   ? std::string("softcap none")
                   : std::string("softcap ") + nameOf(a.cap) + " C=" + number(a.c);
    };
    k.change = [](const StepSettings& b, const EventArgs& a) {
        auto cap = [](SoftcapKind kind, double c) {
            return kind == SoftcapKind::None ? std::string("none")
                                             : std::string(nameOf(kind)) + " C=" + number(c);
        };
        return "softcap " + cap(b.softcap, b.softcapC) + "\u2192" + cap(a.cap, a.c);
    };
    k.example = {{"step", 900}, {"kind", "softcap"}, {"cap", "tanh"}, {"c", 50.0}};
    return k;
}

EventKindInfo qkClip() {
    EventKindInfo k;
    k.kind = EventKind::QkClip;
    k.title = "QK-Clip";
    k.action = "Set QK-Clip";
    k.help =
        "switch QK-Clip from this step on: after each update (every attention.qk_clip.every), a "
        "head whose max scaled logit exceeds tau gets W_q and W_k scaled by sqrt(tau/S_max); "
        "tau 0 = off";
    k.params = {
        floatParam("tau", "clip threshold tau (0 = off; Kimi K2: 100)", 0, 1e6, &EventArgs::tau)};
    k.apply = [](StepSettings& s, const Event& e, int64_t) { s.qkClipTau = e.args.tau; };
    auto state = [](double tau) { return tau > 0 ? "tau=" + number(tau) : std::string("off"); };
    k.label = [state](const EventArgs& a) { return "qk_clip " + state(a.tau); };
    k.change = [state](const StepSettings& b, const EventArgs& a) {
        return "qk_clip " + state(b.qkClipTau) + "\u2192" + state(a.tau);
    };
    k.example = {{"step", 950}, {"kind", "qk_clip"}, {"tau", 100.0}};
    return k;
}

EventKindInfo skipStep() {
    EventKindInfo k;
    k.kind = EventKind::SkipStep;
    k.title = "Skip step";
    k.action = "Skip update";
    k.help =
        "this one step computes its loss and gradients but makes no update (optim.skip_step = "
        "sigma records one for each step it skips, with why)";
    k.params = {textParam("why", "a note (optional; the sigma policy writes what it saw)",
                          &EventArgs::why)};
    k.apply = [](StepSettings& s, const Event& e, int64_t step) {
        if (e.step == step) s.skipUpdate = true;
    };
    k.label = [](const EventArgs&) { return std::string("skip"); };
    k.change = [](const StepSettings&, const EventArgs&) { return std::string("update skipped"); };
    k.example = {{"step", 451}, {"kind", "skip_step"}};
    return k;
}

std::vector<EventKindInfo> buildKinds() {
    std::vector<EventKindInfo> kinds{lrMultiplier(), contextLength(), dirtyBatch(), qkNorm(),
                                     qkAnneal(),     softcap(),       qkClip(),     skipStep()};
    for (auto& k : kinds) k.name = nameOf(k.kind);  // the name table stays the only spelling
    return kinds;
}

// Type and range check of one parameter value, then the typed store.
void setParam(const EventParamInfo& p, EventArgs& args, const json& v, const std::string& where) {
    switch (p.type) {
        case FieldType::Float:
            if (!v.is_number()) paramError(where, p.key, v, "a number");
            if (!(v.get<double>() >= p.minValue && v.get<double>() <= p.maxValue))
                paramError(where, p.key, v,
                           "a number in [" + number(p.minValue) + ", " + number(p.maxValue) + "]");
            break;
        case FieldType::Int:
            if (!v.is_number_integer()) paramError(where, p.key, v, "an integer");
            if (v.get<double>() < p.minValue || v.get<double>() > p.maxValue)
                paramError(
                    where, p.key, v,
                    "an integer in [" + number(p.minValue) + ", " + number(p.maxValue) + "]");
            break;
        case FieldType::Choice: {
            std::string list;
            for (const auto& c : p.choices) list += (list.empty() ? "" : " | ") + c;
            if (!v.is_string() || std::find(p.choices.begin(), p.choices.end(),
                                            v.get<std::string>()) == p.choices.end())
                paramError(where, p.key, v, "one of " + list);
            break;
        }
        case FieldType::Text:
            if (!v.is_string() || v.get<std::string>().empty())
                paramError(where, p.key, v, "a non-empty string");
            break;
        case FieldType::Bool:
        case FieldType::FloatPair:
        case FieldType::Scale:  // config-form types; no event parameter has them
            throw Error(ErrorCode::Internal, where + ": parameter " + p.key + " has a form type");
    }
    p.set(args, v);
}

}  // namespace

const std::vector<EventKindInfo>& eventKinds() {
    static const std::vector<EventKindInfo> kinds = buildKinds();
    return kinds;
}

const EventKindInfo& eventKindInfo(EventKind kind) {
    return eventKinds().at(static_cast<size_t>(kind));
}

const EventKindInfo* findEventKind(const std::string& name) {
    const auto kind = parseChoice<EventKind>(name);
    return kind ? &eventKindInfo(*kind) : nullptr;
}

Event eventFromJson(const json& j, const std::string& where) {
    if (!j.is_object()) throw Error(ErrorCode::InvalidConfig, where + ": expected an object");
    if (!j.contains("step") || !j["step"].is_number_integer())
        throw Error(ErrorCode::InvalidConfig, where + ".step: expected an integer step");
    if (!j.contains("kind") || !j["kind"].is_string())
        throw Error(ErrorCode::InvalidConfig, where + ".kind: expected a string");
    const std::string name = j["kind"].get<std::string>();
    const EventKindInfo* info = findEventKind(name);
    if (!info)
        throw Error(ErrorCode::InvalidConfig, where + ".kind = \"" + clipped(name) +
                                                  "\": must be one of " + choiceList<EventKind>());
    Event e;
    e.step = j["step"].get<int64_t>();
    e.kind = info->kind;
    // An unsigned step beyond int64 would wrap to a negative one.
    if (e.step < 0 || (j["step"].is_number_unsigned() &&
                       j["step"].get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())))
        throw Error(ErrorCode::InvalidConfig,
                    where + ".step = " + shortJson(j["step"]) + ": must be in [0, 2^63)");
    std::vector<std::string> known{"step", "kind", "source"};
    for (const auto& p : info->params) known.push_back(p.key);
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (std::find(known.begin(), known.end(), it.key()) != known.end()) continue;
        const std::string hint = closestMatch(it.key(), known);
        throw Error(ErrorCode::InvalidConfig,
                    where + ": " + name + " takes no parameter \"" + clipped(it.key()) + "\"" +
                        (hint.empty() ? std::string() : " (did you mean \"" + hint + "\"?)"));
    }
    for (const auto& p : info->params) {
        if (j.contains(p.key))
            setParam(p, e.args, j[p.key], where);
        else if (p.required)
            throw Error(ErrorCode::InvalidConfig,
                        where + ": " + name + " needs \"" + p.key + "\" (" + p.help + ")");
    }
    if (j.contains("source")) {
        const auto source = j["source"].is_string()
                                ? parseChoice<EventSource>(j["source"].get<std::string>())
                                : std::nullopt;
        if (!source)
            throw Error(ErrorCode::InvalidConfig, where + ".source = " + shortJson(j["source"]) +
                                                      ": must be one of " +
                                                      choiceList<EventSource>());
        e.source = *source;
    }
    return e;
}

json eventParamsJson(const Event& e) {
    json params = json::object();
    for (const auto& p : eventKindInfo(e.kind).params) {
        const json v = p.get(e.args);
        if (p.type == FieldType::Text && v.get<std::string>().empty()) continue;  // default text
        params[p.key] = v;
    }
    return params;
}

json eventToJson(const Event& e) {
    json j = eventParamsJson(e);
    j["step"] = e.step;
    j["kind"] = nameOf(e.kind);
    if (e.source != EventSource::Config) j["source"] = nameOf(e.source);
    return j;
}

std::string eventText(const Event& e) {
    nlohmann::ordered_json j;
    j["step"] = e.step;
    j["kind"] = nameOf(e.kind);
    const json params = eventParamsJson(e);
    for (const auto& p : eventKindInfo(e.kind).params)
        if (params.contains(p.key)) j[p.key] = params[p.key];
    if (e.source != EventSource::Config) j["source"] = nameOf(e.source);
    return j.dump();
}

Event eventFromRecord(int64_t step, const std::string& kind, const std::string& paramsJson,
                      const std::string& source) {
    const std::string where = "stored event at step " + std::to_string(step);
    json j;
    try {
        j = parseJsonText(paramsJson);
    } catch (const JsonSyntaxError&) {
        throw Error(ErrorCode::InvalidConfig, where + ": parameters are not JSON");
    } catch (const Error& e) {
        throw Error(e.code(), where + ": " + e.what());
    }
    if (!j.is_object()) j = json::object();
    j.erase("_intervention");  // written by qklab 0.1 into user events (now `source`)
    j["step"] = step;
    j["kind"] = kind;
    j["source"] = source.empty() ? std::string("config") : source;
    return eventFromJson(j, where);
}

std::string eventLabel(const std::string& kind, const std::string& paramsJson) {
    try {
        const Event e = eventFromRecord(0, kind, paramsJson, "config");
        return eventKindInfo(e.kind).label(e.args);
    } catch (const std::exception&) {
        return kind;  // an unknown kind or unreadable parameters still get a marker
    }
}

}  // namespace qklab
