// cli_table_test.cpp — the command table (app/cli/commands.cpp) drives qklab-cli: `--help`
// lists exactly its rows, in order, each with the row's help; every row's command answers
// `--help` with exit 0 and its help, and a parser error with exit 2. The test walks the table,
// so a new command is covered without touching it. Also the ETA of `run`'s progress line.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "progress_bar.h"
#include "support/cli_run.h"
#include "support/test_files.h"

namespace {

using Listing = std::vector<std::pair<std::string, std::string>>;  // (name, help)

// The commands a --help text lists under "Subcommands:", in order.
Listing listedCommands(const std::string& help) {
    Listing listed;
    std::istringstream in(help);
    std::string line;
    while (std::getline(in, line) && line != "Subcommands:") continue;
    while (std::getline(in, line) && !line.empty()) {
        std::istringstream words(line);
        std::string name, text;
        words >> name >> std::ws;
        std::getline(words, text);
        listed.emplace_back(name, text);
    }
    return listed;
}

class CliTableTest : public ::testing::Test {
  protected:
    void SetUp() override { m_dir = qklab::testsupport::scratchDir("cli-table").string(); }
    void TearDown() override { std::filesystem::remove_all(m_dir); }
    Result cli(const std::string& args) { return runCli(args, m_dir + "/stderr.txt"); }

    std::string m_dir;
};

TEST_F(CliTableTest, HelpListsTheTableInOrder) {
    // The rows on a parser as main builds it: a command that puts itself in no group
    // (sweep-point, started by `sweep` only) is left out of the list.
    CLI::App app;
    qklab::cli::Database db(app);
    Listing expected;
    for (const qklab::cli::Command& c : qklab::cli::commandTable())
        if (!qklab::cli::addCommand(app, c, db)->get_group().empty())
            expected.emplace_back(c.name, c.help);
    ASSERT_GE(expected.size(), 16u);
    const Result r = cli("--help");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(listedCommands(r.out), expected) << r.out;
}

TEST_F(CliTableTest, EveryCommandAnswersHelpAndRefusesAnUnknownOption) {
    for (const qklab::cli::Command& c : qklab::cli::commandTable()) {
        SCOPED_TRACE(c.name);
        const Result help = cli(c.name + " --help");
        EXPECT_EQ(help.status, 0) << help.err;
        EXPECT_NE(help.out.find(c.help), std::string::npos) << help.out;
        EXPECT_NE(help.out.find(" " + c.name + " [OPTIONS]"), std::string::npos) << help.out;
        const Result bad = cli(c.name + " --no-such-option");
        EXPECT_EQ(bad.status, 2) << bad.err;
        EXPECT_EQ(bad.out, "");
    }
}

}  // namespace

// A run of 2^63 - 1 steps on a slow machine has an ETA beyond the largest long: converting it
// was undefined behaviour (scripts/sanitize.sh's UBSan stopped `qklab-cli run`), and the
// plain build printed "ETA -153722867280912930:-8".
TEST(ProgressLine, AnEtaBeyondAnyUsefulDurationIsShownAsUnknown) {
    using qklab::cli::formatDuration;
    EXPECT_EQ(formatDuration(59.4), "0:59");
    EXPECT_EQ(formatDuration(3600), "1:00:00");
    EXPECT_EQ(formatDuration(1e8), "27777:46:40");
    EXPECT_EQ(formatDuration(1.86963e19), "--:--");  // the ETA UBSan found
    EXPECT_EQ(formatDuration(1e300), "--:--");
    EXPECT_EQ(formatDuration(-1), "--:--");
}
