// qklab/lesson.h — a lesson: a title, notes for the teacher and ordered steps, each with text,
// a view, an action and optional pause conditions. Lessons are data (JSON files shipped in
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
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "qklab/records.h"

namespace qklab {

// ---- the tables ---------------------------------------------------------------------------

struct LessonField {
    std::string name;  // JSON key
    std::string type;  // "text", "number", "integer", "object", "list of text"
    bool required = false;
    std::string help;
};

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
Lesson loadLessonFile(const std::string& path);  // through readInputFile (qklab/input_file.h)

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
