// spike_causes_test.cpp — the run's own timeline read before a spike (changesBefore), the
// verdict it decides in diagnoseSpike, and logit alarms that state only what their numbers
// show. Hand-built configs and probe series; tests/core/engine/diagnosis_test.cpp stages the same
// cases on real runs with counterfactual controls.
#include "qklab/analysis/spike_causes.h"

#include <gtest/gtest.h>

#include "qklab/analysis/spikes.h"
#include "qklab/config/events.h"

using namespace qklab;

namespace {

RunConfig withEvents(std::vector<nlohmann::json> events, int64_t steps = 200) {
    RunConfig c;
    c.schedule.steps = steps;
    c.attention.qkNorm = QkNormVariant::Rms;
    for (const auto& j : events) c.events.push_back(eventFromJson(j, "test"));
    return c;
}

bool says(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Ten flat probes (max 5.4, q/k norm 26) and then `last`: what QK-norm switched off looks
// like in incident_token_spike.json (max 137 in one step, norms 0.94x).
std::vector<ProbeSummary> normRemovedHistory() {
    std::vector<ProbeSummary> h;
    for (int i = 0; i < 11; ++i) h.push_back({i * 5 + 100, 5.4 + 0.05 * (i % 2), 2.0, 26.0});
    h.push_back({155, 137, 50.5, 24.8});
    return h;
}

}  // namespace

TEST(SpikeCauses, AnEventInTheWindowIsNamedWithWhatItChanged) {
    const RunConfig c = withEvents({{{"step", 150}, {"kind", "qk_norm"}, {"variant", "none"}}});
    const auto changes = changesBefore(c, 153);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].step, 150);
    EXPECT_EQ(changes[0].effect, ChangeEffect::FuseWeakened);
    EXPECT_EQ(changes[0].fuse, ChangedFuse::QkNorm);
    EXPECT_EQ(changes[0].text, "step 150, QK-norm: qk_norm rms\u2192none");
    // The window is the spike's step and the 10 before it: step 160 still sees it, 161 not.
    EXPECT_EQ(changesBefore(c, 160).size(), 1u);
    EXPECT_TRUE(changesBefore(c, 161).empty());
    EXPECT_TRUE(changesBefore(c, 149).empty());  // a change after the spike cannot cause it
}

TEST(SpikeCauses, EachEventKindHasTheEffectItsDirectionImplies) {
    const auto effectOf = [](const nlohmann::json& e) {
        const RunConfig c = withEvents({e});
        return changesBefore(c, 100).at(0);
    };
    EXPECT_EQ(effectOf({{"step", 100}, {"kind", "dirty_batch"}}).effect, ChangeEffect::Data);
    EXPECT_EQ(effectOf({{"step", 95}, {"kind", "lr_multiplier"}, {"factor", 20}}).effect,
              ChangeEffect::LrRaised);
    EXPECT_EQ(effectOf({{"step", 95}, {"kind", "lr_multiplier"}, {"factor", 0.5}}).effect,
              ChangeEffect::Neutral);  // a lower LR is listed, never blamed
    const RunChange cap = effectOf({{"step", 99}, {"kind", "softcap"}, {"cap", "tanh"}, {"c", 30}});
    EXPECT_EQ(cap.effect, ChangeEffect::FuseTightened);  // none -> C = 30: a bound appears
    EXPECT_EQ(cap.fuse, ChangedFuse::Softcap);
    EXPECT_EQ(effectOf({{"step", 99}, {"kind", "qk_clip"}, {"tau", 30}}).effect,
              ChangeEffect::FuseTightened);
    // A step-0 event is how the run starts, not a change to it.
    EXPECT_EQ(withEvents({{{"step", 0}, {"kind", "dirty_batch"}}}).events.size(), 1u);
    EXPECT_EQ(changesBefore(withEvents({{{"step", 0}, {"kind", "dirty_batch"}}}), 5).at(0).effect,
              ChangeEffect::Neutral);
}

// Issue 41: QK-Clip switched on in a Muon run is Kimi K2's MuonClip, and the change says so;
// switched off, the text says the run goes on with Muon unclipped (AdamW runs say neither).
TEST(SpikeCauses, QkClipInAMuonRunIsNamedMuonClip) {
    RunConfig on = withEvents({{{"step", 95}, {"kind", "qk_clip"}, {"tau", 100}}});
    on.optim.kind = OptimKind::Muon;
    const RunChange clip = changesBefore(on, 100).at(0);
    EXPECT_EQ(clip.text, "step 95, QK-Clip: qk_clip off\u2192tau=100 (with Muon: MuonClip)");
    EXPECT_EQ(clip.effect, ChangeEffect::FuseTightened);
    RunConfig off = withEvents({{{"step", 95}, {"kind", "qk_clip"}, {"tau", 0}}});
    off.optim.kind = OptimKind::Muon;
    off.attention.qkClip.tau = 100;
    const RunChange unclipped = changesBefore(off, 100).at(0);
    EXPECT_EQ(unclipped.text, "step 95, QK-Clip: qk_clip tau=100\u2192off (Muon, unclipped)");
    EXPECT_EQ(unclipped.effect, ChangeEffect::FuseWeakened);
    EXPECT_EQ(adviceFor(unclipped).tier, 3);
    on.optim.kind = OptimKind::AdamW;
    EXPECT_EQ(changesBefore(on, 100).at(0).text, "step 95, QK-Clip: qk_clip off\u2192tau=100");
}

// anneal_windows.json at 8 %: window round(0.92 x 200) = 184 .. 199, linear, so alpha at step
// 189 is 1 - 5/15 = 0.667 and at 179 (the window's first step) still 1.
TEST(SpikeCauses, AnAnnealLoweringAlphaIsNamedWithItsNumbers) {
    RunConfig c = withEvents({});
    c.anneal.qkNorm.start = 0.92;
    const auto changes = changesBefore(c, 189);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].effect, ChangeEffect::FuseWeakened);
    EXPECT_EQ(changes[0].text,
              "QK-norm alpha fell from 1 to 0.667 over steps 179-189 (anneal.qk_norm)");
    EXPECT_TRUE(changesBefore(c, 184).empty());  // alpha is still 1 at the window's start
    // At 199 the window [189, 199] sees 0.667 -> 0.
    EXPECT_EQ(changesBefore(c, 199).at(0).text,
              "QK-norm alpha fell from 0.667 to 0 over steps 189-199 (anneal.qk_norm)");
}

TEST(SpikeCauses, TheLikeliestCauseWeakensAFuseBeforeItTouchesData) {
    const RunConfig c = withEvents({{{"step", 150}, {"kind", "dirty_batch"}},
                                    {{"step", 152}, {"kind", "qk_norm"}, {"variant", "none"}},
                                    {{"step", 153}, {"kind", "lr_multiplier"}, {"factor", 0.5}}});
    const auto changes = changesBefore(c, 155);
    ASSERT_EQ(changes.size(), 3u);
    const RunChange* cause = likeliestCause(changes);
    ASSERT_NE(cause, nullptr);
    EXPECT_EQ(cause->step, 152);
    EXPECT_EQ(adviceFor(*cause).tier, 3);
    EXPECT_EQ(likeliestCause({changes[2]}), nullptr);  // the lowered LR alone explains nothing
}

namespace {

// Issue 36, item 11: the softcap loosened from C 50 to 100 at step 148 and a dirty batch at 150,
// on a model whose raw max logit sits near `maxLogit`.
RunConfig loosenedCapAndABatch() {
    RunConfig c = withEvents({{{"step", 148}, {"kind", "softcap"}, {"cap", "tanh"}, {"c", 100}},
                              {{"step", 150}, {"kind", "dirty_batch"}}});
    c.attention.qkNorm = QkNormVariant::None;
    c.attention.softcap.kind = SoftcapKind::Tanh;
    c.attention.softcap.c = 50;
    return c;
}
std::vector<ProbeSummary> probesAt(double maxLogit, double fracAtCap = 0) {
    std::vector<ProbeSummary> h;
    for (int i = 0; i < 12; ++i) h.push_back({100 + 4 * i, maxLogit + 0.1 * (i % 2), 6, 4});
    for (auto& p : h) p.fracAtCap = fracAtCap;
    h.push_back({150, maxLogit * 1.02, 6, 4.1});
    return h;
}
Spike diagnosedAt150(const RunConfig& c, const std::vector<ProbeSummary>& h) {
    Spike s;
    s.step = 150;
    diagnoseSpike(s, h, DiagnosisContext{false, 1, 151, changesBefore(c, 150), {}});
    return s;
}

}  // namespace

// The loosened cap was blamed first (run_change, tier 2, "Keep it (tanh, C = 50)") while the
// text said the probe was healthy: a cap 3.5x above the logits bounds nothing.
TEST(SpikeCauses, AFuseThatWasNotActingIsNotBlamed) {
    const RunConfig c = loosenedCapAndABatch();
    const Spike s = diagnosedAt150(c, probesAt(14));
    EXPECT_EQ(s.kind, SpikeKind::DataOrAccumulation) << s.diagnosis;
    EXPECT_EQ(s.tier, 1) << s.diagnosis;
    EXPECT_TRUE(says(s.diagnosis, "step 150, Dirty batch: dirty batch. That is the likeliest"))
        << s.diagnosis;
    EXPECT_TRUE(says(s.diagnosis,
                     "Also in the window: step 148, Softcap: softcap tanh C=50\u2192tanh C=100 "
                     "(not acting before it: the raw max logit stayed at or below 14.3, under "
                     "25 = 0.5 x its old C, none at the cap)"))
        << s.diagnosis;
    EXPECT_FALSE(says(s.diagnosis, "Keep it (tanh, C = 50)")) << s.diagnosis;
    // Near the old bound (30 of 50), or with logits at the cap, the cap was acting: named first.
    for (const Spike& acting :
         {diagnosedAt150(c, probesAt(30)), diagnosedAt150(c, probesAt(14, 0.01))}) {
        EXPECT_EQ(acting.kind, SpikeKind::RunChange) << acting.diagnosis;
        EXPECT_EQ(acting.tier, 2) << acting.diagnosis;
        EXPECT_TRUE(says(acting.diagnosis,
                         "The run changed just before this spike: step 148, "
                         "Softcap"))
            << acting.diagnosis;
    }
}

// QK-norm is acting when the projections' q/k are longer than what enters the dot product.
TEST(SpikeCauses, QkNormSwitchedOffWasActingOnlyIfItShortenedQAndK) {
    const RunConfig c = withEvents({{{"step", 148}, {"kind", "qk_norm"}, {"variant", "none"}},
                                    {{"step", 150}, {"kind", "dirty_batch"}}});
    auto h = probesAt(8);
    for (auto& p : h) p.qkShrink = p.step < 148 ? 0.8 : 1.0;  // the norm lengthened them
    const Spike notActing = diagnosedAt150(c, h);
    EXPECT_EQ(notActing.kind, SpikeKind::DataOrAccumulation) << notActing.diagnosis;
    EXPECT_TRUE(says(notActing.diagnosis,
                     "(not acting before it: QK-norm did not shorten q and k (the projections' "
                     "q/k lengths were 0.8x those entering the dot product))"))
        << notActing.diagnosis;
    for (auto& p : h) p.qkShrink = p.step < 148 ? 5.1 : 1.0;  // raw 9 against 4 normalised
    EXPECT_EQ(diagnosedAt150(c, h).kind, SpikeKind::RunChange);
    EXPECT_EQ(diagnosedAt150(c, h).tier, 3);
    // Not measured (a file without the lengths): the removal stays the cause.
    for (auto& p : h) p.qkShrink = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(diagnosedAt150(c, h).kind, SpikeKind::RunChange);
}

// The alarms judge the fuse the same way, from the layer's previous probe and this one.
TEST(LogitAlarmText, AnAlarmDoesNotBlameAFuseThatWasNotActing) {
    ProbeStats prev, row;
    prev.step = 145;
    prev.logitMaxRaw = 25;
    row.step = 150;
    row.logitMaxRaw = 31;
    AlarmContext ctx;
    ctx.firstRow = prev;
    ctx.previousRow = prev;
    RunConfig c = loosenedCapAndABatch();
    c.events.at(0).args.c = 1000;  // 50 -> 1000: half of 50 is 25, reached
    ctx.changes = changesBefore(c, 150);
    EXPECT_EQ(makeLogitAlarm(logitAlarmRules().at(0), row, ctx).kind, SpikeKind::RunChange);
    c.attention.softcap.c = 100;  // 100 -> 1000: half of 100 is 50, never reached
    ctx.changes = changesBefore(c, 150);
    const LogitAlarm a = makeLogitAlarm(logitAlarmRules().at(0), row, ctx);
    EXPECT_EQ(a.kind, SpikeKind::DataOrAccumulation) << a.text;
    EXPECT_TRUE(says(a.text, "step 150, Dirty batch")) << a.text;
}

// Issue 36, item 13: C 50 -> 5 was read as "a transient is expected; change nothing unless it
// lasts", but C 5 flattens attention for good (docs/CONFIG.md: below ~20).
TEST(SpikeCauses, ASoftcapTightenedBelowTwentyIsNoTransient) {
    RunConfig c = withEvents({{{"step", 150}, {"kind", "softcap"}, {"cap", "tanh"}, {"c", 5}}});
    c.attention.softcap.kind = SoftcapKind::Tanh;
    const auto changes = changesBefore(c, 152);
    const RunChange* cause = likeliestCause(changes);
    ASSERT_NE(cause, nullptr);
    const CauseAdvice tight = adviceFor(*cause);
    EXPECT_EQ(tight.tier, 2);
    EXPECT_EQ(tight.kind, SpikeKind::RunChange);
    EXPECT_TRUE(says(tight.text,
                     "tightened the softcap to C = 5, below the ~20 under which a "
                     "softcap flattens attention"))
        << tight.text;
    EXPECT_FALSE(says(tight.text, "transient is expected")) << tight.text;
    c.events.at(0).args.c = 30;  // 50 -> 30 keeps attention sharp: a transient
    const auto milder = changesBefore(c, 152);
    const CauseAdvice mild = adviceFor(*likeliestCause(milder));
    EXPECT_EQ(mild.tier, 1);
    EXPECT_TRUE(says(mild.text, "a transient is expected")) << mild.text;
}

// incident_token_spike.json: QK-norm off at step 150, logits jump with flat norms. By the
// probes alone this is a token spike (tier 2, softcap); the timeline names the removed norm.
TEST(SpikeCauses, TheDiagnosisNamesTheRemovedNormNotATokenSpike) {
    const auto h = normRemovedHistory();
    Spike byProbes;
    byProbes.step = 155;
    diagnoseSpike(byProbes, h, DiagnosisContext{false, 1, 156, {}, {}});
    EXPECT_EQ(byProbes.kind, SpikeKind::TokenSpike);  // what the old diagnosis stored

    const RunConfig c = withEvents({{{"step", 150}, {"kind", "qk_norm"}, {"variant", "none"}}});
    Spike s;
    s.step = 155;
    diagnoseSpike(s, h, DiagnosisContext{false, 1, 156, changesBefore(c, 155), {}});
    EXPECT_EQ(s.kind, SpikeKind::RunChange);
    EXPECT_EQ(s.tier, 3);
    EXPECT_TRUE(says(s.diagnosis,
                     "The run changed just before this spike: step 150, QK-norm: qk_norm "
                     "rms\u2192none. That is the likeliest cause."))
        << s.diagnosis;
    EXPECT_TRUE(says(s.diagnosis, "the lengths did not cause it, the change did")) << s.diagnosis;
    EXPECT_TRUE(says(s.diagnosis, "Probe read: step 155, the spike's own step")) << s.diagnosis;
    EXPECT_FALSE(says(s.diagnosis, "token/position")) << s.diagnosis;
    EXPECT_FALSE(says(s.diagnosis, "softcap")) << s.diagnosis;
}

TEST(SpikeCauses, ADataEventKeepsTheDataVerdictAndNotesAChronicRunaway) {
    // blowup_no_qknorm with a dirty batch at 150: logits in the thousands, norms 61x the first
    // probe but falling at the spike.
    std::vector<ProbeSummary> h{{0, 3, 1, 1.48}};
    for (int i = 1; i <= 10; ++i) h.push_back({100 + 5 * i, 1871, 700, 110});
    h.push_back({150, 1354, 626, 90.6});
    const RunConfig c = withEvents({{{"step", 150}, {"kind", "dirty_batch"}}});
    Spike s;
    s.step = 150;
    diagnoseSpike(s, h, DiagnosisContext{false, 1, 151, changesBefore(c, 150), {}});
    EXPECT_EQ(s.kind, SpikeKind::DataOrAccumulation);
    EXPECT_EQ(s.tier, 1);
    EXPECT_TRUE(says(s.diagnosis, "step 150, Dirty batch: dirty batch. That is the likeliest"))
        << s.diagnosis;
    EXPECT_TRUE(says(s.diagnosis, "Apart from this spike, q/k norms are " +
                                      diagnosisNumber(90.6 / 1.48) + "x the run's first probe"))
        << s.diagnosis;
    EXPECT_FALSE(says(s.diagnosis, "this spike is a symptom")) << s.diagnosis;
}

TEST(SpikeCauses, AProbeBeforeTheSpikeIsReadOnlyWhenNoneCameAfter) {
    auto h = normRemovedHistory();
    Spike s;
    s.step = 158;  // the last probe (155) is older: the run ended before the next
    diagnoseSpike(s, h, DiagnosisContext{false, 1, 159, {}, {}});
    EXPECT_TRUE(says(s.diagnosis,
                     "No probe at or after the spike was recorded (the run ended "
                     "first); probe read: step 155, the latest before it"))
        << s.diagnosis;
    s.step = 152;
    diagnoseSpike(s, h, DiagnosisContext{false, 1, 153, {}, {}});
    EXPECT_TRUE(says(s.diagnosis, "Probe read: step 155, the first at or after the spike"))
        << s.diagnosis;
    EXPECT_EQ(spikeReportStep(s), 155);  // a replay hands it over where the live run did
}

// The live alarm of incident_token_spike.json said "The Q/K lengths are running away" with
// norms at 0.94x their recent probes. Flat recent norms are flat, whatever the first probe.
TEST(LogitAlarmText, FlatNormsAreNeverCalledRunningAway) {
    ProbeStats first, row;
    first.step = 0;
    first.qRawNormP90 = 1.48;
    row.step = 150;
    row.layer = 1;
    row.logitMaxRaw = 137;
    row.qRawNormP90 = 24.8;
    AlarmContext ctx;
    ctx.firstRow = first;
    ctx.recentQkNorms = {26.3, 26.1, 26.5, 26.3, 26.2};
    const LogitAlarmRule& rule = logitAlarmRules().at(0);
    const LogitAlarm plain = makeLogitAlarm(rule, row, ctx);
    EXPECT_FALSE(says(plain.text, "running away")) << plain.text;
    EXPECT_TRUE(says(plain.text, "q/k norm p90 24.8: " + diagnosisNumber(24.8 / 26.3) +
                                     "x its median over the 5 probes before (26.3"))
        << plain.text;
    EXPECT_TRUE(says(plain.text, "flat over the recent probes but have grown")) << plain.text;
    EXPECT_EQ(plain.kind, SpikeKind::QkRunaway);  // grown 16.8x since step 0: said as such

    ctx.changes =
        changesBefore(withEvents({{{"step", 150}, {"kind", "qk_norm"}, {"variant", "none"}}}), 150);
    const LogitAlarm caused = makeLogitAlarm(rule, row, ctx);
    EXPECT_EQ(caused.kind, SpikeKind::RunChange);
    EXPECT_EQ(caused.tier, 3);
    EXPECT_TRUE(says(caused.text,
                     "The run changed just before: step 150, QK-norm: qk_norm "
                     "rms\u2192none. That is the likeliest cause, not a change in "
                     "the q/k lengths."))
        << caused.text;

    ctx.changes.clear();
    ctx.recentQkNorms = {10, 10.2, 9.9, 10.1, 10};  // 24.8 is 2.5x these: rising
    EXPECT_TRUE(says(makeLogitAlarm(rule, row, ctx).text, "are rising"));
    // blowup_no_qknorm's alarm at step 10 has two probes before it: too few to call the norms
    // flat or rising; it says what it can, the growth since the first probe.
    ctx.recentQkNorms = {1.48, 6.0};
    const LogitAlarm early = makeLogitAlarm(rule, row, ctx);
    EXPECT_FALSE(says(early.text, "flat")) << early.text;
    EXPECT_FALSE(says(early.text, "rising")) << early.text;
    EXPECT_TRUE(says(early.text, "have grown 2x or more since the layer's first probe"))
        << early.text;
    EXPECT_EQ(early.kind, SpikeKind::QkRunaway);
    EXPECT_EQ(early.tier, 3);
}

namespace {

// 20 steps of a steady LM head: mean log Z 10 +- 0.05, max output logit 20 +- 0.1.
OutputLogitReading headAt(double logZ, double outMax) {
    std::vector<double> logZs, outMaxes;
    for (int i = 0; i < 20; ++i) {
        logZs.push_back(10 + 0.05 * (i % 3 - 1));
        outMaxes.push_back(20 + 0.1 * (i % 3 - 1));
    }
    return readOutputLogits(logZ, outMax, logZs, outMaxes);
}

std::vector<ProbeSummary> quietAttention() {
    std::vector<ProbeSummary> h;
    for (int i = 0; i < 12; ++i) h.push_back({i * 10, 5.4 + 0.05 * (i % 2), 2.0, 4.0});
    return h;
}

}  // namespace

// Wortsman et al.'s second instability: attention quiet, the LM head's log Z up 2 nats.
TEST(OutputLogitDiagnosis, ALogZJumpWithQuietAttentionIsTheLmHead) {
    Spike s;
    s.step = 110;
    diagnoseSpike(s, quietAttention(), DiagnosisContext{false, 1, 111, {}, headAt(12, 20.1)});
    EXPECT_EQ(s.kind, SpikeKind::OutputLogits) << s.diagnosis;
    EXPECT_EQ(s.tier, 2);
    // Baseline = the median of the 20 steps, 10 (sd 0.041 floored at 5 % = 0.5): z = 4.
    EXPECT_TRUE(says(s.diagnosis, "mean log Z 12, +2 nats on its baseline 10 (z 4)"))
        << s.diagnosis;
    EXPECT_TRUE(says(s.diagnosis, "z-loss 1e-4 (optim.z_loss)")) << s.diagnosis;
    EXPECT_FALSE(says(s.diagnosis, "QK-norm (RMS")) << s.diagnosis;
}

TEST(OutputLogitDiagnosis, AttentionThatJumpedKeepsItsVerdict) {
    auto h = quietAttention();
    h.push_back({120, 21, 8, 4.05});  // the brief's token spike: max 5 -> 21, norms flat
    Spike s;
    s.step = 120;
    diagnoseSpike(s, h, DiagnosisContext{false, 1, 121, {}, headAt(12, 30)});
    EXPECT_EQ(s.kind, SpikeKind::TokenSpike) << s.diagnosis;
    EXPECT_TRUE(says(s.diagnosis, "max output logit 30 = 1.5x its baseline 20")) << s.diagnosis;
}

TEST(OutputLogitDiagnosis, ASteadyHeadOrMissingMetricsChangeNothing) {
    Spike steady, missing;
    steady.step = missing.step = 110;
    diagnoseSpike(steady, quietAttention(),
                  DiagnosisContext{false, 1, 111, {}, headAt(10.05, 20.1)});
    EXPECT_EQ(steady.kind, SpikeKind::DataOrAccumulation);
    EXPECT_TRUE(says(steady.diagnosis, "(z 0.1): no jump")) << steady.diagnosis;
    // A file older than the output-logit metrics reads NaN: no reading, no sentence.
    const OutputLogitReading nan = headAt(std::nan(""), 20);
    EXPECT_FALSE(nan.available);
    diagnoseSpike(missing, quietAttention(), DiagnosisContext{false, 1, 111, {}, nan});
    EXPECT_EQ(missing.kind, SpikeKind::DataOrAccumulation);
    EXPECT_FALSE(says(missing.diagnosis, "Output logits")) << missing.diagnosis;
}
