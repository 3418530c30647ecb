// cli_forecast_test.cpp — the forecast where a CLI user looks (issue 40): `run` prints it as it
// is made, `show` and `export` read it back, `forecast-report` scores it against the run's onset,
// and a bad --seeds exits 2 naming the value.
//
// The run: a 2-layer model at LR 0.1, probed every 2 steps. Layer 0's raw max logit triples
// every 2 steps (3.23 at step 8, 9.78 at step 10, 48.5 at step 16): the forecaster warns at
// step 10, the first probe past its floor (8), and the onset is step 16, 6 steps later.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_run.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kBlowUp = R"({"optim": {"lr": 0.1}, "model": {"d_model": 32,
    "n_layers": 2, "n_heads": 2, "seq_len": 32}, "schedule": {"steps": 30, "warmup_steps": 20},
    "data": {"batch_size": 4}, "probes": {"every": 2, "hist_bins": 16},
    "eval": {"every": 0, "batches": 1}, "run": {"threads": 1, "seed": 1}})";

class CliForecastTest : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/qklab-forecast-XXXXXX";
        m_dir = mkdtemp(tmpl);
        m_db = m_dir + "/runs.db";
        std::ofstream(m_dir + "/blowup.json") << kBlowUp;
    }
    void TearDown() override { fs::remove_all(m_dir); }
    Result cli(const std::string& args) { return runCli(args, m_dir + "/stderr.txt"); }

    std::string m_dir, m_db;
};

}  // namespace

TEST_F(CliForecastTest, RunPrintsShowAndExportReadBack) {
    const Result run = cli("run " + m_dir + "/blowup.json --db " + m_db + " --name b");
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_NE(run.err.find("forecast at step 10: at this rate the raw max logit of layer 0 "
                           "passes 30 in about 2 steps (step 12;"),
              std::string::npos)
        << run.err;
    const Result show = cli("show b --db " + m_db);
    EXPECT_NE(show.out.find("forecasts:\n  step 10: at this rate"), std::string::npos) << show.out;
    const json e = json::parse(cli("export b --format json --db " + m_db).out);
    ASSERT_GE(e["forecasts"].size(), 1u);
    EXPECT_EQ(e["forecasts"][0]["step"], 10);
    EXPECT_EQ(e["forecasts"][0]["kind"], "max_logit");
    EXPECT_EQ(e["forecasts"][0]["layer"], 0);
    EXPECT_EQ(e["forecasts"][0]["predicted_step"], 12);
}

TEST_F(CliForecastTest, ReportScoresTheForecastAgainstTheOnset) {
    std::ofstream(m_dir + "/s.json") << R"({"base": "blowup.json", "axes": {"optim.lr": [0.1]},
        "seeds": [1]})";
    ASSERT_EQ(cli("sweep " + m_dir + "/s.json --db " + m_db).status, 0);
    for (const char* replay : {"", " --replay"}) {  // stored, and made again of the probes
        const Result r = cli(std::string("forecast-report s --json --db ") + m_db + replay);
        ASSERT_EQ(r.status, 0) << r.err;
        const json j = json::parse(r.out);
        EXPECT_EQ(j["onsets"], 1);
        EXPECT_EQ(j["caught"], 1);
        EXPECT_EQ(j["by_kind"]["max_logit"]["lead_median"], 6.0);  // onset 16, forecast 10
        EXPECT_EQ(j["eta_error_median"], 4.0);                     // said 12
        EXPECT_EQ(j["false_alarms"], 0);
    }
    // Seed 1 is not among 2-3: nothing to score.
    EXPECT_EQ(json::parse(cli("forecast-report s --seeds 2-3 --json --db " + m_db).out)["runs"], 0);
    const Result bad = cli("forecast-report s --seeds 3-x --db " + m_db);
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--seeds"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("'3-x'"), std::string::npos) << bad.err;
}

// The forecast policy where a CLI user looks (issue 40, item 3): `run` prints each lowering as
// it is made, and `sweep --twins` + `forecast-report` judge it against its twin. The forecast
// at step 10 lowers the LR x0.3 over steps 11-20; the twin's onset (step 16) comes 10 steps
// later in the policy run (26).
TEST_F(CliForecastTest, TwinsJudgeTheForecastPolicy) {
    const std::string policy =
        " --set optim.skip_step=forecast --set optim.forecast_lr_steps=10 --db " + m_db;
    const Result run = cli("run " + m_dir + "/blowup.json --name p" + policy);
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_NE(run.err.find("step 11, skip-step policy: lr \u00d70.3"), std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find("step 21, skip-step policy: lr \u00d71"), std::string::npos) << run.err;

    std::ofstream(m_dir + "/s.json") << R"({"base": "blowup.json", "axes": {"optim.lr": [0.1]},
        "seeds": [1], "set": {"optim.skip_step": "forecast", "optim.forecast_lr_steps": 10}})";
    ASSERT_EQ(cli("sweep " + m_dir + "/s.json --twins --db " + m_db).status, 0);
    const json j = json::parse(cli("forecast-report s --json --db " + m_db).out);
    EXPECT_EQ(j["runs"], 1);  // the forecaster is scored on the twin only
    const json& f = j["policies"]["forecast"];
    EXPECT_EQ(f["pairs"], 1);
    EXPECT_EQ(f["twin_onsets"], 1);
    EXPECT_EQ(f["prevented"], 0);
    EXPECT_EQ(f["delayed"], 1);
    EXPECT_EQ(f["delay_median"], 10.0);
    EXPECT_EQ(f["actions"], 1);
    EXPECT_EQ(f["steps_affected"], 10);
    EXPECT_EQ(f["harm"], 0);  // the twin's onset is 5 steps after the lowering

    // A sweep that turns no policy on, or --twins on a stored sweep: exit 2, saying why.
    std::ofstream(m_dir + "/n.json") << R"({"base": "blowup.json", "axes": {"optim.lr": [0.1]}})";
    const Result none = cli("sweep " + m_dir + "/n.json --twins --db " + m_db);
    EXPECT_EQ(none.status, 2);
    EXPECT_NE(none.err.find("turns no skip-step policy on (optim.skip_step = off)"),
              std::string::npos)
        << none.err;
    EXPECT_EQ(cli("sweep --resume s --twins --db " + m_db).status, 2);
}
