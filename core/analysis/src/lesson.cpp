// lesson.cpp — the lesson tables, the lesson file parser and the pause-condition watcher.
#include "qklab/analysis/lesson.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "qklab/analysis/lesson_fit.h"
#include "qklab/analysis/lesson_values.h"
#include "qklab/config/corpus.h"
#include "qklab/config/events.h"
#include "qklab/config/run_config.h"
#include "qklab/store/record_columns.h"
#include "qklab/store/run_store.h"
#include "qklab/util/error.h"
#include "qklab/util/input_file.h"
#include "qklab/util/text_util.h"

namespace qklab {

using nlohmann::json;

const std::vector<LessonField>& lessonStepFields() {
    static const std::vector<LessonField> fields = {
        {"title", "text", false, "the step's heading"},
        {"text", "Markdown", true, "what to look at and why"},
        {"view", "text", false, "the view it shows (below; default live)"},
        {"layer", "integer", false, "the layer the view selects"},
        {"head", "integer", false, "the head the view selects"},
        {"action", "object", false, "what runs (below; default none)"},
        {"pause", "list of conditions", false, "when to stop and explain (below)"},
        {"plots", "list of text", false,
         "metrics whose live plots, and Compare plots, presenter mode shows (1 to 6; default: "
         "loss, raw max logit, q/k norms, entropy and the plots the pause conditions name)"},
    };
    return fields;
}

const std::vector<LessonActionKind>& lessonActionKinds() {
    static const std::vector<LessonActionKind> kinds = {
        {"none", "nothing runs: the step only shows its view and text", {}},
        {"start_preset",
         "train a preset live (an experiments/ preset name, or a file path)",
         {{"preset", "text", true, "preset file name, e.g. blowup_no_qknorm.json"},
          {"set", "object", false, "config overrides: {\"dotted.key\": value}"},
          {"name", "text", false, "run name (default: the lesson and step)"},
          {"fallback_run", "text", false,
           "a stored run to replay instead when the machine is too slow"}}},
        {"intervene",
         "apply an intervention to the live run when it reaches a step",
         {{"at_step", "integer", true, "the step the event applies at"},
          {"event", "object", true,
           "an event without its step, e.g. {\"kind\": \"qk_norm\", ...}"}}},
        {"open_run",
         "show a stored run in the live views",
         {{"run", "text", true, "run id or name"}}},
        {"compare",
         "open stored runs side by side in the comparison view",
         {{"runs", "list of text", false, "run ids or names (2 to 12)"},
          {"comparison", "text", false, "or: a saved comparison's name"}}},
        {"replay",
         "play a stored run back through the live views",
         {{"run", "text", true, "run id or name"},
          {"steps_per_second", "number", false, "replay speed; absent = the recorded wall time"}}},
    };
    return kinds;
}

const std::vector<LessonView>& lessonViews() {
    static const std::vector<LessonView> views = {
        {"live", "the live plots: loss, logits, norms, entropy, lanes"},
        {"histograms", "the raw-logit histogram of one layer and head"},
        {"attention", "the attention maps of one layer and head"},
        {"spikes", "the detected spikes and alarms with their diagnosis"},
        {"compare", "the comparison view"},
        {"sweeps", "the sweeps view"},
        {"config", "the config form"},
    };
    return views;
}

const std::vector<PauseConditionKind>& pauseConditionKinds() {
    static const std::vector<LessonField> probeFields = {
        {"metric", "text", true, "a probe column (e.g. logit_max_raw, entropy) or loss, grad_norm"},
        {"threshold", "number", true, "the line to cross"},
        {"layer", "integer", false, "one layer (default: any layer)"},
        {"callout", "text", false, "what to say when it fires (Markdown)"},
        {"plot", "text", false, "the plot to highlight (default: the metric's)"}};
    static const std::vector<PauseConditionKind> kinds = {
        {"probe_above", "pause when a metric rises above the threshold", probeFields},
        {"probe_below", "pause when a metric falls below the threshold", probeFields},
        {"spike",
         "pause at the first detected loss or grad-norm spike, when the first probe at or after "
         "it (which its diagnosis reads) comes; the callout shows the diagnosis's verdict and "
         "advice (its evidence is in the Spikes view)",
         {{"callout", "text", false, "text before the diagnosis"}}},
        {"logit_alarm",
         "pause at the first logit alarm (raw max > 30 or p99 > 15 in a layer)",
         {{"callout", "text", false, "text before the alarm's reading"}}},
        {"forecast",
         "pause at the run's first forecast (a layer's raw max logit will pass the intervention "
         "line, and when), before it comes true: ask what happens next",
         {{"callout", "text", false, "text before the forecast"}}},
        {"step",
         "pause when the run reaches a step",
         {{"step", "integer", true, "the step"}, {"callout", "text", false, "what to say"}}},
    };
    return kinds;
}

namespace {

// The step column a lesson can watch, or nullptr.
const RecordColumn<StepMetrics>* watchedStepColumn(const std::string& metric) {
    const auto* c = findColumn(stepMetricTable().columns, metric);
    return c && isMeasurement(*c) ? c : nullptr;
}

std::string quotedClip(const std::string& s) {
    return "\"" + clipped(s, 60) + "\"";
}

// "step 3 ("Blow-up")": how messages name a step (1-based, with its title when it has one).
std::string stepLabel(size_t index, const std::string& title) {
    return "step " + std::to_string(index + 1) +
           (title.empty() ? "" : " (" + quotedClip(title) + ")");
}

class LessonParser {
  public:
    explicit LessonParser(std::string origin) : m_origin(std::move(origin)) {}

    Lesson parse(const json& j) {
        if (!j.is_object()) fail("", "a lesson is a JSON object");
        checkKeys(j, {"title", "summary", "teacher_notes", "minutes", "steps"}, "");
        Lesson l;
        l.title = text(j, "title", true);
        l.summary = text(j, "summary", false);
        l.teacherNotes = text(j, "teacher_notes", false);
        l.minutes =
            j.contains("minutes") ? static_cast<int>(integer(j, "minutes", 0, kMaxMinutes)) : 0;
        if (!j.contains("steps") || !j["steps"].is_array() || j["steps"].empty())
            fail("steps", "a lesson needs a non-empty list of steps");
        for (size_t i = 0; i < j["steps"].size(); ++i) {
            const json& s = j["steps"][i];
            m_step = stepLabel(i, s.is_object() && s.contains("title") && s["title"].is_string()
                                      ? s["title"].get<std::string>()
                                      : std::string());
            l.steps.push_back(step(s));
        }
        return l;
    }

  private:
    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        std::string where = m_origin + ": ";
        if (!m_step.empty()) where += m_step + ": ";
        if (!field.empty()) where += field + ": ";
        throw Error(ErrorCode::InvalidConfig, where + what);
    }

    void checkKeys(const json& j, const std::vector<std::string>& allowed,
                   const std::string& prefix) const {
        for (const auto& [k, v] : j.items())
            if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
                fail(prefix + k, "unknown field (expected one of: " + joined(allowed) + ")" +
                                     suggestion(k, allowed));
    }

    static std::string joined(const std::vector<std::string>& names) {
        std::string out;
        for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
        return out;
    }

    // The nearest name by spelling, else the first that holds every word of the key in any
    // order ("max_logit" -> "logit_max_raw").
    static std::string suggestion(const std::string& key, const std::vector<std::string>& names) {
        std::string near = closestMatch(key, names);
        if (near.empty()) {
            std::vector<std::string> words;
            std::stringstream ss(key);
            for (std::string w; std::getline(ss, w, '_');)
                if (!w.empty()) words.push_back(w);
            for (const auto& n : names)
                if (!words.empty() && std::all_of(words.begin(), words.end(), [&](const auto& w) {
                        return n.find(w) != std::string::npos;
                    })) {
                    near = n;
                    break;
                }
        }
        return near.empty() ? "" : " (did you mean \"" + near + "\"?)";
    }

    std::string text(const json& j, const std::string& key, bool required,
                     const std::string& prefix = "") const {
        if (!j.contains(key)) {
            if (required) fail(prefix + key, "missing");
            return "";
        }
        if (!j[key].is_string()) fail(prefix + key, "expected text, got " + shortJson(j[key]));
        return j[key].get<std::string>();
    }

    int64_t integer(const json& j, const std::string& key, int64_t min, int64_t max,
                    const std::string& prefix = "") const {
        const json& v = j[key];
        // An unsigned value above INT64_MAX would read back negative: compare it as written.
        const bool ok =
            v.is_number_integer() &&
            (v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(max)
                                    : v.get<int64_t>() >= min && v.get<int64_t>() <= max);
        if (!ok)
            fail(prefix + key, "expected an integer from " + std::to_string(min) + " to " +
                                   std::to_string(max) + ", got " + shortJson(v));
        return v.get<int64_t>();
    }

    // A run, a run name or a saved comparison's name: what the store could hold (checkRunName).
    void runReference(const json& a, const std::string& key, const std::string& prefix) const {
        if (!a.contains(key)) return;
        try {
            checkRunName(a[key].get<std::string>());
        } catch (const Error& e) {
            fail(prefix + key, e.what());
        }
    }

    void checkFields(const json& j, const std::vector<LessonField>& fields,
                     const std::string& prefix) const {
        std::vector<std::string> names{"kind"};
        for (const auto& f : fields) names.push_back(f.name);
        checkKeys(j, names, prefix);
        for (const auto& f : fields) {
            if (!j.contains(f.name)) {
                if (f.required) fail(prefix + f.name, "missing");
                continue;
            }
            const json& v = j[f.name];
            const bool ok = f.type == "text"      ? v.is_string()
                            : f.type == "number"  ? v.is_number()
                            : f.type == "integer" ? v.is_number_integer()
                            : f.type == "object"  ? v.is_object()
                                                  : isTextList(v);
            if (!ok) fail(prefix + f.name, "expected " + f.type + ", got " + shortJson(v));
        }
    }

    static bool isTextList(const json& v) {
        return v.is_array() &&
               std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); });
    }

    // What the app checks only when it plays the step, checked here: run references it could
    // look up, 2 to 12 runs to compare, a replay speed, config keys for "set".
    void actionValues(const std::string& kind, const json& a) const {
        for (const char* key : {"run", "fallback_run", "comparison", "name"})
            runReference(a, key, "action.");
        if (kind == "start_preset") {
            checkPresetName(a["preset"].get<std::string>());
            const json set = a.value("set", json::object());  // items() needs it alive
            for (const auto& [key, value] : set.items())
                if (key != "events" && !findField(key)) {
                    std::vector<std::string> keys;
                    for (const auto& f : configFields()) keys.push_back(f.key);
                    fail("action.set",
                         quotedClip(key) + " is not a config key" + suggestion(key, keys));
                }
        }
        if (kind == "compare") compareRuns(a);
        if (kind == "replay" && a.contains("steps_per_second")) {
            const double sps = a["steps_per_second"].get<double>();
            if (!(sps > 0 && sps <= kMaxReplaySpeed))
                fail("action.steps_per_second", "expected a number above 0 and at most " +
                                                    shortJson(json(kMaxReplaySpeed)) + ", got " +
                                                    shortJson(a["steps_per_second"]));
        }
    }

    void compareRuns(const json& a) const {
        if (a.contains("runs") == a.contains("comparison"))
            fail("action", "compare needs \"runs\" or \"comparison\" (one of them)");
        if (!a.contains("runs")) return;
        const json& runs = a["runs"];
        if (runs.size() < SavedComparison::kMinRuns || runs.size() > SavedComparison::kMaxRuns)
            fail("action.runs", "compare takes " + std::to_string(SavedComparison::kMinRuns) +
                                    " to " + std::to_string(SavedComparison::kMaxRuns) +
                                    " runs, got " + std::to_string(runs.size()));
        for (size_t i = 0; i < runs.size(); ++i) {
            try {
                checkRunName(runs[i].get<std::string>());
            } catch (const Error& e) {
                fail("action.runs[" + std::to_string(i) + "]", e.what());
            }
        }
    }

    // A preset name or path: text a file name can hold (a NUL would cut the path short).
    void checkPresetName(const std::string& name) const {
        if (name.empty()) fail("action.preset", "empty: give a preset name or file");
        if (name.size() > 4096 || std::any_of(name.begin(), name.end(), [](char c) {
                return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
            }))
            fail("action.preset", "not a file name: " + shortJson(json(name)));
    }

    void action(const json& a) const {
        if (!a.is_object() || !a.contains("kind") || !a["kind"].is_string())
            fail("action", "expected {\"kind\": ...}, got " + shortJson(a));
        const std::string kind = a["kind"].get<std::string>();
        std::vector<std::string> names;
        for (const auto& k : lessonActionKinds()) {
            names.push_back(k.name);
            if (k.name != kind) continue;
            checkFields(a, k.fields, "action.");
            if (kind == "intervene") {
                json e = a["event"];
                e["step"] = a["at_step"];
                try {
                    eventFromJson(e, "action.event");
                } catch (const Error& err) {
                    fail("", err.what());
                }
            }
            actionValues(kind, a);
            return;
        }
        fail("action.kind", quotedClip(kind) + " is not an action (expected one of: " +
                                joined(names) + ")" + suggestion(kind, names));
    }

    PauseCondition pause(const json& p, const std::string& prefix) const {
        if (!p.is_object() || !p.contains("kind") || !p["kind"].is_string())
            fail(prefix, "expected {\"kind\": ...}, got " + shortJson(p));
        PauseCondition c;
        c.kind = p["kind"].get<std::string>();
        const PauseConditionKind* kind = nullptr;
        std::vector<std::string> names;
        for (const auto& k : pauseConditionKinds()) {
            names.push_back(k.name);
            if (k.name == c.kind) kind = &k;
        }
        if (!kind)
            fail(prefix + "kind", quotedClip(c.kind) +
                                      " is not a pause condition (expected one "
                                      "of: " +
                                      joined(names) + ")" + suggestion(c.kind, names));
        checkFields(p, kind->fields, prefix);
        c.callout = text(p, "callout", false, prefix);
        c.plot = text(p, "plot", false, prefix);
        if (p.contains("threshold")) c.threshold = p["threshold"].get<double>();
        if (p.contains("layer"))
            c.layer = static_cast<int>(integer(p, "layer", 0, kMaxLessonIndex, prefix));
        if (p.contains("step")) c.step = integer(p, "step", 0, INT64_MAX, prefix);
        if (p.contains("metric")) {
            c.metric = p["metric"].get<std::string>();
            const auto metrics = lessonMetrics();
            if (std::find(metrics.begin(), metrics.end(), c.metric) == metrics.end())
                fail(prefix + "metric",
                     quotedClip(c.metric) + " is not a metric" + suggestion(c.metric, metrics));
        }
        if (c.plot.empty()) c.plot = c.metric;
        return c;
    }

    // A list of lessonMetrics() names (a step's "plots").
    std::vector<std::string> metricList(const json& list, const std::string& field) const {
        if (!isTextList(list) || list.empty() || list.size() > 6)
            fail(field, "expected a list of 1 to 6 metric names, got " + shortJson(list));
        const auto metrics = lessonMetrics();
        std::vector<std::string> out;
        for (size_t i = 0; i < list.size(); ++i) {
            const std::string m = list[i].get<std::string>();
            if (std::find(metrics.begin(), metrics.end(), m) == metrics.end())
                fail(field + "[" + std::to_string(i) + "]",
                     quotedClip(m) + " is not a metric" + suggestion(m, metrics));
            out.push_back(m);
        }
        return out;
    }

    LessonStep step(const json& s) const {
        if (!s.is_object()) fail("", "a step is a JSON object, got " + shortJson(s));
        std::vector<std::string> keys;
        for (const LessonField& f : lessonStepFields()) keys.push_back(f.name);
        checkKeys(s, keys, "");
        LessonStep st;
        st.title = text(s, "title", false);
        st.text = text(s, "text", true);
        if (s.contains("view")) {
            st.view = text(s, "view", false);
            std::vector<std::string> names;
            for (const auto& v : lessonViews()) names.push_back(v.name);
            if (std::find(names.begin(), names.end(), st.view) == names.end())
                fail("view", quotedClip(st.view) + " is not a view (expected one of: " +
                                 joined(names) + ")" + suggestion(st.view, names));
        }
        if (s.contains("layer"))
            st.layer = static_cast<int>(integer(s, "layer", 0, kMaxLessonIndex));
        if (s.contains("head")) st.head = static_cast<int>(integer(s, "head", 0, kMaxLessonIndex));
        if (s.contains("action")) {
            action(s["action"]);
            st.action = s["action"];
        }
        if (s.contains("plots")) st.plots = metricList(s["plots"], "plots");
        if (s.contains("pause")) {
            if (!s["pause"].is_array()) fail("pause", "expected a list of conditions");
            for (size_t i = 0; i < s["pause"].size(); ++i)
                st.pauses.push_back(pause(s["pause"][i], "pause[" + std::to_string(i) + "]."));
        }
        return st;
    }

    std::string m_origin, m_step;
};

std::string metricTitle(const std::string& metric) {
    if (const auto* c = findColumn(probeColumns(), metric)) return c->title;
    if (const auto* c = watchedStepColumn(metric)) return c->title;
    return metric;
}

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

}  // namespace

std::vector<std::string> lessonMetrics() {
    std::vector<std::string> out;
    for (const auto& c : probeColumns()) out.push_back(c.name);
    for (const auto& c : stepMetricTable().columns)
        if (isMeasurement(c)) out.push_back(c.name);
    return out;
}

std::string lessonReferenceMarkdown() {
    std::ostringstream md;
    const auto fields = [&md](const std::vector<LessonField>& list) {
        for (const auto& f : list)
            md << "  - `" << f.name << "` (" << f.type << (f.required ? ", required" : "")
               << "): " << f.help << "\n";
    };
    md << "<!-- generated by qklab-cli lesson --reference; edit core/analysis/src/lesson.cpp -->\n"
       << "### Lesson\n\n"
       << "- `title` (text, required), `summary` (text), `teacher_notes` (Markdown), `minutes` "
          "(integer: how long it runs live), `steps` (list, required).\n\n"
       << "### Step\n\n";
    for (const auto& f : lessonStepFields())
        md << "- `" << f.name << "` (" << f.type << (f.required ? ", required" : "")
           << "): " << f.help << "\n";
    md << "\n### Views (`view`)\n\n";
    for (const auto& v : lessonViews()) md << "- `" << v.name << "`: " << v.help << "\n";
    md << "\n### Actions (`action.kind`)\n\n";
    for (const auto& k : lessonActionKinds()) {
        md << "- `" << k.name << "`: " << k.help << "\n";
        fields(k.fields);
    }
    md << "\n### Pause conditions (`pause[].kind`)\n\n";
    for (const auto& k : pauseConditionKinds()) {
        md << "- `" << k.name << "`: " << k.help << "\n";
        fields(k.fields);
    }
    md << "\n### Metrics (`pause[].metric`)\n\n"
       << "The probe columns and the step-metric columns that are numbers "
          "(core/store/src/record_columns.cpp).\n\n";
    for (const auto& c : probeColumns()) md << "- `" << c.name << "`: " << c.help << " (probe)\n";
    for (const auto& c : stepMetricTable().columns)
        if (isMeasurement(c)) md << "- `" << c.name << "`: " << c.title << " (step)\n";
    return md.str();
}

Lesson parseLesson(const std::string& text, const std::string& origin) {
    json j;
    try {
        j = parseJsonText(text);
    } catch (const JsonSyntaxError& e) {
        throw Error(ErrorCode::InvalidConfig, origin + ": not valid JSON: " + e.what());
    } catch (const Error& e) {
        throw Error(e.code(), origin + ": " + e.what());
    }
    Lesson l = LessonParser(origin).parse(j);
    l.id = std::filesystem::path(origin).stem().string();
    return l;
}

Lesson loadLessonFile(const std::string& path) {
    return parseLesson(readInputFile(path, kLessonFile), path);
}

std::string resolveLessonPreset(const std::string& name, const std::vector<std::string>& dirs,
                                const std::function<bool(const std::string&)>& exists) {
    if (name.empty()) return {};
    if (exists(name)) return name;
    std::string stem = name;
    if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".json") == 0)
        stem.resize(stem.size() - 5);
    for (const std::string& dir : dirs)
        if (exists(dir + "/" + stem + ".json")) return dir + "/" + stem + ".json";
    return {};
}

std::vector<std::string> lessonSetAssignments(const json& set) {
    std::vector<std::string> out;
    if (!set.is_object()) return out;
    for (const auto& [key, value] : set.items())
        out.push_back(key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
    return out;
}

std::string lessonRunName(const Lesson& lesson, size_t stepIndex) {
    const json& a = lesson.steps.at(stepIndex).action;
    if (a.contains("name") && a["name"].is_string() && !a["name"].get<std::string>().empty())
        return a["name"].get<std::string>();
    return lesson.id + " step " + std::to_string(stepIndex + 1);
}

namespace {

// One start_preset step as the app would start it: found, loaded, overridden, validated.
RunConfig checkStartPreset(const Lesson& lesson, size_t index, const std::string& where,
                           const LessonPresetLookup& presets) {
    const json& a = lesson.steps[index].action;
    const auto fail = [&where](const std::string& field, const std::string& what) {
        throw Error(ErrorCode::InvalidConfig, where + field + ": " + what);
    };
    const std::string name = a.value("preset", "");
    std::optional<std::string> text;
    try {
        text = presets(name);
    } catch (const Error& e) {
        throw Error(e.code(), where + "action.preset: " + e.what());
    }
    if (!text)
        fail("action.preset",
             "there is no preset file or shipped preset called " + quotedClip(name));
    RunConfig c;
    try {
        c = configFromJsonText(*text, "preset " + quotedClip(name));
    } catch (const Error& e) {
        fail("action.preset", e.what());
    }
    const std::vector<std::string> set = lessonSetAssignments(a.value("set", json::object()));
    for (const std::string& assignment : set) {
        try {
            applyOverride(c, assignment);
        } catch (const Error& e) {
            fail("action.set." + clipped(assignment.substr(0, assignment.find('='))), e.what());
        }
    }
    const std::vector<std::string> problems = validationProblems(c);
    if (!problems.empty())
        fail("action",
             "the preset with the step's \"set\" is not a valid config: " + problems.front());
    if (const std::string p = dataSourceProblem(c.data.source); !p.empty()) fail("action", p);
    try {
        checkRunName(lessonRunName(lesson, index));
    } catch (const Error& e) {
        fail("action.name", e.what() + std::string(" (the run name of this step)"));
    }
    return c;
}

}  // namespace

namespace {

// An intervene step's event joins the run before it; the run must still validate with it (a
// step at or past its last, a variant its attention refuses), as --record and the app's
// replay of the recorded run train it.
void addIntervention(LessonRun& run, const LessonStep& step, const std::string& where) {
    json e = step.action.value("event", json::object());
    e["step"] = step.action.value("at_step", int64_t{0});
    run.config.events.push_back(eventFromJson(e, "action.event"));
    std::stable_sort(run.config.events.begin(), run.config.events.end(),
                     [](const Event& a, const Event& b) { return a.step < b.step; });
    const std::vector<std::string> problems = validationProblems(run.config);
    if (!problems.empty())
        throw Error(ErrorCode::InvalidConfig,
                    where + "action.event: run " + quotedClip(run.name) +
                        " with this event is not a valid config: " + problems.front());
}

}  // namespace

std::vector<LessonRun> lessonRuns(const Lesson& lesson, const std::string& origin,
                                  const LessonPresetLookup& presets) {
    std::vector<LessonRun> runs;
    for (size_t i = 0; i < lesson.steps.size(); ++i) {
        const LessonStep& step = lesson.steps[i];
        const std::string where = origin + ": " + stepLabel(i, step.title) + ": ";
        if (step.actionKind() == "intervene" && !runs.empty())
            addIntervention(runs.back(), step, where);
        if (step.actionKind() != "start_preset") continue;
        LessonRun run{lessonRunName(lesson, i), checkStartPreset(lesson, i, where, presets), i};
        // Placeholders, replay and --record find a run by its name: one run per name.
        for (const LessonRun& earlier : runs)
            if (earlier.name == run.name)
                throw Error(ErrorCode::InvalidConfig,
                            where + "action.name: " + quotedClip(run.name) + " is already " +
                                stepLabel(earlier.step, lesson.steps[earlier.step].title) +
                                "'s run; each run a lesson trains needs its own name");
        runs.push_back(std::move(run));
    }
    return runs;
}

void checkLessonPlayable(const Lesson& lesson, const std::string& origin,
                         const LessonPresetLookup& presets) {
    std::map<std::string, RunConfig> configs;  // the runs the lesson trains, by name
    std::map<size_t, std::string> status;      // what the player says as each one starts
    for (const LessonRun& run : lessonRuns(lesson, origin, presets)) {
        configs[run.name] = run.config;
        status[run.step] = lessonStartStatus(run.name, run.config);
    }
    checkLessonValues(lesson, origin, configs);
    checkLessonFits(lesson, origin, status);
}

Lesson parsePlayableLesson(const std::string& text, const std::string& origin,
                           const LessonPresetLookup& presets) {
    Lesson lesson = parseLesson(text, origin);
    checkLessonPlayable(lesson, origin, presets);
    return lesson;
}

std::string defaultCalloutText(const PauseCondition& c, int64_t step, double value) {
    if (c.kind == "step") return "Step " + std::to_string(step) + " reached.";
    std::string what = metricTitle(c.metric);
    if (c.layer) what += " (layer " + std::to_string(*c.layer) + ")";
    const char* verb = c.kind == "probe_below" ? " fell below " : " passed ";
    return what + verb + number(c.threshold) + " at step " + std::to_string(step) + ": " +
           number(value);
}

// ---- PauseWatcher ---------------------------------------------------------------------------

PauseWatcher::PauseWatcher(std::vector<PauseCondition> conditions)
    : m_conditions(std::move(conditions)), m_fired(m_conditions.size(), false) {}

bool PauseWatcher::allFired() const {
    return std::all_of(m_fired.begin(), m_fired.end(), [](bool f) { return f; });
}

std::optional<Callout> PauseWatcher::fire(size_t i, int64_t step, double value,
                                          const std::string& detail) {
    m_fired[i] = true;
    const PauseCondition& c = m_conditions[i];
    Callout out;
    out.condition = i;
    out.step = step;
    out.value = value;
    out.plot = c.plot;
    const std::string lead = c.callout.empty() ? defaultCalloutText(c, step, value) : c.callout;
    out.text = detail.empty() ? lead : lead + "\n\n" + detail;
    return out;
}

namespace {

bool crosses(const PauseCondition& c, double v) {
    if (!std::isfinite(v)) return c.kind == "probe_above" && !std::isnan(v);  // +inf passes
    return c.kind == "probe_above" ? v > c.threshold : v < c.threshold;
}

// NaN when the step has no value (no validation at this step).
double stepMetric(const StepMetrics& m, const RecordColumn<StepMetrics>& column) {
    return numberOf(column.get(m)).value_or(std::nan(""));
}

}  // namespace

std::optional<Callout> PauseWatcher::onStep(const StepMetrics& m) {
    for (size_t i = 0; i < m_conditions.size(); ++i) {
        const PauseCondition& c = m_conditions[i];
        if (m_fired[i]) continue;
        if (c.kind == "step" && m.step >= c.step) return fire(i, m.step, double(m.step), "");
        if (c.kind != "probe_above" && c.kind != "probe_below") continue;
        const auto* column = watchedStepColumn(c.metric);
        if (!column) continue;  // a probe column: onProbes watches it
        const double v = stepMetric(m, *column);
        if (!std::isnan(v) && crosses(c, v)) return fire(i, m.step, v, "");
    }
    return std::nullopt;
}

std::optional<Callout> PauseWatcher::onProbes(int64_t step, const std::vector<ProbeStats>& stats) {
    for (size_t i = 0; i < m_conditions.size(); ++i) {
        const PauseCondition& c = m_conditions[i];
        if (m_fired[i] || (c.kind != "probe_above" && c.kind != "probe_below")) continue;
        const ProbeColumn* column = findColumn(probeColumns(), c.metric);
        if (!column) continue;  // a step metric: onStep watches it
        for (const ProbeStats& s : stats) {
            if (s.head != -1 || (c.layer && s.layer != *c.layer)) continue;  // layer rows only
            const double v = s.*(column->field);
            if (!std::isnan(v) && crosses(c, v)) return fire(i, step, v, "");
        }
    }
    return std::nullopt;
}

std::optional<Callout> PauseWatcher::onSpike(const Spike& s) {
    for (size_t i = 0; i < m_conditions.size(); ++i)
        if (!m_fired[i] && m_conditions[i].kind == "spike") {
            // The verdict and the advice: the evidence is the Spikes view's (lesson_fit.h).
            const std::string reading = calloutReading(s.diagnosis);
            auto out = fire(i, s.step, s.value, reading);
            if (out->plot.empty()) out->plot = s.metric;  // "loss" or "grad_norm"
            if (m_conditions[i].callout.empty())
                out->text = "A " + s.metric + " spike at step " + std::to_string(s.step) + " (" +
                            number(s.zScore) + " sigma).\n\n" + reading;
            return out;
        }
    return std::nullopt;
}

std::optional<Callout> PauseWatcher::onForecast(const Forecast& f) {
    for (size_t i = 0; i < m_conditions.size(); ++i)
        if (!m_fired[i] && m_conditions[i].kind == "forecast") {
            // The forecast's text names its predicted step already ("(step 31; now 9.01, ...)").
            const std::string reading =
                "Forecast at step " + std::to_string(f.step) + ": " + f.text + ".";
            auto out = fire(i, f.step, f.value, reading);
            if (m_conditions[i].callout.empty()) out->text = reading;
            if (out->plot.empty()) out->plot = f.metric;  // "logit_max_raw"
            return out;
        }
    return std::nullopt;
}

std::optional<Callout> PauseWatcher::onLogitAlarm(const LogitAlarm& a) {
    for (size_t i = 0; i < m_conditions.size(); ++i)
        if (!m_fired[i] && m_conditions[i].kind == "logit_alarm") {
            const std::string reading = alarmReading(a.text);
            auto out = fire(i, a.step, a.value, reading);
            if (m_conditions[i].callout.empty()) out->text = reading;
            if (out->plot.empty()) out->plot = a.metric;
            return out;
        }
    return std::nullopt;
}

}  // namespace qklab
