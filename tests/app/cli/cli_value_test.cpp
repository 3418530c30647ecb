// cli_value_test.cpp — `qklab-cli value`: the lessons' placeholder syntax read from a stored
// run, each number against the run's own export (the same rows, reduced by hand here), "none"
// for a line never crossed, and exit 2 naming a bad expression.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli_run.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

class CliValueTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        char tmpl[] = "/tmp/qklab-cli-value-XXXXXX";
        s_dir = mkdtemp(tmpl);
        const std::string preset = s_dir + "/tiny.json";
        std::ofstream(preset) << R"({"model": {"d_model": 32, "n_layers": 2, "n_heads": 2,
            "seq_len": 32}, "schedule": {"steps": 12, "warmup_steps": 2}, "optim": {"lr": 0.01},
            "data": {"batch_size": 4}, "probes": {"every": 4}, "eval": {"every": 0, "batches": 1}})";
        const Result run = cli("run " + preset + " --db " + db() + " --name tiny");
        ASSERT_EQ(run.status, 0) << run.err;
        const Result exported = cli("export tiny --format json --db " + db());
        ASSERT_EQ(exported.status, 0) << exported.err;
        s_export = json::parse(exported.out);
    }
    static void TearDownTestSuite() { fs::remove_all(s_dir); }
    static std::string db() { return s_dir + "/runs.db"; }
    static Result cli(const std::string& args) { return runCli(args, s_dir + "/stderr.txt"); }

    // The layer-level rows of one probe step, as the export lists them.
    static std::vector<json> layerRows(int64_t step) {
        std::vector<json> out;
        for (const json& p : s_export["probes"])
            if (p["head"] == -1 && p["step"] == step) out.push_back(p);
        return out;
    }

    static std::string s_dir;
    static json s_export;
};
std::string CliValueTest::s_dir;
json CliValueTest::s_export;

std::vector<double> numbersIn(const std::string& out) {
    std::vector<double> v;
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line))
        v.push_back(line == "none" ? -1 : std::strtod(line.c_str(), nullptr));
    return v;
}

}  // namespace

TEST_F(CliValueTest, EachExpressionPrintsTheExportsNumber) {
    double peak = 0, layer0At8 = 0, entropyAt4 = 1e9;
    for (const json& p : s_export["probes"]) {
        if (p["head"] != -1) continue;
        peak = std::max(peak, p["logit_max_raw"].get<double>());
        if (p["step"] == 8 && p["layer"] == 0) layer0At8 = p["logit_max_raw"];
    }
    for (const json& p : layerRows(4))
        entropyAt4 = std::min(entropyAt4, p["entropy"].get<double>());
    const double lossAt3 = s_export["steps"][3]["loss"];
    const double lossLast = s_export["steps"].back()["loss"];
    const Result r =
        cli("value tiny 'logit_max_raw max' 'logit_max_raw at=8 layer=0' "
            "'{{entropy at=4}}' 'loss at=3' 'loss last' 'logit_max_raw first_above=0' "
            "'logit_max_raw first_above=1e9' --db " +
            db());
    ASSERT_EQ(r.status, 0) << r.err;
    const std::vector<double> v = numbersIn(r.out);
    ASSERT_EQ(v.size(), 7u) << r.out;
    EXPECT_DOUBLE_EQ(v[0], peak);
    EXPECT_DOUBLE_EQ(v[1], layer0At8);
    EXPECT_DOUBLE_EQ(v[2], entropyAt4);  // entropy: the lowest layer
    EXPECT_DOUBLE_EQ(v[3], lossAt3);
    EXPECT_DOUBLE_EQ(v[4], lossLast);
    EXPECT_EQ(v[5], 0);   // every logit max is above 0 at step 0: the step
    EXPECT_EQ(v[6], -1);  // never crossed: "none"
}

TEST_F(CliValueTest, JsonGivesNullForNone) {
    const Result r =
        cli("value tiny 'loss at=3' 'logit_max_raw first_above=1e9' --json --db " + db());
    ASSERT_EQ(r.status, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_DOUBLE_EQ(j["loss at=3"].get<double>(), s_export["steps"][3]["loss"].get<double>());
    EXPECT_TRUE(j["logit_max_raw first_above=1e9"].is_null());
}

TEST_F(CliValueTest, BadExpressionsExitTwoNamingThem) {
    const Result metric = cli("value tiny 'logit_maks max' --db " + db());
    EXPECT_EQ(metric.status, 2);
    EXPECT_NE(metric.err.find("logit_maks"), std::string::npos) << metric.err;
    const Result word = cli("value tiny 'loss highest' --db " + db());
    EXPECT_EQ(word.status, 2);
    EXPECT_NE(word.err.find("highest"), std::string::npos) << word.err;
    const Result two = cli("value tiny '{{loss last}} {{loss max}}' --db " + db());
    EXPECT_EQ(two.status, 2);
    const Result run = cli("value nosuch 'loss last' --db " + db());
    EXPECT_NE(run.status, 0);
    EXPECT_NE(run.err.find("nosuch"), std::string::npos) << run.err;
}
