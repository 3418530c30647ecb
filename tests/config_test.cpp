// config_test.cpp — RunConfig JSON in/out, --set overrides, validation messages, presets.
#include <gtest/gtest.h>

#include <filesystem>

#include "qklab/error.h"
#include "qklab/run_config.h"

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
    c.events.push_back(eventFromJson({{"step", 10}, {"kind", "lr_multiplier"}, {"factor", 2.0}}, "test"));
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
    const RunConfig c = configFromJson(
        {{"events", {{{"step", 50}, {"kind", "dirty_batch"}}, {{"step", 10}, {"kind", "context_length"}, {"seq_len", 256}}}}});
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
    EXPECT_NE(configError([&] { applyOverride(c, "optim.lrr=1"); }).find("optim.lrr"), std::string::npos);
    EXPECT_NE(configError([&] { applyOverride(c, "justakey"); }).find("dotted.key=value"), std::string::npos);
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
    for (const auto& entry : std::filesystem::directory_iterator(QKLAB_SOURCE_DIR "/experiments")) {
        if (entry.path().extension() != ".json") continue;
        const RunConfig c = loadPreset(entry.path().string());
        EXPECT_GT(c.why.size(), 40u) << entry.path();
        ++count;
    }
    EXPECT_GE(count, 5);
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
