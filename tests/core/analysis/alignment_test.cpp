// alignment_test.cpp — runs aligned at their own events (issue 40, item 4): every rule's anchor
// read back from hand-made stored runs at the exact step, "none" with its reason, the onset's
// first-of-three, the values at steps from the anchor, and bad rules refused naming the value.
#include "qklab/analysis/alignment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "qklab/config/run_config.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"
#include "support/test_files.h"

namespace fs = std::filesystem;
using namespace qklab;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class AlignmentTest : public ::testing::Test {
  protected:
    void SetUp() override { m_path = (testsupport::scratchDir("align") / "runs.db").string(); }
    void TearDown() override { fs::remove_all(fs::path(m_path).parent_path()); }

    static StepMetrics step(int64_t s, double loss, double grad = 1.0) {
        StepMetrics m;
        m.step = s;
        m.loss = loss;
        m.gradNorm = grad;
        m.seqLen = 64;
        return m;
    }
    static ProbeStats probe(int64_t s, int32_t layer, double maxRaw) {
        ProbeStats p;
        p.step = s;
        p.layer = layer;
        p.logitMaxRaw = maxRaw;
        return p;
    }
    static Spike spike(int64_t s, const std::string& metric, double z) {
        Spike sp;
        sp.step = s;
        sp.metric = metric;
        sp.zScore = z;
        return sp;
    }
    RunWriter open(const std::string& name) {
        NewRun nr;
        nr.name = name;
        nr.configJson = configToJson(RunConfig{}).dump();
        return RunWriter(m_path, nr);
    }

    // 100 steps of loss 4 (9 at step 60, a stored loss spike), grad norm 1 (5 at step 55);
    // probes every 10 steps: layer 0's raw max 10 + step/5, layer 1's 5, then 35 from step 40;
    // a softcap config event at 30 and an LR intervention at 70.
    int64_t writeBlowup() {
        RunWriter w = open("blowup");
        for (int64_t s = 0; s < 100; ++s) w.addStep(step(s, s == 60 ? 9.0 : 4.0, s == 55 ? 5 : 1));
        for (int64_t s = 0; s < 100; s += 10) {
            w.addProbe(probe(s, 0, 10.0 + double(s) / 5));
            w.addProbe(probe(s, 1, s >= 40 ? 35.0 : 5.0));
        }
        w.addSpike(spike(60, "loss", 7.5));
        w.addEvent({30, "softcap", R"({"cap":"tanh","c":30.0})", "config"});
        w.addEvent({70, "lr_multiplier", R"({"factor":0.5})", "user"});
        w.finish(RunStatus::Finished);
        return w.runId();
    }

    // 20 steps, the loss NaN at step 15; no probes, no spikes.
    int64_t writeDiverged() {
        RunWriter w = open("diverged");
        for (int64_t s = 0; s < 16; ++s) w.addStep(step(s, s == 15 ? kNaN : 3.0));
        w.finish(RunStatus::Diverged);
        return w.runId();
    }

    Anchor anchor(int64_t run, const std::string& rule) {
        RunStore store(m_path, StoreAccess::ReadOnly);
        return findAnchor(store, run, parseAlignRule(rule));
    }

    std::string m_path;
};

}  // namespace

TEST_F(AlignmentTest, EachRuleAnchorsAtItsFirstStoredStep) {
    const int64_t run = writeBlowup();
    EXPECT_EQ(anchor(run, "step:20").step, 20);
    EXPECT_EQ(anchor(run, "threshold:loss>6").step, 60);
    EXPECT_EQ(anchor(run, "threshold:grad_norm>4").step, 55);
    EXPECT_EQ(anchor(run, "threshold:loss<4.5").step, 0);
    // Any layer: layer 1 passes 30 at step 40; layer 0 passes 25 at step 80 (10 + 80/5 = 26).
    const Anchor logit = anchor(run, "threshold:logit_max_raw>30");
    EXPECT_EQ(logit.step, 40);
    EXPECT_EQ(logit.what, "raw max logit 35 > 30 (layer 1)");
    EXPECT_EQ(anchor(run, "threshold:logit_max_raw>25.5").step, 40);
    const Anchor first = anchor(run, "spike");
    EXPECT_EQ(first.step, 60);
    EXPECT_EQ(first.what, "spike in loss (z 7.5)");
    EXPECT_EQ(anchor(run, "event:softcap").step, 30);
    EXPECT_EQ(anchor(run, "event:lr_multiplier").step, 70);  // an intervention is an event too
    EXPECT_EQ(anchor(run, "intervention").step, 70);
}

TEST_F(AlignmentTest, NoAnchorSaysWhy) {
    const int64_t run = writeBlowup();
    const Anchor late = anchor(run, "step:500");
    EXPECT_FALSE(late.step);
    EXPECT_EQ(late.what, "step 500 not stored");
    EXPECT_EQ(anchor(run, "threshold:logit_max_raw>1000").what, "raw max logit never > 1000");
    EXPECT_EQ(anchor(run, "event:qk_clip").what, "no qk_clip event stored");
    const int64_t diverged = writeDiverged();
    EXPECT_EQ(anchor(diverged, "spike").what, "no spike stored");
    EXPECT_EQ(anchor(diverged, "intervention").what, "no intervention stored");
    EXPECT_EQ(anchor(diverged, "threshold:logit_max_raw>30").what, "no probes stored");
    EXPECT_FALSE(anchor(diverged, "threshold:loss>3").step);  // NaN passes no threshold
}

// The onset is the first of three, and says which: the logit line (40) before the spike (60);
// divergence (15) alone; a spike (12) before the logit line (20); none in a healthy run.
TEST_F(AlignmentTest, OnsetIsTheFirstOfLogitLineSpikeAndDivergence) {
    const Anchor blowup = anchor(writeBlowup(), "onset");
    EXPECT_EQ(blowup.step, 40);
    EXPECT_EQ(blowup.what, "onset: raw max logit 35 > 30 (layer 1)");
    const Anchor diverged = anchor(writeDiverged(), "onset");
    EXPECT_EQ(diverged.step, 15);
    EXPECT_EQ(diverged.what, "onset: diverged (loss not finite)");
    {
        RunWriter w = open("spiky");
        for (int64_t s = 0; s < 30; ++s) w.addStep(step(s, 3.0));
        w.addProbe(probe(20, 0, 31));
        w.addSpike(spike(12, "grad_norm", 6.1));
        w.finish(RunStatus::Finished);
        const Anchor a = anchor(w.runId(), "onset");
        EXPECT_EQ(a.step, 12);
        EXPECT_EQ(a.what, "onset: spike in grad_norm (z 6.1)");
    }
    RunWriter w = open("healthy");
    for (int64_t s = 0; s < 30; ++s) w.addStep(step(s, 3.0));
    w.addProbe(probe(20, 0, 29.9));
    w.finish(RunStatus::Finished);
    const Anchor none = anchor(w.runId(), "onset");
    EXPECT_FALSE(none.step);
    EXPECT_EQ(none.what, "no onset: raw max logit never past 30, no spike, did not diverge");
}

// Step metrics at their own step; a probe column from the latest probe at or before the step,
// max over layers; nothing outside the stored steps.
TEST_F(AlignmentTest, ValuesAtStepsFromTheAnchor) {
    const int64_t id = writeBlowup();
    RunStore store(m_path, StoreAccess::ReadOnly);
    const RunInfo info = store.run(id);
    const auto steps = store.stepMetrics(id);
    const auto probes = store.probeStats(id, -1);
    const auto spikes = store.spikes(id);
    const auto events = store.events(id);
    const AlignRows rows{&info, &steps, &probes, &spikes, &events};
    EXPECT_EQ(metricAtStep(rows, "loss", 60), 9.0);
    EXPECT_EQ(metricAtStep(rows, "grad_norm", 55), 5.0);
    EXPECT_EQ(metricAtStep(rows, "logit_max_raw", 45), 35.0);  // probe 40: max(18, 35)
    EXPECT_EQ(metricAtStep(rows, "logit_max_raw", 90), 35.0);  // probe 90: max(28, 35)
    EXPECT_EQ(metricAtStep(rows, "logit_max_raw", 9), 10.0);   // probe 0: max(10, 5)
    EXPECT_FALSE(metricAtStep(rows, "loss", 100));
    EXPECT_FALSE(metricAtStep(rows, "logit_max_raw", 100));  // past the run's end
    EXPECT_FALSE(metricAtStep(rows, "logit_max_raw", -10));
    EXPECT_EQ(alignedOffsets(), (std::vector<int64_t>{-50, -10, 0, 10, 50}));
    // A run whose logit line is higher (alarms.intervene): no layer passes 36, the spike is first.
    AlignRows higher = rows;
    higher.interveneMaxLogit = 36;
    EXPECT_EQ(findAnchor(higher, parseAlignRule("onset")).what, "onset: spike in loss (z 7.5)");
}

TEST(AlignRuleTest, ParsesEveryKindAndWritesItBack) {
    for (const char* text : {"step:300", "threshold:loss>6", "threshold:entropy<0.5", "spike",
                             "event:qk_norm", "intervention", "onset"})
        EXPECT_EQ(alignRuleText(parseAlignRule(text)), text);
    const AlignRule r = parseAlignRule("threshold:logit_max_raw>30");
    EXPECT_EQ(r.kind, AlignKind::Threshold);
    EXPECT_EQ(r.metric, "logit_max_raw");
    EXPECT_TRUE(r.above);
    EXPECT_EQ(r.value, 30.0);
    EXPECT_EQ(alignAnchorName(r), "logit_max_raw > 30");
    EXPECT_EQ(alignAnchorName(parseAlignRule("spike")), "first spike");
    EXPECT_EQ(alignKinds().size(), 6u);  // the chooser and docs iterate the table
}

TEST(AlignRuleTest, BadRulesNameTheValue) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"stpe",
         "not a rule (one of step:N, threshold:METRIC>VALUE, spike, event:KIND, "
         "intervention, onset)"},
        {"step", "write it as step:N"},
        {"spike:3", "write it as spike"},
        {"step:-3", "'-3' is not a step >= 0"},
        {"step:1e3", "'1e3' is not a step >= 0"},
        {"threshold:loss", "a threshold is METRIC>VALUE or METRIC<VALUE"},
        {"threshold:lss>3", "'lss' is not a metric (one of loss, val_loss,"},
        {"threshold:loss>abc", "'abc' is not a finite number"},
        {"threshold:loss>inf", "'inf' is not a finite number"},
        {"threshold:loss> 3", "' 3' is not a finite number"},
        {"event:nope", "'nope' is not an event kind (one of lr_multiplier,"},
    };
    for (const auto& [text, why] : cases) {
        try {
            parseAlignRule(text);
            ADD_FAILURE() << text << " was accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::InvalidConfig) << text;
            const std::string said = e.what();
            EXPECT_EQ(said.rfind("align rule '" + text + "': " + why, 0), 0u) << said;
        }
    }
}
