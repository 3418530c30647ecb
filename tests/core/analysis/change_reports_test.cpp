// change_reports_test — what a change to a run did (qklab/analysis/change_reports.h), on hand-built
// series with hand-computed numbers, and how the run monitor reports it and a later spike quotes
// it. tests/core/engine/diagnosis_test.cpp measures the same on real runs, against their controls.
#include "qklab/analysis/change_reports.h"

#include <gtest/gtest.h>

#include "qklab/analysis/run_monitor.h"

using namespace qklab;

namespace {

bool says(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Issue 36, item 12: softcap tanh C 30 removed (C 1000) at step 80.
RunConfig capRemovedAt80() {
    RunConfig c;
    c.schedule.steps = 200;
    c.attention.softcap.kind = SoftcapKind::Tanh;
    c.attention.softcap.c = 30;
    c.events = {
        eventFromJson({{"step", 80}, {"kind", "softcap"}, {"cap", "tanh"}, {"c", 1000}}, "test")};
    return c;
}

// +-0.01 in the pattern + - - + (steps 0, 1, 2, 3 mod 4): over whole periods its least-squares
// line is flat (slope 0) and its spread around it exactly 0.01.
double noise(int64_t step) {
    return step % 4 == 0 || step % 4 == 3 ? 0.01 : -0.01;
}

// Loss 2 - `slope` x (step - 80) before step 80, `shift` more from it on, with noise(); a probe
// every 5 steps with entropy 2.4 and a max logit of 30 before, `entropyAfter` and `maxAfter`
// after.
RunSeries seriesOf(double shift, double entropyAfter, double maxAfter, int64_t to = 99,
                   double slope = 0) {
    RunSeries s;
    for (int64_t step = 40; step <= to; ++step) {
        s.losses.emplace_back(
            step, 2 - slope * double(step - 80) + (step >= 80 ? shift : 0) + noise(step));
        if (step % 5) continue;
        ProbeSummary p;
        p.step = step;
        p.entropy = step >= 80 ? entropyAfter : 2.4;
        p.maxCapped = step >= 80 ? maxAfter : 30;
        s.probes.push_back(p);
    }
    return s;
}

}  // namespace

// Every number hand-computed: the loss means are 2 and 2.3 (the noise cancels over 20 steps),
// the line of the steps before is flat at 2 with a spread of 0.01 around it, so z = 0.3 / 0.01.
TEST(ChangeReport, StatesWhatTheChangeDidAgainstTheStepsBefore) {
    const RunConfig c = capRemovedAt80();
    const auto r = reportChange(c, c.events[0], seriesOf(0.3, 0.05, 600), 99);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->step, 80);
    EXPECT_EQ(r->kind, "softcap");
    EXPECT_EQ(r->reportStep, 99);
    EXPECT_NEAR(r->lossBefore, 2.0, 1e-12);
    EXPECT_NEAR(r->lossAfter, 2.3, 1e-12);
    EXPECT_NEAR(r->lossExpected, 2.0, 1e-12);
    EXPECT_NEAR(r->lossZ, 30, 1e-6);
    EXPECT_EQ(r->entropyBefore, 2.4);
    EXPECT_EQ(r->entropyAfter, 0.05);
    EXPECT_EQ(r->maxLogitBefore, 30);
    EXPECT_EQ(r->maxLogitAfter, 600);
    EXPECT_TRUE(r->moved);
    EXPECT_EQ(
        r->text,
        "step 80, Softcap: softcap tanh C=30\u2192tanh C=1000: over steps 80-99 against the "
        "20 before, loss 2 \u2192 2.3, against 2 the trend before led to expect: +0.3 (z 30); "
        "attention entropy 2.4 \u2192 0.05 nats "
        "(0.0208x); max logit softmax sees 30 \u2192 600 (20x). It moved the run (a loss "
        "shift of 3 spreads, or entropy or max logit 1.5x either way, or more).");
}

TEST(ChangeReport, NoiseIsNoEffectAndTooFewStepsAreNoReport) {
    const RunConfig c = capRemovedAt80();
    // 0.02 is 2 spreads; entropy 1.4x and the max 0.7x stay inside 1.5x either way.
    const auto quiet = reportChange(c, c.events[0], seriesOf(0.02, 2.4 * 1.4, 21), 99);
    ASSERT_TRUE(quiet.has_value());
    EXPECT_FALSE(quiet->moved);
    EXPECT_TRUE(says(quiet->text, "Nothing moved beyond its noise.")) << quiet->text;
    // A loss falling 0.01 a step goes on falling: 0.2 lower after the change (1.905 against
    // 2.105 before) is what the trend led to expect, no effect.
    const auto falling = reportChange(c, c.events[0], seriesOf(0, 2.4, 30, 99, 0.01), 99);
    EXPECT_NEAR(falling->lossBefore, 2.105, 1e-9);
    EXPECT_NEAR(falling->lossAfter, 1.905, 1e-9);
    EXPECT_NEAR(falling->lossExpected, 1.905, 1e-9);
    EXPECT_FALSE(falling->moved) << falling->text;
    EXPECT_TRUE(reportChange(c, c.events[0], seriesOf(0.5, 0.05, 600), 99 + 50)->moved);
    EXPECT_EQ(reportChange(c, c.events[0], seriesOf(0.5, 0.05, 600), 99 + 50)->reportStep, 99);
    // Steps 80 and 81 only: too few to say anything.
    EXPECT_FALSE(reportChange(c, c.events[0], seriesOf(0.3, 0.05, 600), 81).has_value());
    EXPECT_EQ(reportChange(c, c.events[0], seriesOf(0.3, 0.05, 600), 82)->reportStep, 82);
    // No probe after it: the loss alone, the probe measures NaN and said so.
    RunSeries noProbes = seriesOf(0.3, 0.05, 600);
    noProbes.probes.resize(8);  // steps 40..75
    const auto lossOnly = reportChange(c, c.events[0], noProbes, 99);
    EXPECT_TRUE(std::isnan(lossOnly->entropyAfter));
    EXPECT_TRUE(says(lossOnly->text, "attention entropy not probed on both sides"))
        << lossOnly->text;
}

TEST(ChangeReport, AChangeIsInForceUntilOneOfItsKindReplacesIt) {
    RunConfig c = capRemovedAt80();
    EXPECT_FALSE(changeInForce(c, c.events[0], 79));
    EXPECT_TRUE(changeInForce(c, c.events[0], 150));
    c.events.push_back(
        eventFromJson({{"step", 120}, {"kind", "softcap"}, {"cap", "tanh"}, {"c", 30}}, "t"));
    EXPECT_TRUE(changeInForce(c, c.events[0], 119));
    EXPECT_FALSE(changeInForce(c, c.events[0], 120));
    const Event batch = eventFromJson({{"step", 80}, {"kind", "dirty_batch"}}, "t");
    EXPECT_TRUE(changeInForce(c, batch, 99));  // one step, followed for its report's window
    EXPECT_FALSE(changeInForce(c, batch, 100));
}

namespace {

// One layer's probe row: entropy and the max logit softmax sees.
std::vector<ProbeStats> rowsAt(int64_t step, double entropy, double maxCapped) {
    ProbeStats r;
    r.step = step;
    r.layer = 0;
    r.logitMaxRaw = r.logitMaxCapped = maxCapped;
    r.logitP99Raw = 5;
    r.qRawNormP90 = r.kRawNormP90 = 4;
    r.entropy = entropy;
    return {r};
}

struct Fed {
    std::vector<ChangeReport> reports;
    std::vector<Spike> spikes;
    const Spike* at(int64_t step) const {
        for (const Spike& s : spikes)
            if (s.step == step) return &s;
        return nullptr;
    }
};

// A monitor fed steps 0..`last` of the series above (a loss 8 at `spikeAt`), probes every 5.
Fed feed(const RunConfig& c, double shift, int64_t spikeAt, int64_t last) {
    RunMonitor monitor(c);
    Fed out;
    const auto take = [&](const MonitorReport& r) {
        out.reports.insert(out.reports.end(), r.changeReports.begin(), r.changeReports.end());
        out.spikes.insert(out.spikes.end(), r.spikes.begin(), r.spikes.end());
    };
    for (int64_t step = 0; step <= last; ++step) {
        const bool after = step >= 80;
        if (step % 5 == 0)
            take(
                monitor.addProbes(step, rowsAt(step, after ? 0.05 : 2.4, after ? 600 : 30), false));
        StepMetrics m;
        m.step = step;
        m.loss = step == spikeAt ? 8 : 2 + (after ? shift : 0) + noise(step);
        m.gradNorm = 1 + (step % 2 ? 0.01 : -0.01);
        take(monitor.addStep(m, false, step < last));
    }
    take(monitor.finish());
    return out;
}

}  // namespace

// The report comes when its window closes (step 99), and the spike at 118, 38 steps after the
// change and far outside its 10-step cause window, quotes it: the removed cap is still in force.
TEST(ChangeReport, TheMonitorReportsAChangeAndALaterSpikeQuotesIt) {
    const Fed run = feed(capRemovedAt80(), 0.3, 118, 130);
    ASSERT_EQ(run.reports.size(), 1u);
    EXPECT_EQ(run.reports[0].reportStep, 99);
    EXPECT_TRUE(run.reports[0].moved);
    const Spike* late = run.at(118);  // (the shift itself spikes at 80, in the cause window)
    ASSERT_NE(late, nullptr);
    EXPECT_TRUE(says(late->diagnosis,
                     "An earlier change is still in force and moved the run: step 80, Softcap: "
                     "softcap tanh C=30\u2192tanh C=1000: over steps 80-99"))
        << late->diagnosis;
    // Replaced at step 110: no longer in force at 118, not quoted.
    RunConfig replaced = capRemovedAt80();
    replaced.events.push_back(
        eventFromJson({{"step", 110}, {"kind", "softcap"}, {"cap", "tanh"}, {"c", 30}}, "t"));
    const Fed undone = feed(replaced, 0.3, 118, 130);
    ASSERT_NE(undone.at(118), nullptr);
    EXPECT_FALSE(says(undone.at(118)->diagnosis, "An earlier change")) << undone.at(118)->diagnosis;
    ASSERT_EQ(undone.reports.size(), 2u);  // step 110's window closes at 129
}

// A change near the end is reported over the steps it had when the run ends.
TEST(ChangeReport, TheRunsEndReportsAChangeWhoseWindowHadNotClosed) {
    RunConfig c = capRemovedAt80();
    c.events[0].step = 70;
    c.events.push_back(
        eventFromJson({{"step", 95}, {"kind", "lr_multiplier"}, {"factor", 0.5}}, "t"));
    const Fed run = feed(c, 0.3, -1, 99);
    ASSERT_EQ(run.reports.size(), 2u);
    EXPECT_EQ(run.reports[0].step, 70);
    EXPECT_EQ(run.reports[0].reportStep, 89);
    EXPECT_EQ(run.reports[1].step, 95);
    EXPECT_EQ(run.reports[1].kind, "lr_multiplier");
    EXPECT_EQ(run.reports[1].reportStep, 99);
}
