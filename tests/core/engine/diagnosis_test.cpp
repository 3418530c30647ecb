// diagnosis_test — the spike diagnosis on real, deterministic runs: the cases the domain brief
// names, staged the way a user would meet them. Each checks the stored kind and tier and that
// the text states the numbers that decided them (docs/EXPERIMENTS.md stages the same cases on
// the default model, as CLI commands). A case whose cause is a change of the run (an event, an
// anneal) also trains its counterfactual control, the same run without the change, which must
// have no spike there: otherwise the change named as the cause would not be one. A token spike
// could not be staged; the synthetic test in spikes_test.cpp covers it.
//
// Every case trains smallModel() for the fewest steps that still show it, found by experiment
// and checked on seeds 1 and 2 as well (the tests use the default seed); each comment gives the
// z-score of its spike (the detector's line is 5). The detector's 64-step window sets the
// pace: a spike that is not a gross one must come once the large gradient norms of the first
// ~30 steps have left the window, and the loss has settled enough for a rise to stand out.
#include <gtest/gtest.h>

#include <cmath>

#include "qklab/analysis/change_reports.h"
#include "qklab/analysis/spikes.h"
#include "qklab/config/events.h"
#include "qklab/engine/trainer.h"

using namespace qklab;

namespace {

struct SpikeCollector : TrainingObserver {
    Trainer* trainer = nullptr;
    int64_t stopAfter = -1;
    std::vector<Spike> spikes;
    std::vector<LogitAlarm> alarms;
    std::vector<ChangeReport> reports;
    RunSeries series;  // what a change report reads, for a control's counterfactual report
    void onSpike(const Spike& s) override { spikes.push_back(s); }
    void onLogitAlarm(const LogitAlarm& a) override { alarms.push_back(a); }
    void onChangeReport(const ChangeReport& r) override { reports.push_back(r); }
    void onProbes(int64_t step, const std::vector<ProbeStats>& rows,
                  const std::vector<LogitHistogram>&) override {
        series.probes.push_back(summarizeProbes(step, rows));
    }
    void onStep(const StepMetrics& m) override {
        series.losses.emplace_back(m.step, m.loss);
        if (m.step == stopAfter) trainer->requestStop();
    }
};

// The default preset (600 steps) at half its width: d_model 64, 2 layers, 4 heads of 16,
// context 128, batch 16, about 40 % of the default model's time per step. Every case reproduces
// on it (one layer leaves thinner margins). One thread, so that ctest -j2 runs two of these side
// by side without oversubscribing a 2-core machine.
RunConfig smallModel() {
    RunConfig c;
    c.model.dModel = 64;
    c.run.threads = 1;
    return c;
}

// Trains c, stopping after `stopAfter` (the LR schedule stays that of the whole run).
SpikeCollector observe(const RunConfig& c, int64_t stopAfter) {
    Trainer t(c);
    SpikeCollector col;
    col.trainer = &t;
    col.stopAfter = stopAfter;
    t.run(col);
    col.trainer = nullptr;
    return col;
}
std::vector<Spike> spikesOf(const RunConfig& c, int64_t stopAfter) {
    return observe(c, stopAfter).spikes;
}

// The spikes of [from, to], as "step: kind" for a failure message.
std::string spikesBetween(const std::vector<Spike>& spikes, int64_t from, int64_t to) {
    std::string out;
    for (const Spike& s : spikes)
        if (s.step >= from && s.step <= to)
            out += std::to_string(s.step) + ": " + toString(s.kind) + " ";
    return out;
}

const Spike* spikeAt(const std::vector<Spike>& spikes, int64_t step) {
    for (const Spike& s : spikes)
        if (s.step == step) return &s;
    return nullptr;
}

bool says(const Spike& s, const std::string& text) {
    return s.diagnosis.find(text) != std::string::npos;
}

// The sentences every probed diagnosis states, rebuilt from the stored numbers.
void expectStatedNumbers(const Spike& s) {
    const auto n = [](double v) { return diagnosisNumber(v); };
    EXPECT_TRUE(says(s, "step " + std::to_string(s.probeStep))) << s.diagnosis;
    EXPECT_TRUE(says(s, "Max raw logit " + n(s.probeMaxLogit) + " = " +
                            n(s.probeMaxLogit / s.baselineMaxLogit) + "x its baseline " +
                            n(s.baselineMaxLogit)))
        << s.diagnosis;
    EXPECT_TRUE(says(s, "q/k norm p90 " + n(s.probeQkNorm) + " = " +
                            n(s.probeQkNorm / s.baselineQkNorm) + "x its baseline " +
                            n(s.baselineQkNorm)))
        << s.diagnosis;
    EXPECT_TRUE(says(s, "Tier " + std::to_string(s.tier) + ":")) << s.diagnosis;
    // A change is only claimed when the ratio shows one.
    if (s.probeMaxLogit < kJumpRatio * s.baselineMaxLogit) {
        EXPECT_FALSE(says(s, "jumped")) << s.diagnosis;
        EXPECT_TRUE(says(s, "no jump")) << s.diagnosis;
    }
}

}  // namespace

// The issue's case 1: a dirty batch, which used to read as a token spike (tier 2, "add
// softcap"). At step 30: the detector judges from step 20 on, and the batch stands out of the
// early descent already (z 16; seeds 1 and 2: 19 and 18, with no spike before it).
TEST(StagedDiagnosis, DirtyBatchIsADataProblem) {
    RunConfig c = smallModel();
    c.events = {eventFromJson({{"step", 30}, {"kind", "dirty_batch"}}, "test")};
    const auto spikes = spikesOf(c, 30);
    const Spike* s = spikeAt(spikes, 30);
    ASSERT_NE(s, nullptr) << "no spike at the dirty batch (" << spikes.size() << " spikes)";
    EXPECT_EQ(s->kind, SpikeKind::DataOrAccumulation) << s->diagnosis;
    EXPECT_EQ(s->tier, 1) << s->diagnosis;
    EXPECT_TRUE(says(*s, "The run changed just before this spike: step 30, Dirty batch"))
        << s->diagnosis;
    EXPECT_TRUE(says(*s,
                     "Rate: 1 spike in 31 steps so far, in a run shorter than the guide's tier-1 "
                     "window (at most one spike per 5000 steps): within it."))
        << s->diagnosis;
    expectStatedNumbers(*s);
}

// The case 2: a context switch 64 -> 256. It used to say "Logits jumped" while the
// max had not jumped (here 1.29x its baseline). On this model the switch stands out only once
// the loss has settled: at step 250 z 20 (seeds 1 and 2: 21 and 16), at 100 z 3; at 200 z 15,
// but the max read 1.51x there, a jump, so the text this case checks would not be written.
TEST(StagedDiagnosis, ContextSwitchClaimsNoJumpThatDidNotHappen) {
    RunConfig c = smallModel();
    c.model.seqLen = 64;
    c.events = {
        eventFromJson({{"step", 250}, {"kind", "context_length"}, {"seq_len", 256}}, "test")};
    const auto spikes = spikesOf(c, 250);
    const Spike* s = spikeAt(spikes, 250);
    ASSERT_NE(s, nullptr) << "no spike at the context switch (" << spikes.size() << " spikes)";
    EXPECT_NE(s->kind, SpikeKind::TokenSpike) << s->diagnosis;
    EXPECT_EQ(s->kind, SpikeKind::DataOrAccumulation) << s->diagnosis;
    EXPECT_TRUE(says(*s,
                     "The run changed just before this spike: step 250, Context length: "
                     "ctx 64\u2192256"))
        << s->diagnosis;
    expectStatedNumbers(*s);
}

// Q/K runaway at a high LR: the logits pass 100 in the first 20 steps, before detection can
// start; later spikes are read as that runaway (tier 3, QK-norm), never as a token spike or
// a data problem, and frequency is counted (the second spike is no longer "rare"). At the
// preset's LR 3e-2 this model spikes once in 200 steps (at 98); at 5e-2 the logits pass 100 by
// step 20 and the first two spikes come at 104 and 134 (z 37 and 7). Where they come is chaotic
// (seed 1: one by step 140, at 130; seed 2: 86 and 113), and so is it across machines: on an
// AVX-512/AMX Xeon the same seed's first spike came at 151. The whole run is read, and the
// rate is checked where a second one came.
TEST(StagedDiagnosis, HighLrRunawayPrescribesQkNorm) {
    RunConfig c = smallModel();  // blowup_no_qknorm.json
    c.schedule.steps = 200;      // the preset has 300
    c.optim.lr = 0.05;
    c.schedule.warmupSteps = 10;
    c.probes.every = 5;
    const auto spikes = spikesOf(c, -1);
    ASSERT_FALSE(spikes.empty());
    for (const Spike& s : spikes) {
        EXPECT_EQ(s.kind, SpikeKind::QkRunaway) << s.step << ": " << s.diagnosis;
        EXPECT_EQ(s.tier, 3) << s.diagnosis;
        EXPECT_TRUE(says(s, "beyond the intervention line")) << s.diagnosis;
        expectStatedNumbers(s);
    }
    if (spikes.size() > 1) {  // the rate in words: steps per spike so far
        const int64_t steps = spikes[1].step + 1;
        EXPECT_TRUE(says(spikes[1], "Rate: 2 spikes in " + std::to_string(steps) +
                                        " steps so far, about one every " +
                                        std::to_string(std::llround(steps / 2.0)) +
                                        " steps: more often than the guide's tier-1 rate (at "
                                        "most one per 5000 steps)"))
            << spikes[1].diagnosis;
    }
}

namespace {

// experiments/incident_token_spike.json: RMS QK-norm, switched off at step 80. At the preset's
// LR 1e-2 this model's raw q/k lengths level off near 9 (4 normalised) and the switch lifts the
// max logit only to 14-16, under the alarm line (30); at 2e-2 they reach 14-16 by step 80, and
// the max 83.
RunConfig normSwitchedOff(bool withTheSwitch) {
    RunConfig c = smallModel();
    c.optim.lr = 0.02;
    c.schedule.steps = 200;
    c.schedule.warmupSteps = 10;
    c.attention.qkNorm = QkNormVariant::Rms;
    c.probes.every = 5;
    if (withTheSwitch)
        c.events = {eventFromJson({{"step", 80}, {"kind", "qk_norm"}, {"variant", "none"}}, "t")};
    return c;
}

// experiments/anneal_windows.json in 100 steps: alpha falls 1 -> 0 along a cosine from
// round(start x 100) to step 99. Probes every 3 steps, so that the last step (99) has one.
constexpr int64_t kAnnealSteps = 100;
RunConfig annealFrom(double start) {
    RunConfig c = smallModel();
    c.optim.lr = 0.01;
    c.schedule.steps = kAnnealSteps;
    c.schedule.warmupSteps = 10;
    c.schedule.decay = LrDecay::Cosine;
    c.attention.qkNorm = QkNormVariant::RmsAffine;
    c.anneal.qkNorm.start = start;
    c.anneal.qkNorm.shape = AnnealShape::Cosine;
    c.probes.every = 3;
    return c;
}

}  // namespace

// Issue 25, case 1: the probes alone read a token spike (here logits 83 against 3.9, norms
// 1.1x) and the alarm said the lengths "are running away"; the cause is the removed norm. At
// step 80 the spike has z 15 (seeds 1 and 2: 16 and 21); at step 60 the first steps' gradient
// norms, still in the detector's window, hide it (z 0.2).
TEST(StagedDiagnosis, QkNormSwitchedOffIsNamedAsTheCause) {
    const SpikeCollector run = observe(normSwitchedOff(true), 80);
    const Spike* s = spikeAt(run.spikes, 80);
    ASSERT_NE(s, nullptr) << "spikes: " << spikesBetween(run.spikes, 0, 80);
    EXPECT_EQ(s->kind, SpikeKind::RunChange) << s->diagnosis;
    EXPECT_EQ(s->tier, 3) << s->diagnosis;
    EXPECT_TRUE(says(*s,
                     "The run changed just before this spike: step 80, QK-norm: qk_norm "
                     "rms\u2192none. That is the likeliest cause."))
        << s->diagnosis;
    EXPECT_TRUE(says(*s, "Probe read: step 80, the spike's own step")) << s->diagnosis;
    EXPECT_FALSE(says(*s, "token/position")) << s->diagnosis;
    ASSERT_FALSE(run.alarms.empty());
    for (const LogitAlarm& a : run.alarms) {
        EXPECT_EQ(a.step, 80);
        EXPECT_EQ(a.kind, SpikeKind::RunChange) << a.text;
        EXPECT_EQ(a.text.find("running away"), std::string::npos) << a.text;
    }
    // Control: the same run keeping the norm has no spike and no alarm in the episode.
    const SpikeCollector control = observe(normSwitchedOff(false), 90);
    EXPECT_EQ(spikesBetween(control.spikes, 70, 90), "");
    EXPECT_TRUE(control.alarms.empty());
}

// Issue 25, case 2: a spike inside an anneal window read as a data problem (8 %) or a token
// spike (15 %), from a probe older than the spike. Alpha falling is the cause. The spike grows
// with how fast alpha falls per step: windows of 8 % and 5 % of these 100 steps (the guide's
// 5-10 %) spike at 95 and 97 with z 9 and 17 (seeds 1 and 2: 13 and 15, 9 and 8), while 15 %
// (15 steps) is on the edge (z 5.8; seed 1: 3.0); the cosine's steep middle gives more than a
// line (z 7 at 8 %). Both spikes fall between probes, so the later probe is the one to read.
TEST(StagedDiagnosis, AnAnnealLoweringAlphaIsNamedAsTheCause) {
    for (double start : {0.92, 0.95}) {
        const auto spikes = spikesOf(annealFrom(start), -1);
        const int64_t windowStart = std::llround(start * kAnnealSteps);
        int inWindow = 0;
        for (const Spike& s : spikes) {
            if (s.step < windowStart) continue;
            ++inWindow;
            EXPECT_EQ(s.kind, SpikeKind::RunChange) << s.step << ": " << s.diagnosis;
            EXPECT_EQ(s.tier, 3) << s.diagnosis;
            EXPECT_TRUE(says(s, "The run changed just before this spike: QK-norm alpha fell from"))
                << s.diagnosis;
            // The last step is probed, so a probe at or after the spike came: it is the one read.
            EXPECT_GE(s.probeStep, s.step) << s.diagnosis;
        }
        EXPECT_GE(inWindow, 1) << "start " << start
                               << ", spikes: " << spikesBetween(spikes, 0, kAnnealSteps);
    }
    // Control: the norm kept (no anneal) has no spike from the earliest window on.
    EXPECT_EQ(spikesBetween(spikesOf(annealFrom(1.0), -1), 92, kAnnealSteps - 1), "");
}

// Issue 25, case 3: a dirty batch after a blow-up was read as the runaway's symptom (tier 3).
// The batch is the cause; the chronic runaway is said apart from it. At step 100 the batch has
// z 147 (seeds 1 and 2: 39 and 439); at step 60, with the first steps still in the detector's
// window, z 5.0, on the line.
TEST(StagedDiagnosis, ADirtyBatchAfterABlowUpIsTheBatch) {
    RunConfig c = smallModel();  // blowup_no_qknorm.json
    c.optim.lr = 0.03;
    c.schedule.steps = 300;
    c.schedule.warmupSteps = 10;
    c.probes.every = 5;
    RunConfig dirty = c;
    dirty.events = {eventFromJson({{"step", 100}, {"kind", "dirty_batch"}}, "t")};
    const auto spikes = spikesOf(dirty, 100);
    const Spike* s = spikeAt(spikes, 100);
    ASSERT_NE(s, nullptr) << "spikes: " << spikesBetween(spikes, 0, 100);
    EXPECT_EQ(s->kind, SpikeKind::DataOrAccumulation) << s->diagnosis;
    EXPECT_EQ(s->tier, 1) << s->diagnosis;
    EXPECT_TRUE(says(*s, "step 100, Dirty batch: dirty batch. That is the likeliest cause"))
        << s->diagnosis;
    EXPECT_TRUE(says(*s, "Apart from this spike")) << s->diagnosis;
    // Control: without the batch nothing near step 100 is read as a data problem. (Whether the
    // runaway itself spikes there is chaotic: on an AVX-512/AMX Xeon it did, at 100, as a
    // qk_runaway.)
    for (const Spike& control : spikesOf(c, 110)) {
        if (control.step < 95 || control.step > 110) continue;
        EXPECT_NE(control.kind, SpikeKind::DataOrAccumulation)
            << control.step << ": " << control.diagnosis;
    }
}

namespace {

// Issue 36, item 11: the default model with a tanh softcap C = 50, loosened to C = 100 at step
// 28 and/or a dirty batch at step 30 (the batch alone spikes there, as in
// DirtyBatchIsADataProblem). The raw logits stay far under 25, half of the old C.
RunConfig capAndBatch(bool loosen, bool batch) {
    RunConfig c = smallModel();
    c.attention.softcap.kind = SoftcapKind::Tanh;
    c.attention.softcap.c = 50;
    if (loosen)
        c.events.push_back(
            eventFromJson({{"step", 28}, {"kind", "softcap"}, {"cap", "tanh"}, {"c", 100}}, "t"));
    if (batch) c.events.push_back(eventFromJson({{"step", 30}, {"kind", "dirty_batch"}}, "t"));
    return c;
}

}  // namespace

// The loosened cap was named first (run_change, tier 2, "Keep it (tanh, C = 50)") while the
// same text called the probe healthy. A cap the logits never came near was not acting: the
// batch is the cause.
TEST(StagedDiagnosis, ALoosenedCapThatWasNotActingIsNotTheCause) {
    const auto spikes = spikesOf(capAndBatch(true, true), 30);
    const Spike* s = spikeAt(spikes, 30);
    ASSERT_NE(s, nullptr) << "spikes: " << spikesBetween(spikes, 0, 30);
    EXPECT_EQ(s->kind, SpikeKind::DataOrAccumulation) << s->diagnosis;
    EXPECT_EQ(s->tier, 1) << s->diagnosis;
    EXPECT_TRUE(says(*s, "step 30, Dirty batch: dirty batch. That is the likeliest cause"))
        << s->diagnosis;
    EXPECT_TRUE(says(*s,
                     "step 28, Softcap: softcap tanh C=50\u2192tanh C=100 (not acting before it: "
                     "the raw max logit stayed at or below "))
        << s->diagnosis;
    EXPECT_FALSE(says(*s, "Keep it (tanh, C = 50)")) << s->diagnosis;
    EXPECT_LT(s->probeMaxLogit, kFuseNearBound * 50);
    // Controls: the batch alone gives the same verdict; the loosening alone no spike.
    const auto batchOnly = spikesOf(capAndBatch(false, true), 30);
    ASSERT_NE(spikeAt(batchOnly, 30), nullptr) << spikesBetween(batchOnly, 0, 30);
    EXPECT_EQ(spikeAt(batchOnly, 30)->kind, SpikeKind::DataOrAccumulation);
    EXPECT_EQ(spikesBetween(spikesOf(capAndBatch(true, false), 40), 20, 40), "");
}

namespace {

// Issue 36, item 12: blowup_no_qknorm.json (LR 3e-2) with a tanh softcap C = 30, removed (C 1000)
// at step 80, or kept.
RunConfig capRemovedAt80(bool removed) {
    RunConfig c = smallModel();
    c.optim.lr = 0.03;
    c.schedule.steps = 200;
    c.schedule.warmupSteps = 10;
    c.probes.every = 5;
    c.attention.softcap.kind = SoftcapKind::Tanh;
    c.attention.softcap.c = 30;
    if (removed)
        c.events = {
            eventFromJson({{"step", 80}, {"kind", "softcap"}, {"cap", "tanh"}, {"c", 1000}}, "t")};
    return c;
}

}  // namespace

// No spike and no alarm said anything when the cap came off, though the max logit softmax sees
// rose from 30 to 168 (seeds 1 and 2: 192, 111) and attention entropy fell from 1.08 to 0.242
// nats (1.57 -> 0.189, 0.622 -> 0.158) for good. The change report says it. Its loss, 0.095
// above what the trend before led to expect (z 4.1; seeds 1 and 2: +0.109, z 2.7, and +0.13,
// z 3.0), is 0.07-0.09 above the control's over the same steps, where nothing moves (z 0.5-1).
TEST(StagedDiagnosis, ARemovedSoftcapIsReportedWithWhatItDid) {
    const RunConfig removed = capRemovedAt80(true);
    const SpikeCollector run = observe(removed, 99);
    ASSERT_EQ(run.reports.size(), 1u);
    const ChangeReport& r = run.reports[0];
    EXPECT_EQ(r.step, 80);
    EXPECT_EQ(r.reportStep, 99);
    EXPECT_TRUE(r.moved) << r.text;
    EXPECT_GT(r.maxLogitAfter, kJumpRatio * r.maxLogitBefore) << r.text;
    EXPECT_LT(r.entropyAfter, r.entropyBefore / kJumpRatio) << r.text;
    EXPECT_GT(r.lossAfter, r.lossExpected) << r.text;
    // Control: the cap kept. Over the same steps nothing moves, and the loss is lower.
    const SpikeCollector kept = observe(capRemovedAt80(false), 99);
    EXPECT_TRUE(kept.reports.empty());
    const auto counterfactual = reportChange(removed, removed.events[0], kept.series, 99);
    ASSERT_TRUE(counterfactual.has_value());
    EXPECT_FALSE(counterfactual->moved) << counterfactual->text;
    EXPECT_GT(r.lossAfter, counterfactual->lossAfter + 0.05) << r.text << "\n"
                                                             << counterfactual->text;
}

namespace {

// Issue 36, item 13: the default model at LR 1e-2 with a tanh softcap C = 50, tightened to C = 5
// at step 100 or kept.
RunConfig capTightened(bool tightened) {
    RunConfig c = smallModel();
    c.optim.lr = 0.01;
    c.schedule.steps = 200;
    c.schedule.warmupSteps = 10;
    c.probes.every = 5;
    c.attention.softcap.kind = SoftcapKind::Tanh;
    c.attention.softcap.c = 50;
    if (tightened)
        c.events = {
            eventFromJson({{"step", 100}, {"kind", "softcap"}, {"cap", "tanh"}, {"c", 5}}, "t")};
    return c;
}

}  // namespace

// It was read as "a transient is expected; change nothing unless it lasts"; C = 5 squeezes the
// max logit softmax sees from about 23 to 5 and flattens attention, and the cost lasts. The
// spike comes at step 100 (z 6.8; seed 1: 11.9) or 101 (seed 2: z 9.4). The change report
// states the lasting cost, which the control, keeping C = 50, does not have.
TEST(StagedDiagnosis, ASoftcapTightenedBelowTwentyIsNoTransient) {
    const RunConfig tightened = capTightened(true);
    const SpikeCollector run = observe(tightened, 119);
    const Spike* s = nullptr;
    for (const Spike& spike : run.spikes)
        if (!s && spike.step >= 100 && spike.step <= 102) s = &spike;
    ASSERT_NE(s, nullptr) << spikesBetween(run.spikes, 0, 119);
    EXPECT_EQ(s->kind, SpikeKind::RunChange) << s->diagnosis;
    EXPECT_EQ(s->tier, 2) << s->diagnosis;
    EXPECT_TRUE(says(*s,
                     "tightened the softcap to C = 5, below the ~20 under which a softcap "
                     "flattens attention (docs/CONFIG.md): its cost lasts, it is no transient"))
        << s->diagnosis;
    EXPECT_FALSE(says(*s, "transient is expected")) << s->diagnosis;
    ASSERT_EQ(run.reports.size(), 1u);
    const ChangeReport& r = run.reports[0];
    EXPECT_TRUE(r.moved) << r.text;
    EXPECT_LE(r.maxLogitAfter, 5.0) << r.text;
    EXPECT_LT(r.maxLogitAfter, r.maxLogitBefore / kJumpRatio) << r.text;
    EXPECT_GT(r.lossZ, kJumpZ) << r.text;
    // Control: C = 50 kept has no spike there, and nothing moves over the same steps.
    const SpikeCollector kept = observe(capTightened(false), 119);
    EXPECT_EQ(spikesBetween(kept.spikes, 90, 119), "");
    const auto counterfactual = reportChange(tightened, tightened.events[0], kept.series, 119);
    ASSERT_TRUE(counterfactual.has_value());
    EXPECT_FALSE(counterfactual->moved) << counterfactual->text;
}
