// schedules_test.cpp — LR, alpha and softcap-C schedules at their endpoints, and event replay.
#include "qklab/config/schedules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "qklab/config/events.h"

using namespace qklab;

namespace {
RunConfig base() {
    RunConfig c;
    c.optim.lr = 1.0;
    c.schedule.steps = 101;
    c.schedule.warmupSteps = 10;
    c.schedule.minLrRatio = 0.1;
    return c;
}
}  // namespace

TEST(Schedules, WarmupIsLinearFromZero) {
    const RunConfig c = base();
    EXPECT_DOUBLE_EQ(scheduledLr(c, 0), 0.1);
    EXPECT_DOUBLE_EQ(scheduledLr(c, 4), 0.5);
    EXPECT_DOUBLE_EQ(scheduledLr(c, 9), 1.0);
}

TEST(Schedules, DecayShapesReachTheFloorAtTheLastStep) {
    RunConfig c = base();
    c.schedule.decay = LrDecay::Cosine;
    EXPECT_DOUBLE_EQ(scheduledLr(c, 10), 1.0);
    EXPECT_NEAR(scheduledLr(c, 55), 0.55, 1e-12);  // halfway: (1 + 0.1) / 2
    EXPECT_NEAR(scheduledLr(c, 100), 0.1, 1e-12);
    c.schedule.decay = LrDecay::Linear;
    EXPECT_NEAR(scheduledLr(c, 55), 0.55, 1e-12);
    EXPECT_NEAR(scheduledLr(c, 100), 0.1, 1e-12);
    c.schedule.decay = LrDecay::Constant;
    EXPECT_DOUBLE_EQ(scheduledLr(c, 100), 1.0);
    c.schedule.decay = LrDecay::Wsd;
    c.schedule.wsdDecayFraction = 0.2;  // 20 decay steps: 80 .. 100
    EXPECT_DOUBLE_EQ(scheduledLr(c, 79), 1.0);
    EXPECT_DOUBLE_EQ(scheduledLr(c, 80), 1.0);
    EXPECT_NEAR(scheduledLr(c, 90), 0.55, 1e-12);
    EXPECT_NEAR(scheduledLr(c, 100), 0.1, 1e-12);
}

TEST(Schedules, AlphaEndpoints) {
    QkNormAnneal none;  // default window [1, 1]: no anneal
    for (int64_t s : {0, 50, 99}) EXPECT_EQ(annealAlpha(none, s, 100), 1.0);
    QkNormAnneal a{0.5, 1.0, AnnealShape::Linear};  // steps 50 .. 99 (the last step)
    EXPECT_EQ(annealAlpha(a, 0, 100), 1.0);
    EXPECT_EQ(annealAlpha(a, 49, 100), 1.0);
    EXPECT_DOUBLE_EQ(annealAlpha(a, 50, 100), 1.0);  // the descent starts here
    EXPECT_DOUBLE_EQ(annealAlpha(a, 75, 100), 1.0 - 25.0 / 49.0);
    EXPECT_NEAR(annealAlpha(a, 98, 100), 1.0 / 49.0, 1e-12);
    EXPECT_EQ(annealAlpha(a, 99, 100), 0.0);  // exactly 0 at the last step (was 0.02)
    // The same window on 600 steps ends at step 599 with alpha exactly 0 (was 0.021 at
    // 600 steps and 0.125 for a 92%..100% window on 100 steps).
    EXPECT_EQ(annealAlpha(a, 599, 600), 0.0);
    EXPECT_EQ(annealAlpha({0.92, 1.0, AnnealShape::Linear}, 99, 100), 0.0);
    EXPECT_DOUBLE_EQ(annealAlpha({0.92, 1.0, AnnealShape::Linear}, 92, 100), 1.0);
    QkNormAnneal early{0.2, 0.6, AnnealShape::Linear};  // steps 20 .. 60
    EXPECT_NEAR(annealAlpha(early, 59, 100), 1.0 / 40.0, 1e-12);
    EXPECT_EQ(annealAlpha(early, 60, 100), 0.0);  // 0 at and after the end
    EXPECT_EQ(annealAlpha(early, 99, 100), 0.0);
    QkNormAnneal hard{0.9, 1.0, AnnealShape::Hard};
    EXPECT_EQ(annealAlpha(hard, 89, 100), 1.0);
    EXPECT_EQ(annealAlpha(hard, 90, 100), 0.0);
    EXPECT_EQ(annealAlpha(hard, 99, 100), 0.0);
    // Start and end round to the same step (50.0 and 50.4): a hard switch at step 50.
    QkNormAnneal sameStep{0.5, 0.504, AnnealShape::Linear};
    EXPECT_EQ(annealAlpha(sameStep, 49, 100), 1.0);
    EXPECT_EQ(annealAlpha(sameStep, 50, 100), 0.0);
    EXPECT_EQ(annealAlpha(sameStep, 51, 100), 0.0);
    QkNormAnneal cosine{0.0, 1.0, AnnealShape::Cosine};  // steps 0 .. 99
    EXPECT_NEAR(annealAlpha(cosine, 33, 100), 0.5 * (1 + std::cos(M_PI * 33.0 / 99.0)), 1e-12);
    EXPECT_EQ(annealAlpha(cosine, 99, 100), 0.0);
}

TEST(Schedules, SoftcapAnnealMovesCToTarget) {
    SoftcapConfig s{SoftcapKind::Tanh, 30};
    SoftcapAnneal a{0.5, 1.0, 1000};  // steps 50 .. 99
    EXPECT_EQ(annealSoftcapC(s, a, 10, 100), 30);
    EXPECT_EQ(annealSoftcapC(s, a, 50, 100), 30);
    EXPECT_DOUBLE_EQ(annealSoftcapC(s, a, 75, 100), 30 + 970 * 25.0 / 49.0);
    EXPECT_EQ(annealSoftcapC(s, a, 99, 100), 1000);  // exactly c_to at the last step
    SoftcapAnneal sameStep{0.5, 0.504, 1000};        // a switch at step 50
    EXPECT_EQ(annealSoftcapC(s, sameStep, 49, 100), 30);
    EXPECT_EQ(annealSoftcapC(s, sameStep, 50, 100), 1000);
    EXPECT_EQ(annealSoftcapC(s, SoftcapAnneal{}, 99, 100), 30);
}

TEST(Schedules, AnnealWindowSettingsAtTheLastStep) {
    RunConfig c = base();
    c.schedule.steps = 100;
    c.attention.qkNorm = QkNormVariant::Rms;
    c.anneal.qkNorm = {0.92, 1.0, AnnealShape::Linear};
    c.attention.softcap = {SoftcapKind::Tanh, 30};
    c.anneal.softcap = {0.5, 1.0, 500};
    EXPECT_FALSE(settingsAt(c, 91).inAnnealWindow);
    EXPECT_TRUE(settingsAt(c, 92).inAnnealWindow);
    const StepSettings last = settingsAt(c, 99);
    EXPECT_EQ(last.alpha, 0.0);
    EXPECT_EQ(last.softcapC, 500);
}

TEST(Schedules, EventsApplyFromTheirStep) {
    RunConfig c = base();
    c.attention.qkNorm = QkNormVariant::Rms;
    c.events = {
        eventFromJson({{"step", 20}, {"kind", "lr_multiplier"}, {"factor", 10.0}}, "test"),
        eventFromJson({{"step", 30}, {"kind", "context_length"}, {"seq_len", 256}}, "test"),
        eventFromJson({{"step", 40}, {"kind", "dirty_batch"}}, "test"),
        eventFromJson({{"step", 50}, {"kind", "softcap"}, {"cap", "clamp"}, {"c", 20.0}}, "test"),
        eventFromJson({{"step", 60}, {"kind", "qk_anneal"}, {"steps", 10}}, "test"),
        eventFromJson({{"step", 80}, {"kind", "qk_norm"}, {"variant", "layernorm"}}, "test")};
    EXPECT_DOUBLE_EQ(settingsAt(c, 19).lr, scheduledLr(c, 19));
    EXPECT_DOUBLE_EQ(settingsAt(c, 20).lr, 10 * scheduledLr(c, 20));
    EXPECT_EQ(settingsAt(c, 29).seqLen, 128);
    EXPECT_EQ(settingsAt(c, 30).seqLen, 256);
    EXPECT_FALSE(settingsAt(c, 39).dirtyBatch);
    EXPECT_TRUE(settingsAt(c, 40).dirtyBatch);
    EXPECT_FALSE(settingsAt(c, 41).dirtyBatch);  // one batch only
    EXPECT_EQ(settingsAt(c, 49).softcap, SoftcapKind::None);
    EXPECT_EQ(settingsAt(c, 49).softcapC, 0.0);
    EXPECT_EQ(settingsAt(c, 50).softcap, SoftcapKind::Clamp);
    EXPECT_EQ(settingsAt(c, 50).softcapC, 20.0);
    EXPECT_EQ(settingsAt(c, 59).alpha, 1.0);
    EXPECT_DOUBLE_EQ(settingsAt(c, 65).alpha, 0.5);
    EXPECT_TRUE(settingsAt(c, 65).annealing);
    EXPECT_EQ(settingsAt(c, 75).alpha, 0.0);
    EXPECT_EQ(settingsAt(c, 80).qkNorm, QkNormVariant::LayerNorm);
    EXPECT_EQ(settingsAt(c, 80).alpha, 1.0);
    RunConfig w = base();
    w.attention.qkNorm = QkNormVariant::RmsAffine;
    w.schedule.steps = 100;
    w.anneal.qkNorm = {0.5, 1.0, AnnealShape::Linear};
    EXPECT_FALSE(settingsAt(w, 49).annealing);
    EXPECT_TRUE(settingsAt(w, 50).annealing);  // the window's first step: alpha 1, gains frozen
    EXPECT_EQ(settingsAt(w, 50).alpha, 1.0);
    c.attention.qkNorm = QkNormVariant::None;
    c.events.clear();
    EXPECT_EQ(settingsAt(c, 0).alpha, 0.0);  // no norm: the raw path
}

TEST(Schedules, SettingChangesSayFromWhatToWhat) {
    RunConfig c = base();
    c.model.seqLen = 64;
    c.attention.qkNorm = QkNormVariant::None;
    auto event = [](int64_t step, const char* json) {
        nlohmann::json j = nlohmann::json::parse(json);
        j["step"] = step;
        return eventFromJson(j, "test");
    };
    c.events = {event(20, R"({"kind":"lr_multiplier","factor":0.5})"),
                event(50, R"({"kind":"qk_norm","variant":"rms"})"),
                event(50, R"({"kind":"softcap","cap":"tanh","c":30})"),
                event(60, R"({"kind":"context_length","seq_len":32})"),
                event(70, R"({"kind":"qk_anneal","steps":10})"),
                event(90, R"({"kind":"softcap","cap":"none"})")};
    const std::vector<std::string> want{"lr \u00d71\u2192\u00d70.5 @20",
                                        "qk_norm none\u2192rms @50",
                                        "softcap none\u2192tanh C=30 @50",
                                        "ctx 64\u219232 @60",
                                        "qk_norm rms annealed out over 10 steps @70",
                                        "softcap tanh C=30\u2192none @90"};
    EXPECT_EQ(settingChanges(c), want);
    // Every kind of the registry says what it changed.
    for (const EventKindInfo& k : eventKinds()) EXPECT_TRUE(bool(k.change)) << k.name;
}
