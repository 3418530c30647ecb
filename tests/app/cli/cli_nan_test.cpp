// cli_nan_test.cpp — NaN is NaN everywhere (issue 36, item 3): a diverged value stored as
// NULL or as the text 'NaN' (how bindOptReal writes it, and what an imported file may hold)
// reads back as NaN in the store, prints "nan" in `value` and in the CSV export, and is JSON
// null beside the run's status in `value --json`. Before, SQLite's own conversion read the text
// as 0: a diverged loss looked like a perfect one.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "qklab/store/run_store.h"
#include "support/cli_run.h"
#include "support/hostile_db.h"

using namespace hostile;
using nlohmann::json;

namespace {

class CliNan : public ::testing::Test {
  protected:
    Result cli(const std::string& args) { return runCli(args, m_dir / "stderr.txt"); }
    // A 4-step run whose loss at step 2 and whose probe's raw max are the text 'NaN', then
    // imported into a fresh database: the reader sees what an imported file brings.
    std::string importedNanRun() {
        const std::string source = m_dir / "source.db";
        writeRun(source, "diverged", qklab::RunStatus::Diverged, 4, false);
        EXPECT_TRUE(rawExec(source,
                            "UPDATE step_metrics SET loss = 'NaN' WHERE step = 2;"
                            "UPDATE step_metrics SET loss = NULL WHERE step = 3;"
                            "UPDATE probe_stats SET logit_max_raw = 'NaN'"));
        const std::string db = m_dir / "runs.db";
        const Result r = cli("import " + source + " --db " + db);
        EXPECT_EQ(r.status, 0) << r.err;
        return db;
    }
    TempDir m_dir;
};

}  // namespace

TEST_F(CliNan, TheStoreReadsTextNaNAsNaN) {
    const std::string db = importedNanRun();
    qklab::RunStore store(db);
    const auto steps = store.stepMetrics(1);
    ASSERT_EQ(steps.size(), 4u);
    EXPECT_DOUBLE_EQ(steps[1].loss, 3.1);
    EXPECT_TRUE(std::isnan(steps[2].loss));  // the text 'NaN'
    EXPECT_TRUE(std::isnan(steps[3].loss));  // NULL
    const auto probes = store.probeStats(1, -1);
    ASSERT_EQ(probes.size(), 1u);
    EXPECT_TRUE(std::isnan(probes[0].logitMaxRaw));
}

TEST_F(CliNan, ValueSaysNanAndJsonSaysNullWithTheStatus) {
    const std::string db = importedNanRun();
    const Result text =
        cli("value diverged 'loss at=1' 'loss at=2' 'loss last' 'loss max' "
            "'logit_max_raw max' --db " +
            db);
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_EQ(text.out, "3.1000000000000001\nnan\nnan\n3.1000000000000001\nnan\n");
    const Result j = cli("value diverged 'loss at=2' 'loss max' --json --db " + db);
    ASSERT_EQ(j.status, 0) << j.err;
    const json v = json::parse(j.out);
    EXPECT_TRUE(v["loss at=2"].is_null());
    EXPECT_DOUBLE_EQ(v["loss max"].get<double>(), 3.1);  // the largest finite loss
    EXPECT_EQ(v["run_status"], "diverged");
}

TEST_F(CliNan, TheCsvExportSaysNan) {
    const std::string db = importedNanRun();
    const Result r = cli("export diverged --format csv --db " + db);
    ASSERT_EQ(r.status, 0) << r.err;
    std::istringstream lines(r.out);
    std::string line;
    std::vector<std::string> rows;
    while (std::getline(lines, line)) rows.push_back(line);
    ASSERT_GE(rows.size(), 5u);
    EXPECT_EQ(rows[2].rfind("1,3.1", 0), 0u) << rows[2];
    EXPECT_EQ(rows[3].rfind("2,nan,", 0), 0u) << rows[3];
    EXPECT_EQ(rows[4].rfind("3,nan,", 0), 0u) << rows[4];
}

// The bounds of `value`'s expressions (item 6): no unbounded echo, no trailing text, no empty
// run=, no hex.
TEST_F(CliNan, ValueRefusesWhatIsNotOneDecimalExpression) {
    const std::string db = m_dir / "runs.db";
    writeRun(db, "r", qklab::RunStatus::Finished, 4, false);
    const std::string huge(100000, '9');
    const Result longAt = cli("value r 'loss at=" + huge + "' --db " + db);
    EXPECT_EQ(longAt.status, 2);
    EXPECT_LT(longAt.err.size(), 300u) << longAt.err.size();
    for (const std::string e : {"{{loss last}} junk", "loss at=0x3", "loss run=", "loss at=inf",
                                "{{loss last}}{{loss max}}", "loss at=1 }}"}) {
        const Result r = cli("value r '" + e + "' --db " + db);
        EXPECT_EQ(r.status, 2) << e << ": " << r.out;
        EXPECT_LT(r.err.size(), 300u) << e;
    }
    EXPECT_EQ(cli("value r 'loss at=1e0' --db " + db).out, "3.1000000000000001\n");
}
