// slurm_script_test.cpp — the Slurm job script of `qklab-cli sweep --slurm` (issue 22, items 4,
// 14 and 16): hostile names, folders, partitions and time limits either are refused or end up
// as exactly the intended words, for bash and for sbatch's own #SBATCH tokenizer; a refused
// value writes nothing, so the corrected retry works; a grid of 2^64 points is refused instead
// of counting as 0.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "qklab/util/error.h"
#include "support/cli_run.h"
#include "support/test_files.h"
#include "support/test_paths.h"
#include "sweep_slurm.h"

namespace fs = std::filesystem;
using qklab::cli::SweepArgs;

namespace {

std::string sq(const std::string& s) {
    return qklab::testsupport::shellWord(s);
}

using qklab::testsupport::readAll;

// The arguments sbatch (Slurm 22.05, src/sbatch/opt.c _get_argument) reads from one #SBATCH
// line: blanks separate them, a backslash escapes the next character (inside quotes too),
// '...' and "..." quote, an unquoted '#' ends the line. *unmatched: sbatch would stop with
// "Unmatched quote".
std::vector<std::string> sbatchArguments(const std::string& line, bool* unmatched) {
    std::vector<std::string> args;
    size_t i = std::string("#SBATCH").size();
    for (;;) {
        while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
        if (i >= line.size()) break;
        std::string arg;
        bool quoted = false, escape = false;
        char q = 0;
        while (i < line.size() && (quoted || !std::isspace(static_cast<unsigned char>(line[i])))) {
            const char c = line[i];
            if (escape) {
                escape = false;
            } else if (c == '\\') {
                escape = true;
                ++i;
                continue;
            } else if (quoted) {
                if (c == q) {
                    quoted = false;
                    ++i;
                    continue;
                }
            } else if (c == '"' || c == '\'') {
                quoted = true;
                q = c;
                ++i;
                continue;
            } else if (c == '#') {
                break;
            }
            arg += c;
            ++i;
        }
        if (quoted) *unmatched = true;
        if (arg.empty()) break;  // Slurm's NULL: the rest of the line is not read
        args.push_back(arg);
    }
    return args;
}

class SlurmScriptTest : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/qklab-slurm-XXXXXX";
        m_dir = mkdtemp(tmpl);
        // The fake qklab-cli sits in a folder whose name needs quoting itself; it writes its
        // argv, NUL-separated, to $QKLAB_FAKE_ARGV.
        const std::string bin = m_dir + "/bin 'q' $(x)";
        fs::create_directories(bin);
        m_fake = bin + "/qklab-cli";
        std::ofstream(m_fake) << "#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$QKLAB_FAKE_ARGV\"\n";
        fs::permissions(m_fake, fs::perms::owner_all);
        fs::create_directories(m_dir + "/run");
    }
    void TearDown() override { fs::remove_all(m_dir); }

    // Writes the script, checks its syntax, runs array task 3 in m_dir/run with the fake CLI,
    // and checks: no marker file appeared, the argv is exactly the intended one, and every
    // #SBATCH line is one argument for Slurm (the --output one the intended pattern).
    void checkScript(const std::string& script, const std::string& outDir) {
        SCOPED_TRACE(script);
        const std::string file = m_dir + "/sweep.sbatch";
        std::ofstream(file, std::ios::trunc) << script;
        ASSERT_EQ(std::system(("bash -n " + sq(file) + " 2>/dev/null").c_str()), 0);
        const std::string argvFile = m_dir + "/argv";
        fs::remove(argvFile);
        fs::remove_all(m_dir + "/run");  // a marker of an earlier case must not count here
        fs::create_directories(m_dir + "/run");
        const std::string cmd = "cd " + sq(m_dir + "/run") +
                                " && env -i PATH=/usr/bin:/bin QKLAB_FAKE_ARGV=" + sq(argvFile) +
                                " SLURM_ARRAY_TASK_ID=3 bash " + sq(file) + " >/dev/null 2>&1";
        EXPECT_EQ(std::system(cmd.c_str()), 0);
        for (const auto& e : fs::recursive_directory_iterator(m_dir))
            EXPECT_EQ(e.path().filename().string().find("PWNED"), std::string::npos)
                << "an injected command ran: " << e.path();
        std::vector<std::string> argv;
        std::stringstream in(readAll(argvFile));
        for (std::string a; std::getline(in, a, '\0');) argv.push_back(a);
        EXPECT_EQ(argv, (std::vector<std::string>{
                            "sweep-point", "--definition", outDir + "/sweep.json", "--point", "3",
                            "--threads", "1", "--db", outDir + "/shards/point-3.db"}));
        std::string pattern;
        for (char c : outDir) pattern += c == '%' ? std::string("%%") : std::string(1, c);
        std::stringstream lines(script);
        int sbatchLines = 0;
        for (std::string line; std::getline(lines, line);) {
            if (line.rfind("#SBATCH", 0) != 0) continue;
            ++sbatchLines;
            bool unmatched = false;
            const auto args = sbatchArguments(line, &unmatched);
            EXPECT_FALSE(unmatched) << line;
            ASSERT_EQ(args.size(), 1u) << line;
            if (args[0].rfind("--output=", 0) == 0) {
                EXPECT_EQ(args[0], "--output=" + pattern + "/logs/point-%a.%A.out");
            }
        }
        EXPECT_GE(sbatchLines, 5);
    }

    std::string m_dir, m_fake;
};

}  // namespace

TEST_F(SlurmScriptTest, HostileValuesAreRefusedOrQuotedAsAWhole) {
    const std::string inject = "touch PWNED";
    const std::string longName = std::string(41, 'A') + "\n" + inject + " #";
    struct Case {
        std::string name, outDir, partition, time;
        bool mustRefuse;
    };
    const std::string out = m_dir + "/out";
    const std::vector<Case> cases = {
        {"lr", out, "", "", false},
        {longName, out, "", "", true},  // the reported injection: a newline after 40 bytes
        {"lr\n" + inject, out, "", "", true},
        {"lr\r" + inject, out, "", "", true},
        {"x'; " + inject + "; '", out, "", "", false},
        {"$(" + inject + ")", out, "", "", false},
        {"`" + inject + "`", out, "", "", false},
        {"a\"b\\c #d %e", out, "gpu", "1-00:00:00", false},
        {"lr", m_dir + "/it's \"quoted\"", "", "", true},  // no double quote for Slurm
        {"lr", m_dir + "/$(" + inject + ")", "", "", false},
        {"lr", m_dir + "/`" + inject + "`", "", "", false},
        {"lr", m_dir + "/it's; " + inject + " #x", "", "", false},
        {"lr", m_dir + "/100%done %a", "", "", false},
        {"lr", m_dir + "/new\nline", "", "", true},
        {"lr", m_dir + "/back\\slash", "", "", true},
        {"lr", out, "gpu\n#SBATCH --wrap=" + inject, "", true},
        {"lr", out, "gpu; " + inject, "", true},
        {"lr", out, "gpu\" --wrap=\"" + inject, "", true},
        {"lr", out, "$(" + inject + ")", "", true},
        {"lr", out, "gpu,cpu", "30", false},
        {"lr", out, "", "1:00\n" + inject, true},
        {"lr", out, "", "$(" + inject + ")", true},
        {"lr", out, "", "00:10:00 --wrap=x", true},
        {"lr", out, "", "UNLIMITED", false},
    };
    int accepted = 0;
    for (const Case& c : cases) {
        SCOPED_TRACE("name " + c.name + " | dir " + c.outDir + " | partition " + c.partition +
                     " | time " + c.time);
        SweepArgs o;
        o.partition = c.partition;
        o.time = c.time;
        o.maxParallel = 2;
        std::string script;
        try {
            script = qklab::cli::slurmScriptText(o, c.name, c.outDir, m_fake, 4, 512);
        } catch (const qklab::Error& e) {
            EXPECT_EQ(e.code(), qklab::ErrorCode::InvalidRequest) << e.what();
            EXPECT_TRUE(c.mustRefuse) << "refused: " << e.what();
            continue;
        }
        EXPECT_FALSE(c.mustRefuse) << "accepted";
        ++accepted;
        checkScript(script, c.outDir);
    }
    EXPECT_EQ(accepted, 11);  // every case above not marked mustRefuse
}

// --points-per-task 3 over 7 points: 3 array tasks, task 1 runs points 3, 4 and 5 and task 2
// point 6 alone, each into its own shard; a task whose point fails runs the rest and fails.
// SLURM_ARRAY_TASK_ID enters shell arithmetic, so anything but digits is refused before it.
TEST_F(SlurmScriptTest, ATaskOfSeveralPointsRunsItsShareEachIntoItsShard) {
    const std::string out = m_dir + "/out $(touch PWNED)";
    // A fake that appends each call's --point, and fails for point 4.
    std::ofstream(m_fake, std::ios::trunc)
        << "#!/bin/bash\nprintf '%s %s\\n' \"$5\" \"$9\" >> \"$QKLAB_FAKE_ARGV\"\n"
        << "[ \"$5\" != 4 ]\n";
    SweepArgs o;
    o.pointsPerTask = 3;
    const std::string script = qklab::cli::slurmScriptText(o, "lr", out, m_fake, 7, 512);
    EXPECT_NE(script.find("#SBATCH --array=0-2\n"), std::string::npos) << script;
    EXPECT_NE(script.find("/logs/task-%a.%A.out"), std::string::npos) << script;
    const std::string file = m_dir + "/sweep.sbatch";
    std::ofstream(file, std::ios::trunc) << script;
    auto runTask = [&](const std::string& task) {
        const std::string calls = m_dir + "/calls";
        fs::remove(calls);
        const std::string cmd = "cd " + sq(m_dir + "/run") +
                                " && env -i PATH=/usr/bin:/bin QKLAB_FAKE_ARGV=" + sq(calls) +
                                " SLURM_ARRAY_TASK_ID=" + sq(task) + " bash " + sq(file) +
                                " >/dev/null 2>&1";
        const int status = std::system(cmd.c_str());
        return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, readAll(calls));
    };
    const std::string shard = out + "/shards/point-";
    EXPECT_EQ(runTask("1"),
              std::make_pair(1, "3 " + shard + "3.db\n4 " + shard + "4.db\n5 " + shard + "5.db\n"));
    EXPECT_EQ(runTask("2"), std::make_pair(0, "6 " + shard + "6.db\n"));
    // Base 10 even with a leading zero (bash reads 08 as a malformed octal number).
    EXPECT_EQ(runTask("02"), runTask("2"));
    // Issue 36, item 4: a task past the array, or an id that wraps in bash's 64-bit arithmetic
    // (3074457345618258603 * 3 = 2^63 + 1 -> points -2^63+1..., once 0..3 again), runs nothing.
    for (const std::string hostile :
         {"a[$(touch PWNED)]", "1+1", "", "-1", "08", "3", "3074457345618258603",
          "6148914691236517206", "99999999999999999999", "1000000000"})
        EXPECT_EQ(runTask(hostile), std::make_pair(2, std::string())) << hostile;
    for (const auto& e : fs::recursive_directory_iterator(m_dir))
        EXPECT_EQ(e.path().filename().string().find("PWNED"), std::string::npos)
            << "an injected command ran: " << e.path();
    o.pointsPerTask = 0;
    EXPECT_THROW(qklab::cli::slurmScriptText(o, "lr", out, m_fake, 7, 512), qklab::Error);
}

// A task runs its points in a row, so --time (per point) is multiplied by the points per
// task, whatever format it came in; with one point per task the script keeps it as written.
TEST(SlurmScript, ATaskOfSeveralPointsGetsTheirTimeLimitsSummed) {
    const std::vector<std::tuple<std::string, int, std::string>> cases = {
        {"30", 3, "0-01:30:00"},          // minutes
        {"10:30", 4, "0-00:42:00"},       // MM:SS
        {"1:00:00", 3, "0-03:00:00"},     // HH:MM:SS
        {"1-12", 2, "3-00:00:00"},        // D-HH
        {"2-0:30", 2, "4-01:00:00"},      // D-HH:MM
        {"0-23:59:59", 2, "1-23:59:58"},  // D-HH:MM:SS
        {"UNLIMITED", 3, "UNLIMITED"},    // no limit stays none
        {"00:30:00", 1, "00:30:00"},      // one point per task: as written
        {"10", 50, "0-01:10:00"},         // up to 50 per task, but 7 points in all
    };
    for (const auto& [time, perTask, expected] : cases) {
        SweepArgs o;
        o.time = time;
        o.pointsPerTask = perTask;
        const std::string script =
            qklab::cli::slurmScriptText(o, "lr", "/tmp/out", "qklab-cli", 7, 512);
        EXPECT_NE(script.find("#SBATCH --time=\"" + expected + "\"\n"), std::string::npos)
            << time << " x " << perTask << ":\n"
            << script;
    }
}

// ---- through qklab-cli ------------------------------------------------------------------------

namespace {

class SlurmCliTest : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/qklab-slurmcli-XXXXXX";
        m_dir = mkdtemp(tmpl);
        m_sweep = std::string(qklab::testpaths::sourceDir()) + "/experiments/sweeps/tiny.json";
    }
    void TearDown() override { fs::remove_all(m_dir); }
    Result cli(const std::string& args) {
        return runCli("sweep " + args + " </dev/null", m_dir + "/stderr.txt");
    }
    std::string m_dir, m_sweep;
};

}  // namespace

// Issue 22, item 4: the reproduction. A name whose newline came after the 40 bytes the job name
// keeps went whole into a comment line; `touch PWNED` then ran with the task.
TEST_F(SlurmCliTest, ANameWithANewlineIsRefusedAndNothingIsWritten) {
    const std::string out = m_dir + "/out";
    const std::string name = std::string(41, 'A') + "\ntouch PWNED #";
    const Result r = cli(sq(m_sweep) + " --slurm " + sq(out) + " --name " + sq(name));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("control characters"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--name"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    if (fs::exists(out + "/sweep.sbatch")) {  // before the fix: what the task would do
        std::system(("cd " + sq(m_dir) + " && SLURM_ARRAY_TASK_ID=0 timeout 120 bash " +
                     sq(out + "/sweep.sbatch") + " >/dev/null 2>&1")
                        .c_str());
        EXPECT_FALSE(fs::exists(m_dir + "/PWNED")) << "the injected command ran";
    }
    // The same name from the file's "name" field.
    const std::string file = m_dir + "/named.json";
    std::ofstream(file) << R"({"name": "lr\ntouch PWNED", "axes": {"optim.lr": [0.01]},
        "base": {"schedule": {"steps": 5}}})";
    const Result f = cli(sq(file) + " --slurm " + sq(out));
    EXPECT_EQ(f.status, 2) << f.err;
    EXPECT_NE(f.err.find("name"), std::string::npos) << f.err;
    EXPECT_FALSE(fs::exists(out));
    // And a local sweep stores nothing under such a name.
    const Result local = cli(sq(file) + " --db " + sq(m_dir + "/runs.db"));
    EXPECT_EQ(local.status, 2) << local.err;
    EXPECT_FALSE(fs::exists(m_dir + "/runs.db"));
}

// Issue 22, item 14: a refused value left a half-written folder, and the corrected retry then
// failed with "sweep.json exists".
TEST_F(SlurmCliTest, ARefusedValueWritesNothingAndTheCorrectedRetryWorks) {
    const std::string out = m_dir + "/job";
    for (const std::string& bad : {std::string("--partition 'gp\"u'"),
                                   std::string("--time '1:00\nx'"), std::string("--time 'soon'")}) {
        const Result r = cli(sq(m_sweep) + " --slurm " + sq(out) + " " + bad);
        EXPECT_EQ(r.status, 2) << bad << ": " << r.err;
        EXPECT_FALSE(fs::exists(out)) << bad;
        for (const auto& e : fs::directory_iterator(m_dir))  // no temporary folder is left
            EXPECT_EQ(e.path().filename().string().find("job"), std::string::npos) << e.path();
    }
    const Result ok = cli(sq(m_sweep) + " --slurm " + sq(out) + " --partition gpu --time 00:10:00");
    ASSERT_EQ(ok.status, 0) << ok.err;
    for (const char* f : {"sweep.sbatch", "sweep.json", "configs/point-3.json"})
        EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
    EXPECT_TRUE(fs::is_directory(out + "/shards"));
    EXPECT_TRUE(fs::is_directory(out + "/logs"));
    // A folder that holds anything is not written into (a second sweep into the same folder).
    const Result again = cli(sq(m_sweep) + " --slurm " + sq(out));
    EXPECT_EQ(again.status, 2) << again.err;
    EXPECT_NE(again.err.find("exists"), std::string::npos) << again.err;
    // An existing empty folder is fine.
    fs::create_directories(m_dir + "/empty");
    EXPECT_EQ(cli(sq(m_sweep) + " --slurm " + sq(m_dir + "/empty")).status, 0);
    EXPECT_TRUE(fs::exists(m_dir + "/empty/sweep.sbatch"));
}

// Issue 22, item 16: 8192^4 x 4096 = 2^64 points counted as 0 and passed the 10,000-point limit;
// --slurm wrote --array=0-18446744073709551615.
TEST_F(SlurmCliTest, AGridOfTwoToThe64PointsIsRefused) {
    const std::string file = m_dir + "/huge.json";
    std::ofstream(file) << R"({"axes": {
        "optim.lr": {"log": [1e-4, 1e-1], "points": 8192},
        "optim.eps": {"log": [1e-9, 1e-6], "points": 8192},
        "schedule.min_lr_ratio": {"linear": [0.01, 0.5], "points": 8192},
        "model.rope_base": {"log": [1000, 100000], "points": 8192},
        "model.mlp_ratio": {"linear": [1, 4], "points": 4096}}})";
    const std::string out = m_dir + "/out";
    const Result r = cli(sq(file) + " --slurm " + sq(out));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("at most 10000"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("more than 2^64"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    const Result local = cli(sq(file) + " --db " + sq(m_dir + "/runs.db"));
    EXPECT_EQ(local.status, 2) << local.err;
    EXPECT_FALSE(fs::exists(m_dir + "/runs.db"));
}

// Issue 36, item 4: with one point per task the task is the point; a task id past the array or
// beyond 9 digits runs nothing, and sweep-point itself creates no shard for a point that is not
// one of the definition's.
TEST_F(SlurmCliTest, ATaskOutsideTheArrayCreatesNoShard) {
    const std::string out = m_dir + "/job";
    ASSERT_EQ(cli(sq(m_sweep) + " --slurm " + sq(out)).status, 0);
    const std::string script = out + "/sweep.sbatch";
    for (const std::string task : {"4", "18446744073709551620", "004", ""}) {
        const std::string cmd = "cd " + sq(m_dir) + " && env -i PATH=/usr/bin:/bin " +
                                "SLURM_ARRAY_TASK_ID=" + sq(task) + " bash " + sq(script) +
                                " >/dev/null 2>&1";
        const int status = std::system(cmd.c_str());
        EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2) << task;
    }
    EXPECT_TRUE(fs::is_empty(out + "/shards"));
    for (const std::string point : {"4", "-4", "-9223372036854775807"}) {
        const Result r =
            runCli("sweep-point --definition " + sq(out + "/sweep.json") + " --point " + point +
                       " --db " + sq(out + "/shards/point-" + point + ".db"),
                   m_dir + "/stderr.txt");
        EXPECT_EQ(r.status, 2) << point << ": " << r.err;
        EXPECT_NE(r.err.find("has points 0..3"), std::string::npos) << r.err;
    }
    EXPECT_TRUE(fs::is_empty(out + "/shards"));
}
