// logit_alarms_test.cpp — what a logit alarm reads under QK-norm and under a softcap the run
// has already (issue 38, item 13): hand-built rows, and a RunMonitor fed them as a run's probes
// are (qklab's trainer and the Python package's external runs both feed one).
#include <gtest/gtest.h>

#include "qklab/analysis/run_monitor.h"
#include "qklab/analysis/spikes.h"
#include "qklab/config/events.h"

using namespace qklab;

namespace {

bool says(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// A layer row whose projections' q/k p90 is `raw` and whose normalised q/k p90 is `normed`.
ProbeStats layerRow(int64_t step, double maxLogit, double raw, double normed) {
    ProbeStats r;
    r.step = step;
    r.layer = 0;
    r.head = -1;
    r.logitMaxRaw = maxLogit;
    r.qRawNormP90 = raw;
    r.kRawNormP90 = raw / 2;
    r.qNormP90 = normed;
    r.kNormP90 = normed / 2;
    return r;
}

const LogitAlarmRule& maxRule() {
    return logitAlarmRules().at(0);  // logit_max_raw > 30
}

}  // namespace

// Under QK-norm the projections' lengths are divided away: they grew 16.8x, but the lengths
// the logits are made of (normalised, gains included) stayed at 8. The alarm read the former
// and said "the logits are high because the lengths grew earlier".
TEST(LogitAlarmText, UnderQkNormTheNormalisedLengthsAreRead) {
    AlarmContext ctx;
    ctx.firstRow = layerRow(0, 3, 1.48, 8);
    ctx.recentQkNorms = {8, 8, 8, 8, 8};
    ctx.qkNormActive = true;
    const LogitAlarm flat = makeLogitAlarm(maxRule(), layerRow(150, 31, 24.8, 8), ctx);
    EXPECT_TRUE(says(flat.text,
                     "q/k norm p90 after QK-norm (its gains included) 8: 1x its median over the "
                     "5 probes before (8, z 0); 1x the layer's first probe (step 0, 8); out of "
                     "the projections, before QK-norm: 24.8. "))
        << flat.text;
    EXPECT_TRUE(says(flat.text,
                     "QK-norm holds them, so the logits are high because q and k "
                     "align, not because they grew"))
        << flat.text;
    EXPECT_FALSE(says(flat.text, "grew earlier")) << flat.text;
    EXPECT_EQ(flat.kind, SpikeKind::HighLogits);
    EXPECT_EQ(flat.tier, 4);

    // The gains grew: the normalised lengths are 20 / 8 = 2.5x the first probe's, flat lately.
    ctx.recentQkNorms = {20, 20, 20, 20, 20};
    const LogitAlarm gains = makeLogitAlarm(maxRule(), layerRow(150, 31, 24.8, 20), ctx);
    EXPECT_TRUE(says(gains.text, "2.5x the layer's first probe (step 0, 8)")) << gains.text;
    EXPECT_TRUE(says(gains.text,
                     "flat over the recent probes but have grown 2x or more since "
                     "the first: QK-norm's gains grew earlier"))
        << gains.text;
    EXPECT_EQ(gains.kind, SpikeKind::QkRunaway);
    EXPECT_EQ(gains.tier, 4);

    // Without QK-norm the same row is read from its projections, as before.
    ctx.qkNormActive = false;
    ctx.recentQkNorms = {24, 24, 24, 24, 24};
    const LogitAlarm plain = makeLogitAlarm(maxRule(), layerRow(150, 31, 24.8, 8), ctx);
    EXPECT_TRUE(says(plain.text, "q/k norm p90 24.8: ")) << plain.text;
    EXPECT_TRUE(says(plain.text, "the lengths grew earlier")) << plain.text;
    EXPECT_EQ(plain.tier, 3);
}

// Tier 2 prescribed "add a tanh softcap with C = 50" to Gemma 2, whose cap is 50, and to a
// model capped at 5. The advice starts from the cap the run has.
TEST(LogitAlarmText, TierTwoAdvisesFromTheCapTheRunHas) {
    AlarmContext ctx;
    ctx.firstRow = layerRow(0, 31, 5, 5);  // the first probe: no growth, no baseline
    const ProbeStats row = layerRow(0, 31, 5, 5);
    const LogitAlarm none = makeLogitAlarm(maxRule(), row, ctx);
    EXPECT_EQ(none.tier, 2);
    EXPECT_TRUE(says(none.text,
                     "Tier 2: add a tanh softcap with C = 50, watch 500 steps, then "
                     "C = 30 and/or grad clip 1.0."))
        << none.text;

    ctx.softcapC = 50;
    const LogitAlarm gemma = makeLogitAlarm(maxRule(), row, ctx);
    EXPECT_EQ(gemma.tier, 2);
    EXPECT_FALSE(says(gemma.text, "add a tanh softcap")) << gemma.text;
    EXPECT_TRUE(says(gemma.text,
                     "Tier 2: the run has an attention softcap already, C = 50: lower "
                     "it to C = 30, watch 500 steps"))
        << gemma.text;

    ctx.softcapC = 100;
    EXPECT_TRUE(says(makeLogitAlarm(maxRule(), row, ctx).text, "C = 100: lower it to C = 50,"));
    ctx.softcapC = 30;
    EXPECT_TRUE(says(makeLogitAlarm(maxRule(), row, ctx).text,
                     "C = 30, the brief's lowest step (C = 30): rather than a lower cap, add grad "
                     "clip 1.0"));
    ctx.softcapC = 5;
    const LogitAlarm tight = makeLogitAlarm(maxRule(), row, ctx);
    EXPECT_TRUE(says(tight.text,
                     "C = 5, below the ~20 under which a softcap flattens attention: "
                     "do not lower it; set it back to 30-50"))
        << tight.text;
    EXPECT_FALSE(says(tight.text, "lower it to")) << tight.text;
}

// The monitor reads the layer's earlier probes as it reads the alarm's row: the normalised
// lengths under QK-norm (a baseline of raw lengths, 1.5 to 24, made 8 look 0.53x its median).
TEST(LogitAlarmText, TheMonitorsBaselineUnderQkNormIsNormalised) {
    RunConfig c;
    c.attention.qkNorm = QkNormVariant::Rms;
    RunMonitor monitor(c);
    for (int64_t i = 0; i < 5; ++i)
        EXPECT_TRUE(
            monitor.addProbes(i * 10, {layerRow(i * 10, 5, 1.5 + 4 * i, 8)}, true).alarms.empty());
    const MonitorReport r = monitor.addProbes(50, {layerRow(50, 31, 24, 8)}, true);
    ASSERT_EQ(r.alarms.size(), 1u);
    EXPECT_TRUE(says(r.alarms[0].text,
                     "after QK-norm (its gains included) 8: 1x its median over "
                     "the 5 probes before (8, z 0)"))
        << r.alarms[0].text;
    EXPECT_EQ(r.alarms[0].tier, 4);
}

// The cap comes from the run's config at the alarm's step: Gemma 2's 50, then an event's 5.
TEST(LogitAlarmText, TheMonitorTakesTheCapInForceFromTheConfig) {
    RunConfig c;
    c.schedule.steps = 200;
    c.attention.softcap.kind = SoftcapKind::Tanh;
    c.attention.softcap.c = 50;
    c.events.push_back(
        eventFromJson({{"step", 100}, {"kind", "softcap"}, {"cap", "tanh"}, {"c", 5}}, "test"));
    RunMonitor monitor(c);
    const MonitorReport first = monitor.addProbes(0, {layerRow(0, 31, 5, 5)}, false);
    ASSERT_EQ(first.alarms.size(), 1u);
    EXPECT_TRUE(says(first.alarms[0].text, "softcap already, C = 50: lower it to C = 30"))
        << first.alarms[0].text;
    ProbeStats p99 = layerRow(150, 5, 5, 5);
    p99.logitP99Raw = 16;  // the other rule (p99 > 15): its first alarm, after the event
    const MonitorReport later = monitor.addProbes(150, {p99}, false);
    ASSERT_EQ(later.alarms.size(), 1u);
    EXPECT_TRUE(says(later.alarms[0].text, "softcap already, C = 5, below the ~20"))
        << later.alarms[0].text;
}

// A resumed run (the Python package's resume): the stored probes and alarms are the monitor's
// history. Without them the resumed process took its first probe for the layer's first, read
// "1x the layer's first probe", called the lengths stable and prescribed tier 2 for a Q/K
// runaway (seen in experiments/external/hf_resume_and_compare.py), and raised stored alarms
// again.
TEST(LogitAlarmText, AResumedRunComparesAgainstItsStoredProbesAndRaisesNoAlarmTwice) {
    RunConfig config;
    RunMonitor whole(config);
    const ProbeStats first = layerRow(0, 2, 2, 2), grown = layerRow(10, 40, 16, 16);
    const ProbeStats later = layerRow(20, 45, 20, 20);
    EXPECT_TRUE(whole.addProbes(0, {first}, false).alarms.empty());
    const auto raised = whole.addProbes(10, {grown}, false).alarms;
    ASSERT_EQ(raised.size(), 1u);
    EXPECT_EQ(raised[0].tier, 3);

    // Resumed after step 5: the probe at 0 is stored, the one at 10 is new.
    RunMonitor resumed(config);
    resumed.restore({first}, {});
    const auto again = resumed.addProbes(10, {grown}, false).alarms;
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].text, raised[0].text);
    EXPECT_TRUE(says(again[0].text, "8x the layer's first probe (step 0, 2)")) << again[0].text;

    // Resumed after step 15: the alarm at 10 is stored and is not raised again.
    RunMonitor late(config);
    late.restore({first, grown}, raised);
    EXPECT_TRUE(late.addProbes(20, {later}, false).alarms.empty());
    RunMonitor fresh(config);  // what the resumed process did before
    const auto twice = fresh.addProbes(20, {later}, false).alarms;
    ASSERT_EQ(twice.size(), 1u);
    EXPECT_TRUE(says(twice[0].text, "1x the layer's first probe (step 20, 20)")) << twice[0].text;
}
