// lesson_test.cpp — lesson files: every shipped lesson parses and validates, a malformed one
// names the step and the field, and pause conditions fire at the right step.
#include "qklab/analysis/lesson.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "qklab/analysis/forecast.h"
#include "qklab/config/names.h"
#include "qklab/util/error.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using namespace qklab;

namespace {

std::string errorOf(const std::string& text) {
    try {
        parseLesson(text, "l.json");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

const char* const kLesson = R"({
  "title": "Blow-up", "summary": "s", "teacher_notes": "n", "minutes": 2,
  "steps": [
    {"title": "Start", "text": "Watch **max logit**.", "view": "live",
     "action": {"kind": "start_preset", "preset": "blowup_no_qknorm.json",
                "set": {"schedule.steps": 100}},
     "pause": [{"kind": "probe_above", "metric": "logit_max_raw", "threshold": 30,
                "callout": "raw max logit just passed 30"},
               {"kind": "probe_below", "metric": "entropy", "layer": 0, "threshold": 0.5},
               {"kind": "spike"}]},
    {"title": "Fix it", "text": "Turn QK-norm on.",
     "action": {"kind": "intervene", "at_step": 60,
                "event": {"kind": "qk_norm", "variant": "rms"}}},
    {"title": "Side by side", "text": "Compare.", "view": "compare",
     "action": {"kind": "compare", "runs": ["healthy", "blowup"]}},
    {"text": "Replay.", "action": {"kind": "replay", "run": "blowup", "steps_per_second": 20}}
  ]})";

ProbeStats layerRow(int64_t step, int layer, double maxRaw, double entropy) {
    ProbeStats s;
    s.step = step;
    s.layer = layer;
    s.head = -1;
    s.logitMaxRaw = maxRaw;
    s.entropy = entropy;
    return s;
}

}  // namespace

TEST(Lesson, ParsesStepsActionsAndPauses) {
    const Lesson l = parseLesson(kLesson, "/x/02-blowup.json");
    EXPECT_EQ(l.id, "02-blowup");
    EXPECT_EQ(l.title, "Blow-up");
    EXPECT_EQ(l.minutes, 2);
    ASSERT_EQ(l.steps.size(), 4u);
    EXPECT_EQ(l.steps[0].actionKind(), "start_preset");
    ASSERT_EQ(l.steps[0].pauses.size(), 3u);
    EXPECT_EQ(l.steps[0].pauses[0].plot, "logit_max_raw");  // defaults to the metric's plot
    EXPECT_EQ(*l.steps[0].pauses[1].layer, 0);
    EXPECT_EQ(l.steps[1].action["at_step"], 60);
    EXPECT_EQ(l.steps[2].view, "compare");
    EXPECT_EQ(l.steps[3].view, "live");  // the default
    EXPECT_EQ(l.steps[3].actionKind(), "replay");
}

TEST(Lesson, MalformedLessonNamesTheStepAndTheField) {
    const auto err = [](const std::string& stepJson) {
        return errorOf(R"({"title": "t", "steps": [{"text": "ok"}, )" + stepJson + "]}");
    };
    std::string e = err(R"({"title": "Two", "text": "x", "pause": [{"kind": "probe_above",
                           "metric": "logit_max_rwa", "threshold": 30}]})");
    EXPECT_NE(e.find("l.json: step 2 (\"Two\"): pause[0].metric: \"logit_max_rwa\" is not a "
                     "metric"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("did you mean \"logit_max_raw\""), std::string::npos) << e;
    e = err(R"({"text": "x", "pause": [{"kind": "probe_above", "metric": "max_logit",
                "threshold": 30}]})");
    EXPECT_NE(e.find("did you mean \"logit_max_raw\""), std::string::npos) << e;
    e = err(R"({"text": "x", "action": {"kind": "start_preset"}})");
    EXPECT_NE(e.find("step 2: action.preset: missing"), std::string::npos) << e;
    e = err(R"({"text": "x", "action": {"kind": "strat_preset", "preset": "a.json"}})");
    EXPECT_NE(e.find("action.kind: \"strat_preset\" is not an action"), std::string::npos) << e;
    EXPECT_NE(e.find("did you mean \"start_preset\""), std::string::npos) << e;
    e = err(R"({"text": "x", "view": "livee"})");
    EXPECT_NE(e.find("step 2: view: \"livee\" is not a view"), std::string::npos) << e;
    e = err(R"({"txt": "x"})");
    EXPECT_NE(e.find("step 2: txt: unknown field"), std::string::npos) << e;
    e = err(R"({"text": "x", "pause": [{"kind": "probe_above", "metric": "entropy"}]})");
    EXPECT_NE(e.find("pause[0].threshold: missing"), std::string::npos) << e;
    e = err(R"({"text": "x", "action": {"kind": "intervene", "at_step": 5,
                "event": {"kind": "qk_norm", "variant": "rmss"}}})");
    EXPECT_NE(e.find("step 2: "), std::string::npos) << e;
    EXPECT_NE(e.find("rmss"), std::string::npos) << e;
    e = err(R"({"text": 5})");
    EXPECT_NE(e.find("step 2: text: expected text"), std::string::npos) << e;
    EXPECT_NE(errorOf("{").find("not valid JSON"), std::string::npos);
    EXPECT_NE(errorOf(R"({"title": "t", "steps": []})").find("steps:"), std::string::npos);
    EXPECT_NE(errorOf(R"({"steps": [{"text": "x"}]})").find("title: missing"), std::string::npos);
}

TEST(Lesson, TablesAgreeWithTheParser) {
    // Every action kind and pause kind the tables list is accepted with its required fields.
    for (const auto& k : lessonActionKinds()) {
        nlohmann::json a = {{"kind", k.name}};
        for (const auto& f : k.fields) {
            if (!f.required) continue;
            if (f.type == "integer")
                a[f.name] = 1;
            else if (f.type == "object")
                a[f.name] = {{"kind", "lr_multiplier"}, {"factor", 0.5}};
            else
                a[f.name] = "x";
        }
        if (k.name == "compare") a["runs"] = {"a", "b"};
        const nlohmann::json lesson = {{"title", "t"}, {"steps", {{{"text", "x"}, {"action", a}}}}};
        EXPECT_NO_THROW(parseLesson(lesson.dump(), "t.json")) << k.name << ": " << a.dump();
    }
    for (const auto& k : pauseConditionKinds()) {
        nlohmann::json p = {{"kind", k.name}};
        for (const auto& f : k.fields)
            if (f.required)
                p[f.name] = f.name == "metric" ? nlohmann::json("entropy") : nlohmann::json(1);
        const nlohmann::json lesson = {{"title", "t"},
                                       {"steps", {{{"text", "x"}, {"pause", {p}}}}}};
        EXPECT_NO_THROW(parseLesson(lesson.dump(), "t.json")) << k.name;
    }
}

TEST(Lesson, EveryShippedLessonParses) {
    const fs::path dir = fs::path(qklab::testpaths::sourceDir()) / "resources" / "lessons";
    int count = 0;
    if (fs::exists(dir))
        for (const auto& entry : fs::directory_iterator(dir)) {
            if (entry.path().extension() != ".json") continue;
            ++count;
            EXPECT_NO_THROW({
                const Lesson l = loadLessonFile(entry.path().string());
                EXPECT_FALSE(l.steps.empty());
                EXPECT_GT(l.minutes, 0) << entry.path() << ": say how long it runs live";
                EXPECT_LE(l.minutes, 3) << entry.path() << ": lessons run in about 2 minutes";
            }) << entry.path();
        }
    if (count == 0) GTEST_SKIP() << "no lessons in " << dir;
}

TEST(PauseWatcher, ProbeConditionsFireOnceAtTheFirstCrossingLayerRow) {
    const Lesson l = parseLesson(kLesson, "l.json");
    PauseWatcher w(l.steps[0].pauses);
    EXPECT_FALSE(w.onProbes(10, {layerRow(10, 0, 12, 2.0), layerRow(10, 1, 29.9, 2.0)}));
    // A head row above the line is not a layer row: ignored.
    ProbeStats head = layerRow(20, 1, 99, 2.0);
    head.head = 3;
    EXPECT_FALSE(w.onProbes(20, {head}));
    const auto c = w.onProbes(30, {layerRow(30, 0, 14, 2.0), layerRow(30, 1, 31.5, 2.0)});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->step, 30);
    EXPECT_DOUBLE_EQ(c->value, 31.5);
    EXPECT_EQ(c->text, "raw max logit just passed 30");
    EXPECT_EQ(c->plot, "logit_max_raw");
    EXPECT_FALSE(w.onProbes(40, {layerRow(40, 1, 50, 2.0)}));  // fired once
    // Entropy of layer 0 only: layer 1 below 0.5 does not count.
    EXPECT_FALSE(w.onProbes(50, {layerRow(50, 1, 50, 0.1), layerRow(50, 0, 50, 0.7)}));
    const auto e = w.onProbes(60, {layerRow(60, 0, 50, 0.42)});
    ASSERT_TRUE(e);
    EXPECT_EQ(e->text, "entropy (layer 0) fell below 0.5 at step 60: 0.42");
    EXPECT_FALSE(w.allFired());
    Spike s;
    s.step = 61;
    s.metric = "loss";
    s.zScore = 7.5;
    s.diagnosis = "Q/K length runaway: use QK-norm.";
    const auto sp = w.onSpike(s);
    ASSERT_TRUE(sp);
    EXPECT_NE(sp->text.find("Q/K length runaway"), std::string::npos);
    EXPECT_EQ(sp->plot, "loss");  // the spike's own metric
    EXPECT_TRUE(w.allFired());
}

TEST(PauseWatcher, StepMetricsAndStepConditions) {
    PauseCondition loss{"probe_above", "loss", std::nullopt, 4.0, 0, "", "loss"};
    PauseCondition at{"step", "", std::nullopt, 0, 25, "", ""};
    PauseWatcher w({loss, at});
    StepMetrics m;
    m.step = 10;
    m.loss = 3.0;
    EXPECT_FALSE(w.onStep(m));
    m.step = 11;
    m.loss = std::nan("");  // NaN never crosses a line
    EXPECT_FALSE(w.onStep(m));
    m.step = 12;
    m.loss = 4.5;
    const auto c = w.onStep(m);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->step, 12);
    m.step = 25;
    m.loss = 1.0;
    const auto s = w.onStep(m);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->text, "Step 25 reached.");
}

// Issue 40: a "forecast" condition fires at the run's first forecast, once, with the forecast
// after the lesson's question, and highlights the plot of the metric it is about.
TEST(PauseWatcher, AForecastConditionFiresAtTheFirstForecast) {
    const Lesson l =
        parseLesson(R"({"title": "t", "summary": "s", "teacher_notes": "n", "minutes": 1,
        "steps": [{"title": "s", "text": "x",
        "pause": [{"kind": "forecast", "callout": "What happens next?"}]}]})",
                    "l.json");
    PauseWatcher w(l.steps[0].pauses);
    EXPECT_FALSE(w.onProbes(5, {layerRow(5, 0, 12, 2.0)}));
    Forecast f;
    f.step = 8;
    f.layer = 0;
    f.metric = "logit_max_raw";
    f.value = 14.5;
    f.predictedStep = 11;
    f.threshold = 30;
    f.rate = std::log(2.0) / 10;
    f.text = forecastText(f);  // as RunMonitor writes it
    ASSERT_EQ(f.text,
              "at this rate the raw max logit of layer 0 passes 30 in about 3 steps (step 11; now "
              "14.5, x2 per 10 steps)");
    const auto c = w.onForecast(f);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->step, 8);
    EXPECT_DOUBLE_EQ(c->value, 14.5);
    EXPECT_EQ(
        c->text,
        "What happens next?\n\nForecast at step 8: at this rate the raw max logit of layer 0 "
        "passes 30 in about 3 steps (step 11; now 14.5, x2 per 10 steps).");  // once, not twice
    EXPECT_EQ(c->plot, "logit_max_raw");
    f.step = 10;
    EXPECT_FALSE(w.onForecast(f));  // once
    EXPECT_TRUE(w.allFired());
}

TEST(Lesson, DocsCarryTheGeneratedReference) {
    std::ifstream in(std::string(qklab::testpaths::sourceDir()) + "/docs/LESSONS.md",
                     std::ios::binary);
    ASSERT_TRUE(in) << "docs/LESSONS.md missing";
    const std::string doc((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(doc.find(lessonReferenceMarkdown()), std::string::npos)
        << "regenerate its reference: build/app/cli/qklab-cli lesson --reference";
}

// A lesson run again into the same database: the next number after the highest used, and
// only names of the series count ("lesson-blowup-healthy" is not "lesson-blowup (N)").
TEST(Lesson, RunsAgainUnderTheNextNumberedName) {
    EXPECT_EQ(numberedName("lesson-blowup", {}), "lesson-blowup");
    EXPECT_EQ(numberedName("lesson-blowup", {"lesson-blowup-healthy"}), "lesson-blowup");
    EXPECT_EQ(numberedName("lesson-blowup", {"lesson-blowup"}), "lesson-blowup (2)");
    EXPECT_EQ(numberedName("lesson-blowup", {"lesson-blowup", "lesson-blowup (3)"}),
              "lesson-blowup (4)");
    EXPECT_EQ(numberedName("x", {"x (2)"}), "x (3)");  // the first deleted: still onwards
    EXPECT_EQ(numberInSeries("x", "x"), 1);
    EXPECT_EQ(numberInSeries("x (12)", "x"), 12);
    for (const char* other :
         {"x (1)", "x (02)", "x ()", "x (2", "x (2) ", "y (2)", "x (-2)", "x (1234567)"})
        EXPECT_EQ(numberInSeries(other, "x"), 0) << other;
}

// The lessons table of docs/LESSONS.md says each lesson's "minutes" as the chooser does.
TEST(Lesson, TheDocsTableStatesEachLessonsMinutes) {
    std::ifstream in(std::string(qklab::testpaths::sourceDir()) + "/docs/LESSONS.md",
                     std::ios::binary);
    const std::string doc((std::istreambuf_iterator<char>(in)), {});
    int checked = 0;
    for (const auto& entry : fs::directory_iterator(std::string(qklab::testpaths::sourceDir()) +
                                                    "/resources/lessons")) {
        const Lesson l = loadLessonFile(entry.path().string());
        const std::string number = std::to_string(std::stoi(l.id.substr(0, 2)));
        const std::string row =
            "| " + number + " | " + l.title + " | ~" + std::to_string(l.minutes) + " min |";
        EXPECT_NE(doc.find(row), std::string::npos) << "docs/LESSONS.md lacks the row " << row;
        ++checked;
    }
    EXPECT_EQ(checked, 8);
}

// Issue 36, item 7: the checker said "ok" where --record then exited 2. It now checks each run
// with the events its intervene steps add, and one run per name (two runs of one name read
// each other's config).
TEST(Lesson, TheCheckerRefusesWhatRecordingWouldRefuse) {
    const auto errorOf = [](const nlohmann::json& steps) {
        const nlohmann::json lesson = {{"title", "t"}, {"steps", steps}};
        const LessonPresetLookup presets = [](const std::string& name) {
            return std::optional<std::string>(
                name == "mla"
                    ? R"({"schedule": {"steps": 20, "warmup_steps": 2}, "attention": {"kind": "mla"}})"
                    : R"({"schedule": {"steps": 20, "warmup_steps": 2}, "probes": {"every": 5}})");
        };
        try {
            parsePlayableLesson(lesson.dump(), "l.json", presets);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("ok");
    };
    const auto start = [](const std::string& preset, const std::string& name, int64_t steps = 20) {
        return nlohmann::json{{"text", "go"},
                              {"action",
                               {{"kind", "start_preset"},
                                {"preset", preset},
                                {"name", name},
                                {"set", {{"schedule.steps", steps}}}}}};
    };
    const auto intervene = [](int64_t at, const nlohmann::json& event) {
        return nlohmann::json{
            {"text", "now"},
            {"action", {{"kind", "intervene"}, {"at_step", at}, {"event", event}}}};
    };
    const nlohmann::json halve = {{"kind", "lr_multiplier"}, {"factor", 0.5}};
    EXPECT_EQ(errorOf({start("p", "a"), intervene(19, halve)}), "ok");
    EXPECT_NE(errorOf({start("p", "a"), intervene(20, halve)})
                  .find("l.json: step 2: action.event: run \"a\" with this event is not a valid "
                        "config: events[0].step = 20: must be in [0, schedule.steps = 20)"),
              std::string::npos)
        << errorOf({start("p", "a"), intervene(20, halve)});
    EXPECT_NE(
        errorOf({start("mla", "m"), intervene(5, {{"kind", "qk_norm"}, {"variant", "layernorm"}})})
            .find("events[0].variant = layernorm: is not supported with attention.kind"),
        std::string::npos);
    // The same name twice: the second step's placeholder read the first run's 100 steps.
    nlohmann::json twice = {start("p", "a", 100), start("p", "a", 10)};
    twice.push_back({{"text", "{{loss at=50}}"}});
    EXPECT_NE(errorOf(twice).find("step 2: action.name: \"a\" is already step 1's run"),
              std::string::npos)
        << errorOf(twice);
}
