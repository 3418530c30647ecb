// lesson_values_test.cpp — numbers in lesson text filled from the run on screen: each kind of
// placeholder against hand-computed rows, "…" until the run gets there, and the checker's
// refusals (a metric, step, probe step, layer or run the lesson cannot read).
#include "qklab/analysis/lesson_values.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "qklab/analysis/lesson.h"
#include "qklab/util/error.h"

using namespace qklab;

namespace {

// Two layers probed every 5 steps: layer 0's raw max 10*(s/5+1) (10, 20, 30, 40), layer 1's 25;
// entropy 3 - s/10 in layer 0, 2.5 in layer 1; loss 5 - s/10 every step.
struct Rows {
    std::vector<StepMetrics> steps;
    std::vector<ProbeStats> probes;
    Rows(int n) {
        for (int s = 0; s < n; ++s) {
            StepMetrics m;
            m.step = s;
            m.loss = 5 - s / 10.0;
            steps.push_back(m);
            if (s % 5) continue;
            for (int layer = 0; layer < 2; ++layer) {
                ProbeStats p;
                p.step = s;
                p.layer = layer;
                p.head = -1;
                p.logitMaxRaw = layer == 0 ? 10.0 * (s / 5 + 1) : 25;
                p.entropy = layer == 0 ? 3 - s / 10.0 : 2.5;
                probes.push_back(p);
                p.head = 0;  // a head row: never read
                p.logitMaxRaw = 1e6;
                probes.push_back(p);
            }
        }
    }
    LessonRowsLookup lookup() const {
        return [this](const std::string& run) -> std::optional<LessonRunRows> {
            if (!run.empty() && run != "other") return std::nullopt;
            return LessonRunRows{&steps, &probes};
        };
    }
};

std::string fill(const std::string& text, int steps = 16) {
    const Rows rows(steps);
    return fillLessonValues(text, rows.lookup());
}

// The message lessonValuesIn gives for `text`, "" when it parses.
std::string error(const std::string& text) {
    try {
        lessonValuesIn(text);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(LessonValues, EachKindReadsTheWorstLayerOrTheOneNamed) {
    EXPECT_EQ(fill("{{logit_max_raw at=0}}"), "25");  // layer 1's 25 beats layer 0's 10
    EXPECT_EQ(fill("{{logit_max_raw at=15}}"), "40");
    EXPECT_EQ(fill("{{logit_max_raw at=5 layer=0}}"), "20");
    // Over the run's steps, each at its worst layer: the lowest of those is step 0's 25.
    EXPECT_EQ(fill("{{logit_max_raw max}} {{logit_max_raw min}}"), "40 25");
    EXPECT_EQ(fill("{{logit_max_raw min layer=0}}"), "10");
    EXPECT_EQ(fill("{{entropy at=10}}"), "2");  // entropy: the lowest layer is the worst
    EXPECT_EQ(fill("{{entropy last layer=1}}"), "2.5");
    EXPECT_EQ(fill("past 30 at {{logit_max_raw first_above=30}}"), "past 30 at step 15");
    EXPECT_EQ(fill("{{entropy first_below=2.2}}"), "step 10");  // 3 - 1.0 = 2.0 < 2.2
    EXPECT_EQ(fill("{{loss at=3}}, last {{loss last}}"), "4.7, last 3.5");
    EXPECT_EQ(fill("{{logit_max_raw at=0 run=other}}"), "25");
    EXPECT_EQ(fill("**{{logit_max_raw at=10}}** in layer 0"), "**30** in layer 0");
    EXPECT_EQ(fill("no placeholder {single} or {{unclosed"),
              "no placeholder {single} or {{unclosed");
    // Large values round to whole numbers, small ones keep three digits.
    Rows big(1);
    big.probes[0].logitMaxRaw = 1088.3;
    big.probes[2].logitMaxRaw = 0.0243;
    EXPECT_EQ(fillLessonValues("{{logit_max_raw max}} {{logit_max_raw min layer=1}}", big.lookup()),
              "1088 0.0243");
}

TEST(LessonValues, NotThereYetShowsAnEllipsis) {
    EXPECT_EQ(fill("{{logit_max_raw at=15}}", 12), "…");  // probes reached step 10
    EXPECT_EQ(fill("{{logit_max_raw first_above=35}}", 12), "not yet");
    EXPECT_EQ(fill("{{logit_max_raw max run=missing}}"), "…");  // that run has not started
    EXPECT_EQ(fill("{{logit_max_raw last}}", 0), "…");
}

TEST(LessonValues, MalformedPlaceholdersNameThemselves) {
    EXPECT_NE(error("{{max_logit at=10}}").find("is not a metric"), std::string::npos);
    EXPECT_NE(error("{{logit_max_rav at=10}}").find("did you mean \"logit_max_raw\""),
              std::string::npos);
    EXPECT_NE(error("{{logit_max_raw at=ten}}").find("at=ten is not a number"), std::string::npos);
    EXPECT_NE(error("{{logit_max_raw at=-1}}").find("not a step or layer"), std::string::npos);
    EXPECT_NE(error("{{logit_max_raw peak}}").find("\"peak\" is not max, min, last"),
              std::string::npos);
    EXPECT_NE(error("{{logit_max_raw when=3}}").find("\"when=\""), std::string::npos);
    EXPECT_NE(error("{{}}").find("names no metric"), std::string::npos);
    EXPECT_EQ(lessonValuesIn("{{entropy at=95 layer=0}} {{val_loss last}}").size(), 2u);
}

// A placeholder in a step before any run is trained reads nothing.
TEST(LessonValues, TheCheckerRefusesAPlaceholderBeforeAnyRun) {
    nlohmann::json lesson = {{"title", "t"},
                             {"steps", {{{"text", "Intro {{logit_max_raw at=5}}"}}}}};
    try {
        parsePlayableLesson(lesson.dump(), "l.json",
                            [](const std::string&) { return std::optional<std::string>(); });
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("step 1: text: {{logit_max_raw at=5}}: reads no run"),
                  std::string::npos)
            << e.what();
    }
}

// Issue 37: lesson 2 step 4 quoted the layer's max (1063) beside head 0's histogram (865).
TEST(LessonValues, TheCheckerRefusesLayerValuesBesideOneHeadsHistogram) {
    const auto errorOf = [](const nlohmann::json& step) {
        nlohmann::json lesson = {
            {"title", "t"},
            {"steps",
             {{{"text", "Train."},
               {"action", {{"kind", "start_preset"}, {"preset", "p"}, {"name", "main"}}}},
              step}}};
        const LessonPresetLookup presets = [](const std::string&) -> std::optional<std::string> {
            return R"({"schedule": {"steps": 100}, "probes": {"every": 5}})";
        };
        try {
            parsePlayableLesson(lesson.dump(), "l.json", presets);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    nlohmann::json step = {{"text", "Raw max {{logit_max_raw last layer=0}}."},
                           {"view", "histograms"},
                           {"layer", 0},
                           {"head", 0}};
    EXPECT_NE(errorOf(step).find("l.json: step 2: head: the text quotes layer values (every "
                                 "head) beside the histogram of head 0"),
              std::string::npos)
        << errorOf(step);
    step.erase("head");  // all heads: the layer the placeholder reads
    EXPECT_EQ(errorOf(step), "");
}

TEST(LessonValues, TheCheckerReadsEachPlaceholderAgainstItsRun) {
    const auto errorOf = [](const std::string& text, const std::string& callout = "ok") {
        nlohmann::json lesson = {
            {"title", "t"},
            {"steps",
             {{{"text", "Train."},
               {"action", {{"kind", "start_preset"}, {"preset", "p"}, {"name", "main"}}}},
              {{"text", text},
               {"pause", {{{"kind", "step"}, {"step", 3}, {"callout", callout}}}}}}}};
        const LessonPresetLookup presets = [](const std::string&) -> std::optional<std::string> {
            return R"({"schedule": {"steps": 100}, "probes": {"every": 5}, "eval": {"every": 50},
                       "model": {"n_layers": 2}})";
        };
        try {
            parsePlayableLesson(lesson.dump(), "l.json", presets);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(errorOf("{{logit_max_raw at=95}} {{entropy at=10 layer=1}} {{val_loss at=49}} "
                      "{{val_loss at=99}} {{loss at=7}} {{logit_max_raw first_above=30}} "
                      "{{loss max run=main}}"),
              "");
    EXPECT_NE(errorOf("{{logit_max_raw at=100}}").find("step 100: the run ends at step 99"),
              std::string::npos);
    EXPECT_NE(errorOf("{{logit_max_raw at=12}}").find("step 12 is not probed (probes.every = 5)"),
              std::string::npos);
    EXPECT_NE(errorOf("{{val_loss at=60}}").find("no validation loss"), std::string::npos);
    EXPECT_NE(errorOf("{{entropy at=10 layer=2}}").find("layer 2: the run has 2 layers"),
              std::string::npos);
    EXPECT_NE(errorOf("{{loss max run=healthy}}")
                  .find("run=healthy is not a run this lesson trains (it trains: main)"),
              std::string::npos);
    EXPECT_NE(errorOf("ok", "{{loss at=100}}").find("step 2: pause[0].callout: {{loss at=100}}"),
              std::string::npos);
    EXPECT_NE(errorOf("{{max_logit at=5}}").find("l.json: step 2: text: "), std::string::npos);
}

// The unrounded number behind each kind (what `qklab-cli value` prints): the value, or the step
// for a crossing; nothing for a step not reached or a line never crossed.
TEST(LessonValues, NumbersAreTheUnroundedValuesOrTheCrossingStep) {
    Rows rows(16);
    rows.probes[6].logitMaxRaw = 1088.3;  // layer 1 at step 5 (rows: step, layer, head 0 row)
    const LessonRunRows r{&rows.steps, &rows.probes};
    const auto number = [&](const std::string& text) {
        return lessonValueNumber(lessonValuesIn(text).at(0), r);
    };
    EXPECT_EQ(number("{{logit_max_raw max}}"), 1088.3);  // fillLessonValues says "1088"
    EXPECT_EQ(number("{{logit_max_raw at=5 layer=0}}"), 20.0);
    EXPECT_EQ(number("{{logit_max_raw min}}"), 25.0);
    EXPECT_EQ(number("{{loss at=3}}"), 5 - 0.3);
    EXPECT_EQ(number("{{logit_max_raw first_above=30}}"), 5.0);  // 1088.3 at step 5
    EXPECT_EQ(number("{{logit_max_raw first_above=30 layer=0}}"), 15.0);
    EXPECT_EQ(number("{{entropy first_below=2.2}}"), 10.0);
    EXPECT_EQ(number("{{logit_max_raw first_above=5000}}"), std::nullopt);
    EXPECT_EQ(number("{{logit_max_raw at=20}}"), std::nullopt);  // not reached
    EXPECT_EQ(fillLessonValues("{{logit_max_raw first_above=5000}}", rows.lookup()), "not yet");
    const Rows none(0);
    EXPECT_EQ(lessonValueNumber(lessonValuesIn("{{loss last}}").at(0),
                                LessonRunRows{&none.steps, &none.probes}),
              std::nullopt);
}

// Issue 36: only decimal numbers (std::stod took "0x10" and "1e1" alike), no empty run=, and a
// value echoed in a message is clipped.
TEST(LessonValues, NumbersAreDecimalAndRunNamesAreNotEmpty) {
    EXPECT_NE(error("{{loss at=0x10}}").find("is not a number"), std::string::npos);
    EXPECT_NE(error("{{loss first_above=nan}}").find("is not a number"), std::string::npos);
    EXPECT_NE(error("{{loss first_above=1e999}}").find("is not a number"), std::string::npos);
    EXPECT_NE(error("{{loss last run=}}").find("run= names no run"), std::string::npos);
    EXPECT_LT(error("{{loss at=1.5" + std::string(100000, '0') + "}}").size(), 200u);
    EXPECT_EQ(lessonValuesIn("{{loss at=1e1}}").at(0).arg, 10.0);
    EXPECT_EQ(lessonValuesIn("{{loss first_above=-.5}}").at(0).arg, -0.5);
}

// A diverged step keeps its NaN: "at" and "last" say NaN rather than an earlier healthy value;
// max and min are over the finite values.
TEST(LessonValues, ADivergedValueIsNaNNotTheLastHealthyOne) {
    Rows rows(16);
    rows.steps[15].loss = std::nan("");
    rows.probes[12].logitMaxRaw = std::nan("");  // layer 0 at step 15 (step, layer, head rows)
    const LessonRunRows r{&rows.steps, &rows.probes};
    const auto number = [&](const std::string& text) {
        return lessonValueNumber(lessonValuesIn(text).at(0), r);
    };
    EXPECT_TRUE(std::isnan(number("{{loss last}}").value()));
    EXPECT_TRUE(std::isnan(number("{{loss at=15}}").value()));
    EXPECT_EQ(number("{{loss max}}"), 5.0);
    EXPECT_EQ(number("{{loss min}}"), 5 - 1.4);
    EXPECT_TRUE(std::isnan(number("{{logit_max_raw at=15}}").value()));  // its worst layer
    EXPECT_EQ(number("{{logit_max_raw max}}"), 30.0);
}

// Issue 38: a placeholder can quote a scalar a Python run logged besides qklab's metrics
// ("custom:NAME"), at the steps it logged it at; a NaN it logged stays NaN, as for the loss.
TEST(LessonValues, APlaceholderReadsACustomScalarByName) {
    const Rows rows(16);
    const std::vector<CustomScalar> scalars = {{0, "train/acc", 0.25},  {4, "train/acc", 0.5},
                                               {8, "train/acc", 0.875}, {12, "train/acc", 0.75},
                                               {8, "tokens", 4096},     {4, "z", std::nan("")}};
    const LessonRunRows r{&rows.steps, &rows.probes, &scalars};
    const auto number = [&](const std::string& text) {
        return lessonValueNumber(lessonValuesIn(text).at(0), r);
    };
    EXPECT_EQ(number("{{custom:train/acc at=4}}"), 0.5);
    EXPECT_EQ(number("{{custom:train/acc at=5}}"), std::nullopt);  // not logged at step 5
    EXPECT_EQ(number("{{custom:train/acc max}}"), 0.875);
    EXPECT_EQ(number("{{custom:train/acc min}}"), 0.25);
    EXPECT_EQ(number("{{custom:train/acc last}}"), 0.75);
    EXPECT_EQ(number("{{custom:train/acc first_above=0.6}}"), 8.0);
    EXPECT_EQ(number("{{custom:tokens last}}"), 4096.0);
    EXPECT_TRUE(std::isnan(number("{{custom:z at=4}}").value()));
    EXPECT_EQ(number("{{custom:other last}}"), std::nullopt);  // a name the run never logged
    // Filled as the app shows it; a run with no custom scalars (qklab's own) shows "…".
    const auto lookup = [&](const std::string&) -> std::optional<LessonRunRows> { return r; };
    EXPECT_EQ(
        fillLessonValues("acc {{custom:train/acc last}} at {{custom:tokens last}} tokens", lookup),
        "acc 0.75 at 4096 tokens");
    EXPECT_EQ(fill("{{custom:train/acc last}}"), "…");
    // The grammar stays the lessons': one word names it, layer= does not apply.
    EXPECT_NE(error("{{custom: last}}").find("custom: names no scalar"), std::string::npos);
    EXPECT_NE(error("{{custom:acc last layer=0}}").find("not per layer"), std::string::npos);
    EXPECT_NE(error("{{train/acc last}}").find("custom:NAME"), std::string::npos);
}

// Issue 40: {{forecast step|eta|text}} read the run's first forecast (of a layer with layer=):
// where it was made, the crossing it predicts, its sentence; "not yet" before one, and only
// those words, layer= and run= parse.
TEST(LessonValues, AForecastPlaceholderReadsTheRunsFirstForecast) {
    const Rows rows(16);
    Forecast late;
    late.step = 120;
    late.layer = 0;
    late.predictedStep = 170;
    late.text = "at this rate the raw max logit of layer 0 passes 30 in about 50 steps";
    Forecast first = late;
    first.step = 96;
    first.layer = 1;
    first.predictedStep = 136;
    first.text = "at this rate the raw max logit of layer 1 passes 30 in about 40 steps";
    const std::vector<Forecast> forecasts{first, late};
    const LessonRunRows r{&rows.steps, &rows.probes, nullptr, &forecasts};
    const auto lookup = [&](const std::string&) -> std::optional<LessonRunRows> { return r; };
    EXPECT_EQ(fillLessonValues("made at {{forecast step}}, for {{forecast eta}}", lookup),
              "made at step 96, for step 136");
    EXPECT_EQ(fillLessonValues("{{forecast text}}", lookup), first.text);
    EXPECT_EQ(fillLessonValues("{{forecast eta layer=0}}", lookup), "step 170");
    EXPECT_EQ(lessonValueNumber(lessonValuesIn("{{forecast eta}}").at(0), r), 136.0);
    EXPECT_EQ(lessonValueNumber(lessonValuesIn("{{forecast text}}").at(0), r), std::nullopt);

    // None yet (a run without forecasts, or before its first).
    EXPECT_EQ(fill("{{forecast step}} / {{forecast text}}"), "not yet / not yet");

    EXPECT_NE(error("{{forecast when}}").find("is not step, eta or text"), std::string::npos);
    EXPECT_NE(error("{{forecast at=10}}").find("does not apply to a forecast"), std::string::npos);
    EXPECT_EQ(error("{{forecast eta layer=1 run=other}}"), "");
}
