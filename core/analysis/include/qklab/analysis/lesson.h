// qklab/analysis/lesson.h — a lesson: a title, notes for the teacher and ordered steps, each with
// text, a view, an action and optional pause conditions. Lessons are data (JSON files shipped in
// resources/lessons/ or a user's own); the app's lesson player shows them. Torch-free.
//
// Three tables say what a step may hold, and everything else (the parser's checks and
// messages, docs/LESSONS.md's reference, the player's dispatch) iterates them:
//   lessonActionKinds()    start_preset, intervene, open_run, compare, replay, none
//   lessonViews()          the tabs a step can show
//   pauseConditionKinds()  probe_above, probe_below, spike, logit_alarm, step
// Probe metrics are the store's probe columns (probeColumns()) plus the step metrics below.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "qklab/config/run_config.h"
#include "qklab/store/records.h"

namespace qklab {

// ---- the tables ---------------------------------------------------------------------------

struct LessonField {
    std::string name;  // JSON key
    std::string type;  // "text", "number", "integer", "object", "list of text"
    bool required = false;
    std::string help;
};

// The fields a step may hold (the parser's allowed keys and the reference's Step list).
const std::vector<LessonField>& lessonStepFields();

struct LessonActionKind {
    std::string name;  // e.g. "start_preset"
    std::string help;
    std::vector<LessonField> fields;
};
const std::vector<LessonActionKind>& lessonActionKinds();

struct LessonView {
    std::string name;  // e.g. "live"
    std::string help;
};
const std::vector<LessonView>& lessonViews();

struct PauseConditionKind {
    std::string name;  // e.g. "probe_above"
    std::string help;
    std::vector<LessonField> fields;
};
const std::vector<PauseConditionKind>& pauseConditionKinds();

// Metrics a probe condition may watch: every probe column, plus these step metrics.
std::vector<std::string> lessonMetrics();

// Bounds of values the tables type only as "integer" / "number": a layer or head index (no
// model qklab trains has more), a replay speed (steps/s) and a lesson's stated length.
constexpr int64_t kMaxLessonIndex = 1023;
constexpr double kMaxReplaySpeed = 1e6;
constexpr int64_t kMaxMinutes = 1440;

// ---- a parsed lesson ------------------------------------------------------------------------

struct PauseCondition {
    std::string kind;          // a pauseConditionKinds() name
    std::string metric;        // probe_above / probe_below: a lessonMetrics() name
    std::optional<int> layer;  // probe conditions: one layer; none = any layer
    double threshold = 0;
    int64_t step = 0;     // kind "step": pause when this step is reached
    std::string callout;  // shown when it fires (Markdown); a default is written if empty
    std::string plot;     // the plot the callout highlights (a metric name); default from metric
};

struct LessonStep {
    std::string title;
    std::string text;  // Markdown
    std::string view = "live";
    std::optional<int> layer, head;
    nlohmann::json action = {{"kind", "none"}};  // validated against lessonActionKinds()
    std::vector<PauseCondition> pauses;
    std::vector<std::string> plots;  // metrics whose plots presenter mode shows (none: its default)
    std::string actionKind() const { return action.value("kind", "none"); }
};

struct Lesson {
    std::string id;  // file stem, e.g. "02-blowup"
    std::string title, summary, teacherNotes;
    int minutes = 0;  // how long it runs live on a 2-core laptop (stated by the author)
    std::vector<LessonStep> steps;
};

// Throws Error{InvalidConfig} naming the file, the step (1-based, with its title) and the
// field, e.g. "lesson.json: step 3 ("Blow-up"): pause[0].metric: "max_logit" is not a metric
// (did you mean "logit_max_raw"?)".
Lesson parseLesson(const std::string& text, const std::string& origin);
Lesson loadLessonFile(const std::string& path);  // through readInputFile (qklab/util/input_file.h)

// ---- what playing a lesson needs ------------------------------------------------------------

// The text of the preset a start_preset step names (a shipped preset's name, with or without
// ".json", or a file path), or nullopt when there is none by that name. The app looks in its
// embedded presets and the user's folder, `qklab-cli lesson` in preset folders on disk; both
// resolve names with resolveLessonPreset() and read files with readInputFile(), whose Error
// (a FIFO, a device, a file over the limit) the lookup lets through.
using LessonPresetLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Where a start_preset name points: `name` itself when exists(name), else NAME.json (".json"
// dropped first, so "x" and "x.json" agree) in the first of `dirs` that has it; "" when none.
std::string resolveLessonPreset(const std::string& name, const std::vector<std::string>& dirs,
                                const std::function<bool(const std::string&)>& exists);

// `dotted.key=value` for each entry of a start_preset step's "set", as the app applies them
// (text values bare, others as JSON).
std::vector<std::string> lessonSetAssignments(const nlohmann::json& set);

// The name of the run a start_preset step trains: its "name", else "<lesson id> step N".
std::string lessonRunName(const Lesson& lesson, size_t stepIndex);

// Everything the app would refuse or fail on when it plays the lesson's steps, short of what
// only the database or the machine can say (a stored run that is missing, the memory a run
// needs): each start_preset step's preset is found and loads, its "set" applies, the config
// validates (with the events of its intervene steps), its data.source is a readable corpus and
// its run name a valid name, used by no other of its runs. Throws
// Error{InvalidConfig} (the lookup's code for a file it refuses) naming `origin`, the step and
// the field, as parseLesson does.
void checkLessonPlayable(const Lesson& lesson, const std::string& origin,
                         const LessonPresetLookup& presets);

// The runs a lesson trains, in order, as the app and `qklab-cli lesson --record` train them:
// each start_preset step's preset with its "set", under the step's run name, with the events
// of the intervene steps that follow it (sorted by step). Each is checked as
// checkLessonPlayable says, and with its events; two runs of one name are refused.
struct LessonRun {
    std::string name;
    RunConfig config;
    size_t step = 0;  // the start_preset step's index
};
std::vector<LessonRun> lessonRuns(const Lesson& lesson, const std::string& origin,
                                  const LessonPresetLookup& presets);

// parseLesson, then checkLessonPlayable: how both the app and `qklab-cli lesson` load a lesson.
Lesson parsePlayableLesson(const std::string& text, const std::string& origin,
                           const LessonPresetLookup& presets);

// The reference part of docs/LESSONS.md, written from the three tables and the metric list
// (`qklab-cli lesson --reference`); a test keeps the file in step with it.
std::string lessonReferenceMarkdown();

// ---- pause conditions at run time ---------------------------------------------------------

// What fired: the condition, the step, the value and the text to show.
struct Callout {
    size_t condition = 0;  // index into the step's pauses
    int64_t step = 0;
    double value = 0;
    std::string text;
    std::string plot;
};

// Watches one lesson step's conditions over a live (or replayed) run; each condition fires at
// most once. Feed it what the trainer reports, in order.
class PauseWatcher {
  public:
    explicit PauseWatcher(std::vector<PauseCondition> conditions);
    std::optional<Callout> onStep(const StepMetrics& m);
    std::optional<Callout> onProbes(int64_t step, const std::vector<ProbeStats>& stats);
    std::optional<Callout> onSpike(const Spike& s);
    std::optional<Callout> onLogitAlarm(const LogitAlarm& a);
    std::optional<Callout> onForecast(const Forecast& f);
    bool allFired() const;

  private:
    std::optional<Callout> fire(size_t i, int64_t step, double value, const std::string& detail);
    std::vector<PauseCondition> m_conditions;
    std::vector<bool> m_fired;
};

// The text of a condition that fired, when the lesson gives none: "raw max logit (layer 0)
// passed 30 at step 18: 31.2".
std::string defaultCalloutText(const PauseCondition& c, int64_t step, double value);

}  // namespace qklab
