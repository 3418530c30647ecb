// cli_align_test.cpp — `qklab-cli compare --align RULE` (issue 40, item 4): each run's anchor
// step, a run without one listed with the reason (not dropped), the values at steps from the
// anchor in text and JSON, and a bad rule refused with exit 2 naming the value.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "qklab/config/run_config.h"
#include "qklab/store/run_writer.h"
#include "support/cli_run.h"
#include "support/test_files.h"

using namespace qklab;
using nlohmann::json;

namespace {

class CliAlign : public ::testing::Test {
  protected:
    void SetUp() override {
        m_dir = testsupport::scratchDir("cli-align");
        m_db = (m_dir / "runs.db").string();
        writeRun("blowup", true);
        writeRun("calm", false);
    }
    void TearDown() override { std::filesystem::remove_all(m_dir); }
    Result cli(const std::string& args) { return runCli(args, (m_dir / "stderr.txt").string()); }

    // 100 steps of loss 4; `spiky`: 9 at step 60, stored as a loss spike there.
    void writeRun(const std::string& name, bool spiky) {
        NewRun nr;
        nr.name = name;
        nr.configJson = configToJson(RunConfig{}).dump();
        RunWriter w(m_db, nr);
        for (int64_t s = 0; s < 100; ++s) {
            StepMetrics m;
            m.step = s;
            m.loss = spiky && s == 60 ? 9.0 : 4.0;
            m.gradNorm = 1;
            m.seqLen = 64;
            w.addStep(m);
        }
        if (spiky) {
            Spike sp;
            sp.step = 60;
            sp.metric = "loss";
            sp.zScore = 7.5;
            w.addSpike(sp);
        }
        w.finish(RunStatus::Finished);
    }

    std::filesystem::path m_dir;
    std::string m_db;
};

bool hasLine(const std::string& out, const std::string& line) {
    return out.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_F(CliAlign, PrintsEachAnchorAndTheValuesFromIt) {
    const Result r = cli("compare blowup calm --align spike --db " + m_db);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("\naligned at first spike (spike):\n"), std::string::npos) << r.out;
    EXPECT_TRUE(hasLine(r.out, "blowup  60           spike in loss (z 7.5)")) << r.out;
    EXPECT_TRUE(hasLine(r.out, "calm    never        no spike stored")) << r.out;
    // Steps 10, 50, 60, 70 and 110 (past the run's end: "-").
    EXPECT_TRUE(hasLine(r.out, "blowup, training loss    4    4  9    4    -")) << r.out;
    EXPECT_TRUE(hasLine(r.out, "blowup, raw max logit    -    -  -    -    -"))
        << r.out;                                                 // no probes
    EXPECT_EQ(r.out.find("calm, "), std::string::npos) << r.out;  // listed above, no values
}

TEST_F(CliAlign, JsonHasTheAnchorsAndTheValues) {
    const Result r = cli("compare blowup calm --align " +
                         testsupport::shellWord("threshold:loss>5") + " --json --db " + m_db);
    ASSERT_EQ(r.status, 0) << r.err;
    const json align = json::parse(r.out)["align"];
    EXPECT_EQ(align["rule"], "threshold:loss>5");
    EXPECT_EQ(align["offsets"], json::parse("[-50, -10, 0, 10, 50]"));
    EXPECT_EQ(align["runs"][0]["anchor_step"], 60);
    EXPECT_EQ(align["runs"][0]["at"], "training loss 9 > 5");
    EXPECT_EQ(align["runs"][0]["values"]["loss"], json::parse("[4.0, 4.0, 9.0, 4.0, null]"));
    EXPECT_TRUE(align["runs"][1]["anchor_step"].is_null());
    EXPECT_EQ(align["runs"][1]["never"], "training loss never > 5");
}

TEST_F(CliAlign, ABadRuleExitsTwoNamingTheValue) {
    for (const auto& [rule, said] : std::vector<std::pair<std::string, std::string>>{
             {"threshold:loss>abc",
              "align rule 'threshold:loss>abc': 'abc' is not a finite number"},
             {"spikes", "align rule 'spikes': not a rule"},
             {"event:boom", "align rule 'event:boom': 'boom' is not an event kind"}}) {
        const Result r =
            cli("compare blowup calm --align " + testsupport::shellWord(rule) + " --db " + m_db);
        EXPECT_EQ(r.status, 2) << rule;
        EXPECT_NE(r.err.find(said), std::string::npos) << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
    }
}
