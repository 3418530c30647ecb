// config_test.cpp — RunConfig JSON in/out, --set overrides, validation messages, presets.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "qklab/config/config_docs.h"
#include "qklab/config/run_config.h"
#include "qklab/config/schedules.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"
#include "support/test_paths.h"

using namespace qklab;
using nlohmann::json;

namespace {

// The message of the InvalidConfig error that f throws ("" if none is thrown).
template <class F>
std::string configError(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidConfig);
        return e.what();
    }
    return "";
}

std::string errorFor(const json& j) {
    return configError([&] { configFromJson(j); });
}

}  // namespace

TEST(Config, EmptyPresetMeansDefaults) {
    const RunConfig c = configFromJson(json::object());
    EXPECT_EQ(configToJson(c), configToJson(RunConfig{}));
    EXPECT_DOUBLE_EQ(c.optim.lr, 3e-3);
    EXPECT_EQ(c.dHead(), 32);
    EXPECT_NEAR(c.logitScale(), 1.0 / std::sqrt(32.0), 1e-15);
}

TEST(Config, JsonRoundTripKeepsEveryField) {
    RunConfig c;
    c.optim.lr = 0.0123;
    c.optim.betas = {0.8, 0.99};
    c.attention.qkNorm = QkNormVariant::RmsAffine;
    c.attention.scale = 0.125;
    c.attention.softcap = {SoftcapKind::Tanh, 30};
    c.anneal.qkNorm = {0.9, 1.0, AnnealShape::Cosine};
    c.events.push_back(
        eventFromJson({{"step", 10}, {"kind", "lr_multiplier"}, {"factor", 2.0}}, "test"));
    const json j = configToJson(c);
    const RunConfig back = configFromJson(j);
    EXPECT_EQ(configToJson(back), j);
    EXPECT_EQ(back.attention.scale.value(), 0.125);
    EXPECT_EQ(back.events.at(0).args.factor, 2.0);
    // Every registry key appears in the JSON, at its dotted path.
    for (const auto& f : configFields()) {
        const json* node = &j;
        std::string key = f.key;
        for (size_t dot; (dot = key.find('.')) != std::string::npos; key = key.substr(dot + 1))
            node = &node->at(key.substr(0, dot));
        EXPECT_TRUE(node->contains(key)) << f.key;
    }
}

TEST(Config, UnknownKeyIsNamedWithASuggestion) {
    const auto msg = errorFor({{"optim", {{"lrr", 0.1}}}});
    EXPECT_NE(msg.find("\"optim.lrr\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("did you mean \"optim.lr\""), std::string::npos) << msg;
    EXPECT_NE(errorFor({{"colour", "red"}}).find("colour"), std::string::npos);
}

TEST(Config, RetiredKeyIsSkippedWhenReadAndRefusedWhenSet) {
    // Runs stored before issue 25 carry probes.exact_percentiles in their config: they open.
    const RunConfig old =
        configFromJson({{"probes", {{"every", 5}, {"exact_percentiles", false}}}});
    EXPECT_EQ(old.probes.every, 5);
    EXPECT_EQ(configToJson(old)["probes"].count("exact_percentiles"), 0u);
    // Setting it is bad input that names the key and the value and says why it went.
    RunConfig c;
    const auto msg = configError([&] { applyOverride(c, "probes.exact_percentiles=true"); });
    EXPECT_NE(msg.find("probes.exact_percentiles=true"), std::string::npos) << msg;
    EXPECT_NE(msg.find("was retired: probe percentiles are always exact"), std::string::npos)
        << msg;
    // It tells the user what the runs recorded with it hold, not which issue changed it.
    EXPECT_NE(msg.find("estimated them from a sample of 32768 values per row unless this key was "
                       "true; the runs it recorded keep those values"),
              std::string::npos)
        << msg;
    EXPECT_EQ(msg.find("issue"), std::string::npos) << msg;
    // A misspelt key is still an unknown key.
    EXPECT_NE(errorFor({{"probes", {{"exact_percentile", true}}}}).find("unknown config key"),
              std::string::npos);
}

TEST(Config, EveryUnknownKeyIsNamedAtOnce) {
    // Two typos in one preset: both are named, so fixing one does not reveal the next.
    const auto msg = errorFor({{"optim", {{"lrr", 0.1}}}, {"model", {{"n_layerz", 2}}}});
    EXPECT_EQ(msg.rfind("2 unknown config keys: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("\"optim.lrr\" (did you mean \"optim.lr\"?)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("\"model.n_layerz\" (did you mean \"model.n_layers\"?)"), std::string::npos)
        << msg;
    // Very many are counted after the first eight.
    nlohmann::json many = nlohmann::json::object();
    for (int i = 0; i < 11; ++i) many["zz" + std::to_string(i)] = i;
    const auto counted = errorFor(many);
    EXPECT_EQ(counted.rfind("11 unknown config keys: ", 0), 0u) << counted;
    EXPECT_NE(counted.find(" and 3 more"), std::string::npos) << counted;
}

TEST(Config, WrongTypesNameKeyAndValue) {
    auto msg = errorFor({{"model", {{"d_model", "big"}}}});
    EXPECT_NE(msg.find("model.d_model"), std::string::npos) << msg;
    EXPECT_NE(msg.find("\"big\""), std::string::npos) << msg;
    msg = errorFor({{"model", {{"n_layers", 2.5}}}});
    EXPECT_NE(msg.find("an integer"), std::string::npos) << msg;
    msg = errorFor({{"attention", {{"qk_norm", "bogus"}}}});
    EXPECT_NE(msg.find("attention.qk_norm"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rms_affine"), std::string::npos) << msg;  // lists the choices
    msg = errorFor({{"optim", {{"betas", {0.9}}}}});
    EXPECT_NE(msg.find("optim.betas"), std::string::npos) << msg;
    msg = errorFor({{"attention", {{"scale", "half"}}}});
    EXPECT_NE(msg.find("inv_sqrt_d"), std::string::npos) << msg;
}

TEST(Config, BadValuesNameKeyAndValue) {
    struct Case {
        json j;
        std::string expect;
    };
    const std::vector<Case> cases{
        {{{"optim", {{"lr", -1}}}}, "optim.lr = -1"},
        {{{"optim", {{"lr", 0}}}}, "optim.lr = 0"},
        {{{"model", {{"n_heads", 5}}}}, "model.n_heads = 5: must divide model.d_model = 128"},
        {{{"attention", {{"softcap", {{"c", 0}}}}}}, "attention.softcap.c = 0"},
        {{{"anneal", {{"qk_norm", {{"start", 1.5}}}}}}, "anneal.qk_norm.start = 1.5"},
        {{{"anneal", {{"qk_norm", {{"start", -0.1}}}}}}, "anneal.qk_norm.start = -0.1"},
        {{{"anneal", {{"softcap", {{"start", 0.8}, {"end", 0.5}}}}}}, "anneal.softcap.end = 0.5"},
        {{{"model", {{"seq_len", 1}}}}, "model.seq_len = 1"},
        {{{"schedule", {{"steps", 10}, {"warmup_steps", 20}}}}, "schedule.warmup_steps = 20"},
        {{{"probes", {{"hist_min", 5}, {"hist_max", 5}}}}, "probes.hist_max = 5"},
        {{{"model", {{"d_model", 96}, {"n_heads", 32}}}}, "RoPE needs an even d_head"},
    };
    for (const auto& c : cases) {
        const auto msg = errorFor(c.j);
        EXPECT_NE(msg.find(c.expect), std::string::npos) << c.j.dump() << " -> " << msg;
    }
}

TEST(Config, EventsAreParsedSortedAndChecked) {
    const RunConfig c =
        configFromJson({{"events",
                         {{{"step", 50}, {"kind", "dirty_batch"}},
                          {{"step", 10}, {"kind", "context_length"}, {"seq_len", 256}}}}});
    ASSERT_EQ(c.events.size(), 2u);
    EXPECT_EQ(c.events[0].kind, EventKind::ContextLength);
    EXPECT_EQ(c.maxSeqLen(), 256);
    auto msg = errorFor({{"events", {{{"step", 5}, {"kind", "explode"}}}}});
    EXPECT_NE(msg.find("events[0].kind = \"explode\""), std::string::npos) << msg;
    msg = errorFor({{"events", {{{"step", 5}, {"kind", "context_length"}, {"seq_len", 1}}}}});
    EXPECT_NE(msg.find("events[0].seq_len"), std::string::npos) << msg;
    msg = errorFor({{"events", {{{"step", 100000}, {"kind", "dirty_batch"}}}}});
    EXPECT_NE(msg.find("events[0].step = 100000"), std::string::npos) << msg;
    msg = errorFor({{"events", {{{"step", 5}, {"kind", "lr_multiplier"}, {"factor", -2}}}}});
    EXPECT_NE(msg.find("events[0].factor"), std::string::npos) << msg;
}

TEST(Config, SetOverridesParseValues) {
    RunConfig c;
    applyOverride(c, "optim.lr=3e-2");
    EXPECT_DOUBLE_EQ(c.optim.lr, 0.03);
    applyOverride(c, "attention.qk_norm=rms");
    EXPECT_EQ(c.attention.qkNorm, QkNormVariant::Rms);
    applyOverride(c, "optim.betas=[0.9,0.99]");
    EXPECT_DOUBLE_EQ(c.optim.betas[1], 0.99);
    applyOverride(c, "attention.scale=0.125");
    EXPECT_DOUBLE_EQ(c.attention.scale.value(), 0.125);
    applyOverride(c, "attention.scale=inv_sqrt_d");
    EXPECT_FALSE(c.attention.scale.has_value());
    applyOverride(c, "data.source=123");  // a file name that looks like a number stays text
    EXPECT_EQ(c.data.source, "123");
    applyOverride(c, "model.rope=false");
    EXPECT_FALSE(c.model.rope);
    applyOverride(c, R"(events=[{"step":3,"kind":"softcap","cap":"tanh","c":30}])");
    EXPECT_EQ(c.events.size(), 1u);
    EXPECT_NE(configError([&] { applyOverride(c, "optim.lrr=1"); }).find("optim.lrr"),
              std::string::npos);
    EXPECT_NE(configError([&] { applyOverride(c, "justakey"); }).find("dotted.key=value"),
              std::string::npos);
    EXPECT_NE(configError([&] { applyOverride(c, "schedule.steps=many"); }).find("schedule.steps"),
              std::string::npos);
}

TEST(Config, MalformedPresetTextNamesTheFile) {
    const auto msg = configError([] { configFromJsonText("{\"optim\": {", "broken.json"); });
    EXPECT_NE(msg.find("broken.json is not valid JSON"), std::string::npos) << msg;
    try {
        loadPreset("/nonexistent/preset.json");
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::MissingFile);
        EXPECT_NE(std::string(e.what()).find("/nonexistent/preset.json"), std::string::npos);
    }
}

TEST(Config, EveryShippedPresetIsValidAndSaysWhy) {
    int count = 0;
    for (const auto& entry :
         std::filesystem::directory_iterator(qklab::testpaths::source("/experiments"))) {
        if (entry.path().extension() != ".json") continue;
        const RunConfig c = loadPreset(entry.path().string());
        EXPECT_GT(c.why.size(), 40u) << entry.path();
        // fp32 tanh reaches C exactly: a capped logit is <= C, never claimed to be < C.
        if (c.attention.softcap.kind != SoftcapKind::None) {
            std::ostringstream strict;
            strict << "< " << c.attention.softcap.c;
            EXPECT_EQ(c.why.find(strict.str()), std::string::npos) << entry.path();
        }
        ++count;
    }
    EXPECT_GE(count, 5);
}

TEST(Config, ValidationBatchesAreBounded) {
    RunConfig c;
    c.eval.batches = 1000000000;  // passed validation and spent days in one validation pass
    const auto problems = validationProblems(c);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("eval.batches = 1e+09: must be in [1, 1000]"), std::string::npos)
        << problems[0];
    c.eval.batches = 1000;
    EXPECT_TRUE(validationProblems(c).empty());
}

TEST(Config, WarningsFollowTheGuide) {
    RunConfig c;
    c.attention.qkNorm = QkNormVariant::Rms;
    c.attention.softcap = {SoftcapKind::Tanh, 50};
    c.anneal.qkNorm = {0.9, 1.0, AnnealShape::Linear};
    c.anneal.softcap = {0.95, 1.0, 1000};
    auto w = configWarnings(c);
    ASSERT_FALSE(w.empty());
    EXPECT_NE(w[0].find("both fuses"), std::string::npos);
    c.anneal.softcap = {1.0, 1.0, 1000};
    EXPECT_TRUE(configWarnings(c).empty());
    c.attention.scale = 1.0;  // forgot 1/sqrt(d_head) after RMSNorm
    w = configWarnings(c);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("too sharp"), std::string::npos);
}

TEST(Config, ValidationProblemsListsAllAtOnce) {
    RunConfig c;
    c.optim.lr = -1;
    c.model.seqLen = 1;
    c.attention.softcap.c = -5;
    EXPECT_EQ(validationProblems(c).size(), 3u);
}

TEST(Config, DocsConfigMdIsTheRegistriesOutput) {
    std::ifstream in(std::string(qklab::testpaths::sourceDir()) + "/docs/CONFIG.md",
                     std::ios::binary);
    ASSERT_TRUE(in) << "docs/CONFIG.md missing";
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), configReferenceMarkdown())
        << "regenerate it: build/app/cli/qklab-cli keys --markdown > docs/CONFIG.md";
}

TEST(Events, EveryKindRoundTripsThroughJsonValidationAndTheStore) {
    const std::string dir = std::filesystem::temp_directory_path() / "qklab-events-XXXXXX";
    std::string tmpl = dir;
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    const std::string db = tmpl + "/runs.db";
    RunConfig c;
    c.schedule.steps = 1000;
    for (const auto& k : eventKinds()) c.events.push_back(eventFromJson(k.example, k.name));
    ASSERT_EQ(c.events.size(), eventKinds().size());
    std::stable_sort(c.events.begin(), c.events.end(),
                     [](const Event& a, const Event& b) { return a.step < b.step; });
    EXPECT_TRUE(validationProblems(c).empty());
    // JSON: the config writes each event back exactly as its registry example reads.
    const RunConfig back = configFromJson(configToJson(c));
    for (size_t i = 0; i < c.events.size(); ++i) {
        const auto& k = eventKindInfo(c.events[i].kind);
        EXPECT_EQ(eventToJson(c.events[i]), k.example) << k.name;
        EXPECT_EQ(eventToJson(back.events[i]), eventToJson(c.events[i])) << k.name;
    }
    // Store: written as records (user events, as the trainer reports interventions) and read back.
    {
        RunWriter w(db, NewRun{});
        for (auto e : c.events) {
            e.source = EventSource::User;
            w.addEvent(
                EventRecord{e.step, nameOf(e.kind), eventParamsJson(e).dump(), nameOf(e.source)});
        }
        w.finish(RunStatus::Finished);
    }
    RunStore store(db);
    const auto rows = store.events(1);
    ASSERT_EQ(rows.size(), c.events.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        const Event e =
            eventFromRecord(rows[i].step, rows[i].kind, rows[i].paramsJson, rows[i].source);
        EXPECT_EQ(e.source, EventSource::User);
        EXPECT_EQ(eventParamsJson(e), eventParamsJson(c.events[i])) << rows[i].kind;
        EXPECT_EQ(eventLabel(rows[i].kind, rows[i].paramsJson),
                  eventKindInfo(e.kind).label(e.args));
    }
    std::filesystem::remove_all(tmpl);
}

TEST(Events, EachKindChangesTheSettingsItNames) {
    RunConfig c;
    c.schedule.steps = 1000;
    c.attention.qkNorm = QkNormVariant::Rms;
    const StepSettings before = settingsAt(c, 999);
    for (const auto& k : eventKinds()) {
        RunConfig withEvent = c;
        Event e = eventFromJson(k.example, k.name);
        e.step = 900;
        withEvent.events = {e};
        const StepSettings after = settingsAt(withEvent, 900);
        const bool changed = after.lr != before.lr || after.seqLen != before.seqLen ||
                             after.dirtyBatch != before.dirtyBatch ||
                             after.qkNorm != before.qkNorm ||
                             after.alpha != settingsAt(c, 900).alpha || after.annealing ||
                             after.softcap != before.softcap;
        EXPECT_TRUE(changed) << k.name << " changed nothing";
    }
}

TEST(Events, UnknownParametersAreRejectedWithTheKeyNamed) {
    auto msg =
        errorFor({{"events", {{{"step", 5}, {"kind", "softcap"}, {"cap", "tanh"}, {"C", 30}}}}});
    EXPECT_NE(msg.find("events[0]: softcap takes no parameter \"C\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("did you mean \"c\""), std::string::npos) << msg;
    // The nested form an old placeholder showed is not the syntax: say which key is wrong.
    msg = errorFor(
        {{"events", {{{"step", 5}, {"kind", "context_length"}, {"params", {{"seq_len", 64}}}}}}});
    EXPECT_NE(msg.find("takes no parameter \"params\""), std::string::npos) << msg;
    msg = errorFor({{"events", {{{"step", 5}, {"kind", "softcap"}, {"kind_", "tanh"}}}}});
    EXPECT_NE(msg.find("\"kind_\""), std::string::npos) << msg;
    msg = errorFor({{"events", {{{"step", 5}, {"kind", "qk_norm"}}}}});
    EXPECT_NE(msg.find("qk_norm needs \"variant\""), std::string::npos) << msg;
    msg = errorFor({{"events", {{{"step", 5}, {"kind", "qk_norm"}, {"variant", "rmss"}}}}});
    EXPECT_NE(msg.find("events[0].variant = \"rmss\""), std::string::npos) << msg;
    // A pasted megabyte is quoted in part.
    msg = errorFor({{"events", {{{"step", 5}, {"kind", std::string(100000, 'x')}}}}});
    EXPECT_LT(msg.size(), 300u);
}

// ---- issue 10: hostile JSON text is refused with a short Error, never a crash ----------------

namespace {

std::string nested(size_t depth, const std::string& inner = "1") {
    return std::string(depth, '[') + inner + std::string(depth, ']');
}

bool mentions(const std::string& msg, const std::string& part) {
    return msg.find(part) != std::string::npos;
}

}  // namespace

TEST(ConfigLimits, Item7DeepNestingIsRefusedNamingTheLimit) {
    const std::string deep = nested(80000);
    auto msg = configError([&] { configFromJsonText(R"({"optim":{"lr":)" + deep + "}}", "p"); });
    EXPECT_TRUE(mentions(msg, "optim.lr[0]")) << msg.substr(0, 300);
    EXPECT_TRUE(mentions(msg, "64 levels")) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 1000u);
    msg = configError([&] {
        configFromJsonText(
            R"({"events":[{"step":1,"kind":"lr_multiplier","factor":)" + deep + "}]}", "p");
    });
    EXPECT_TRUE(mentions(msg, "events[0].factor")) << msg.substr(0, 300);
    EXPECT_TRUE(mentions(msg, "64 levels")) << msg.substr(0, 300);
    RunConfig c;
    msg = configError([&] { applyOverride(c, "optim.lr=" + deep); });
    EXPECT_TRUE(mentions(msg, "64 levels")) << msg.substr(0, 300);
    msg = configError([&] { applyOverride(c, "events=" + deep); });
    EXPECT_TRUE(mentions(msg, "64 levels")) << msg.substr(0, 300);
    msg =
        configError([&] { eventFromRecord(3, "lr_multiplier", R"({"factor":)" + deep + "}", ""); });
    EXPECT_TRUE(mentions(msg, "stored event at step 3")) << msg.substr(0, 300);
    EXPECT_TRUE(mentions(msg, "64 levels")) << msg.substr(0, 300);
    // 64 levels (the root object, optim and 62 arrays) are read; one more is not.
    msg = configError([&] { configFromJsonText(R"({"optim":{"lr":)" + nested(62) + "}}", "p"); });
    EXPECT_TRUE(mentions(msg, "expected a number")) << msg;
    msg = configError([&] { configFromJsonText(R"({"optim":{"lr":)" + nested(63) + "}}", "p"); });
    EXPECT_TRUE(mentions(msg, "64 levels")) << msg;
    // A deep value built in code is quoted in part, without a deep walk.
    json value = 1;
    for (int i = 0; i < 80000; ++i) {
        json outer = json::array();
        outer.push_back(std::move(value));  // moved, not copied: a copy of a deep value recurses
        value = std::move(outer);
    }
    json config;
    config["optim"]["lr"] = std::move(value);
    msg = errorFor(config);
    EXPECT_TRUE(mentions(msg, "optim.lr")) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 1000u);
}

TEST(ConfigLimits, Item7HugeKeysAndValuesAreClippedAndQuick) {
    const std::string huge(10'000'000, 'k');
    // An unknown key: no did-you-mean table over ten million characters, no echo of them.
    auto msg = configError([&] { configFromJsonText("{\"" + huge + "\":1}", "p"); });
    EXPECT_LT(msg.size(), 1000u);
    EXPECT_TRUE(mentions(msg, "unknown config key \"kkkkkkkkkk")) << msg.substr(0, 300);
    RunConfig c;
    msg = configError([&] { applyOverride(c, huge + "=1"); });
    EXPECT_LT(msg.size(), 1000u);
    EXPECT_TRUE(mentions(msg, "unknown config key \"kkkkkkkkkk")) << msg.substr(0, 300);
    msg = configError([&] {
        configFromJsonText(R"({"events":[{"step":1,"kind":"dirty_batch",")" + huge + "\":1}]}",
                           "p");
    });
    EXPECT_LT(msg.size(), 1000u);
    EXPECT_TRUE(mentions(msg, "takes no parameter \"kkkkkkkkkk")) << msg.substr(0, 300);
    // A syntax error quotes the token it stopped at: here an unterminated 10 MB string.
    msg = configError([&] { configFromJsonText("{\"why\":\"" + huge, "p"); });
    EXPECT_LT(msg.size(), 1000u);
    EXPECT_TRUE(mentions(msg, "p is not valid JSON")) << msg.substr(0, 300);
    msg = configError([&] { eventFromRecord(3, "dirty_batch", "{\"text\":\"" + huge, ""); });
    EXPECT_LT(msg.size(), 1000u);
    // A cut never splits a UTF-8 character: the message stays text.
    const std::string euros = "\xe2\x82\xac";
    std::string many;
    for (int i = 0; i < 1000; ++i) many += euros;
    msg = configError([&] { applyOverride(c, "attention.qk_norm=" + many); });
    EXPECT_LT(msg.size(), 1000u);
    EXPECT_NO_THROW(json(msg).dump()) << "message is not valid UTF-8";
    msg = configError([&] { applyOverride(c, "data.source=bad\xff"); });
    EXPECT_TRUE(mentions(msg, "not valid UTF-8")) << msg;
    EXPECT_NO_THROW(json(msg).dump()) << "message is not valid UTF-8";
}

TEST(ConfigLimits, Item10OverflowingNumbersNameKeyAndValue) {
    RunConfig c;
    auto msg = configError([&] { applyOverride(c, "optim.lr=1e999"); });
    EXPECT_TRUE(mentions(msg, "optim.lr = 1e999")) << msg;
    msg = configError([&] { configFromJsonText(R"({"optim":{"lr":1E400}})", "p.json"); });
    EXPECT_TRUE(mentions(msg, "p.json: optim.lr = 1E400")) << msg;
    msg = configError([&] {
        configFromJsonText(R"({"events":[{"step":1,"kind":"lr_multiplier","factor":-1e999}]})",
                           "p");
    });
    EXPECT_TRUE(mentions(msg, "events[0].factor = -1e999")) << msg;
    msg = configError([&] { configFromJsonText("[1, 2, 1e999]", "p"); });
    EXPECT_TRUE(mentions(msg, "[2] = 1e999")) << msg;
    // A file name that looks like a huge number stays a file name.
    applyOverride(c, "data.source=1e999");
    EXPECT_EQ(c.data.source, "1e999");
}

TEST(ConfigLimits, Item10IntegersBeyondInt64AreRefusedAsWritten) {
    RunConfig c;
    auto msg = configError([&] { applyOverride(c, "schedule.steps=18446744073709551615"); });
    EXPECT_TRUE(mentions(msg, "schedule.steps")) << msg;
    EXPECT_TRUE(mentions(msg, "18446744073709551615")) << msg;
    EXPECT_EQ(c.schedule.steps, RunConfig{}.schedule.steps);
    msg = configError(
        [&] { configFromJsonText(R"({"model":{"d_model":9223372036854775808}})", "p"); });
    EXPECT_TRUE(mentions(msg, "model.d_model")) << msg;
    EXPECT_TRUE(mentions(msg, "9223372036854775808")) << msg;
    msg = configError([&] { applyOverride(c, "schedule.steps=99999999999999999999999"); });
    EXPECT_TRUE(mentions(msg, "schedule.steps = 99999999999999999999999")) << msg;
    msg = configError([&] { applyOverride(c, "run.seed=-9223372036854775809"); });
    EXPECT_TRUE(mentions(msg, "run.seed = -9223372036854775809")) << msg;
    msg =
        errorFor(json::parse(R"({"events":[{"step":18446744073709551615,"kind":"dirty_batch"}]})"));
    EXPECT_TRUE(mentions(msg, "events[0].step = 18446744073709551615")) << msg;
    applyOverride(c, "schedule.steps=9223372036854775807");  // int64 max itself is read exactly
    EXPECT_EQ(c.schedule.steps, std::numeric_limits<int64_t>::max());
}

TEST(ConfigLimits, Item10FloatsMustFitTheFloat32Engine) {
    RunConfig c;
    applyOverride(c, "probes.hist_min=-1e308");
    auto msg = configError([&] { validate(c); });
    EXPECT_TRUE(mentions(msg, "probes.hist_min = -1e+308")) << msg;
    c = RunConfig{};
    applyOverride(c, "probes.hist_max=1e7");  // beyond the field table's range
    EXPECT_TRUE(mentions(configError([&] { validate(c); }), "probes.hist_max = 1e+07"));
    c = RunConfig{};
    applyOverride(c, "optim.lr=1e30");
    EXPECT_TRUE(mentions(configError([&] { validate(c); }), "optim.lr = 1e+30"));
    c = RunConfig{};
    applyOverride(c, "attention.softcap.c=1e300");
    EXPECT_TRUE(mentions(configError([&] { validate(c); }), "attention.softcap.c = 1e+300"));
    c = RunConfig{};
    applyOverride(c, "attention.scale=1e39");
    EXPECT_TRUE(mentions(configError([&] { validate(c); }), "attention.scale = 1e+39"));
    // Read from JSON the factor is range-checked; an event built in code is checked by validate.
    msg = errorFor(json::parse(R"({"events":[{"step":1,"kind":"lr_multiplier","factor":1e308}]})"));
    EXPECT_TRUE(mentions(msg, "events[0].factor = 1e+308")) << msg;
    c = RunConfig{};
    Event e;
    e.kind = EventKind::LrMultiplier;
    e.args.factor = 1e308;
    c.events = {e};
    msg = configError([&] { validate(c); });
    EXPECT_TRUE(mentions(msg, "events[0].factor = 1e+308")) << msg;
    e.kind = EventKind::ContextLength;
    e.args.seqLen = -5;
    c.events = {e};
    EXPECT_TRUE(mentions(configError([&] { validate(c); }), "events[0].seq_len = -5"));
}

TEST(ConfigLimits, Item12DuplicateKeysAreRefusedNamingThePath) {
    auto msg =
        configError([] { configFromJsonText(R"({"optim":{"lr":1},"optim":{"lr":2}})", "p"); });
    EXPECT_TRUE(mentions(msg, "p: duplicate key \"optim\"")) << msg;
    msg = configError([] { configFromJsonText(R"({"optim":{"lr":0.1,"lr":0.2}})", "p"); });
    EXPECT_TRUE(mentions(msg, "duplicate key \"optim.lr\"")) << msg;
    msg = configError([] {
        configFromJsonText(R"({"events":[{"step":1,"kind":"dirty_batch"},
                                         {"step":2,"kind":"dirty_batch","step":3}]})",
                           "p");
    });
    EXPECT_TRUE(mentions(msg, "duplicate key \"events[1].step\"")) << msg;
    RunConfig c;
    msg = configError(
        [&] { applyOverride(c, R"(events=[{"step":1,"kind":"qk_norm","kind":"softcap"}])"); });
    EXPECT_TRUE(mentions(msg, "duplicate key \"events[0].kind\"")) << msg;
    msg =
        configError([] { eventFromRecord(3, "lr_multiplier", R"({"factor":1,"factor":2})", ""); });
    EXPECT_TRUE(mentions(msg, "stored event at step 3: duplicate key \"factor\"")) << msg;
    // Equal keys in different objects are fine.
    EXPECT_NO_THROW(
        configFromJsonText(R"({"anneal":{"qk_norm":{"start":1},"softcap":{"start":1}}})", "p"));
}

TEST(Config, MlaRefusesVariantsItCannotAbsorbNamingTheKey) {
    auto problem = [](const std::string& set) {
        RunConfig c;
        applyOverride(c, "attention.kind=mla");
        applyOverride(c, set);
        const auto p = validationProblems(c);
        return p.empty() ? std::string() : p.front();
    };
    EXPECT_EQ(problem("attention.qk_norm=rms"), "");
    EXPECT_EQ(problem("attention.qk_norm=whole_rms"), "");
    EXPECT_NE(problem("attention.qk_norm=layernorm").find("attention.qk_norm = layernorm"),
              std::string::npos);
    EXPECT_NE(problem("attention.qk_norm_on=qkv").find("attention.qk_norm_on = qkv"),
              std::string::npos);
    EXPECT_NE(problem("attention.mla.d_rope=7").find("attention.mla.d_rope = 7"),
              std::string::npos);
    EXPECT_NE(problem("attention.qk_clip.tau=-1").find("attention.qk_clip.tau = -1"),
              std::string::npos);
    // A mid-run switch to an unabsorbable variant is refused like the config key.
    RunConfig c;
    applyOverride(c, "attention.kind=mla");
    c.events.push_back(
        eventFromJson({{"step", 5}, {"kind", "qk_norm"}, {"variant", "layernorm"}}, "events[0]"));
    EXPECT_NE(validationProblems(c).at(0).find("events[0].variant = layernorm"), std::string::npos);
    // d_qk = d_head + d_rope under MLA sets the default scale.
    EXPECT_EQ(c.dQk(), 32 + 16);
    EXPECT_NEAR(c.logitScale(), 1.0 / std::sqrt(48.0), 1e-15);
}

// Issue 36, item 9: optim.eps = 1e-50 validated, rounded to 0 in float32 and the run diverged.
// Every float field is checked against the precision the engine uses it in.
TEST(Config, AFloatThatIsZeroOrSubnormalInFloat32IsRefused) {
    RunConfig c;
    c.optim.eps = 1e-50;
    auto problems = validationProblems(c);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("optim.eps = 1e-50: is 0 or a subnormal in float32"),
              std::string::npos)
        << problems[0];
    c.optim.eps = 1e-39;  // subnormal in float32 (FLT_MIN = 1.1755e-38)
    EXPECT_EQ(validationProblems(c).size(), 1u);
    c.optim.eps = 1e-37;  // a normal float32
    EXPECT_TRUE(validationProblems(c).empty());
    c.optim.weightDecay = 0;  // 0 is exact
    EXPECT_TRUE(validationProblems(c).empty());
}
