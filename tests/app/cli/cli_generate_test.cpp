// cli_generate_test.cpp — `qklab-cli generate` end to end on a tiny trained run: greedy text is
// deterministic and exactly --tokens bytes long (then a newline, even in a pipe), sampling
// repeats with its seed, and every bad input exits 2 naming the option and value without
// touching the database.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "qklab/store/run_store.h"
#include "support/cli_run.h"

namespace fs = std::filesystem;

namespace {

std::string fileBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// One database for the whole suite: run 1 "tiny" keeps its checkpoint, run 2 "gone" lost its
// checkpoint files (a user's cleanup).
class CliGenerateTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        char tmpl[] = "/tmp/qklab-gen-XXXXXX";
        s_dir = mkdtemp(tmpl);
        s_db = s_dir + "/runs.db";
        const std::string preset = s_dir + "/tiny.json";
        std::ofstream(preset) << R"({"model": {"d_model": 32, "n_layers": 1, "n_heads": 2,
            "seq_len": 32}, "schedule": {"steps": 12, "warmup_steps": 2},
            "data": {"batch_size": 4}, "probes": {"every": 4}, "eval": {"every": 0}})";
        for (const char* name : {"tiny", "gone"}) {
            const Result r = run("run " + preset + " --name " + name + " --db " + s_db);
            ASSERT_EQ(r.status, 0) << r.err;
        }
        qklab::RunStore store(s_db, qklab::StoreAccess::ReadOnly);
        for (const auto& c : store.checkpoints(2)) fs::remove(c.path);
    }
    static void TearDownTestSuite() { fs::remove_all(s_dir); }

    static Result run(const std::string& args) { return runCli(args, s_dir + "/stderr.txt"); }
    static Result generate(const std::string& args) {
        return run("generate " + args + " --db " + s_db);
    }

    static std::string s_dir, s_db;
};

std::string CliGenerateTest::s_dir, CliGenerateTest::s_db;

}  // namespace

TEST_F(CliGenerateTest, GreedyIsDeterministicAndExactlyTokensLong) {
    const Result a = generate("tiny --prompt ROMEO: --tokens 40");
    ASSERT_EQ(a.status, 0) << a.err;
    // Prompt, 40 bytes and a final newline, in this pipe as on a terminal (issue 37).
    ASSERT_EQ(a.out.size(), 6u + 40u + 1u);
    EXPECT_EQ(a.out.back(), '\n');
    EXPECT_EQ(a.out.rfind("ROMEO:", 0), 0u) << a.out;
    EXPECT_NE(a.err.find("checkpoint step 12"), std::string::npos) << a.err;
    EXPECT_NE(a.err.find("materialised cache"), std::string::npos) << a.err;  // auto on MHA
    EXPECT_NE(a.err.find("bytes/token"), std::string::npos) << a.err;
    EXPECT_NE(a.err.find("ms/token"), std::string::npos) << a.err;
    const Result b = generate("1 --prompt ROMEO: --tokens 40");
    ASSERT_EQ(b.status, 0) << b.err;
    EXPECT_EQ(a.out, b.out);
    // Without a prompt decoding starts from byte 0; the length is still exact.
    const Result bare = generate("tiny --tokens 7");
    ASSERT_EQ(bare.status, 0) << bare.err;
    EXPECT_EQ(bare.out.size(), 7u + 1u);
    EXPECT_EQ(bare.out.back(), '\n');
}

TEST_F(CliGenerateTest, SamplingRepeatsWithItsSeedAndDiffersWithAnother) {
    const std::string args = "tiny --prompt The --tokens 64 --temperature 1.0";
    const Result a = generate(args + " --seed 7");
    const Result b = generate(args + " --seed 7");
    const Result c = generate(args + " --seed 8");
    ASSERT_EQ(a.status, 0) << a.err;
    ASSERT_EQ(c.status, 0) << c.err;
    EXPECT_EQ(a.out.size(), 3u + 64u + 1u);
    EXPECT_EQ(a.out, b.out);
    EXPECT_NE(a.out, c.out);  // 64 bytes from a nearly untrained model: never all the same
}

TEST_F(CliGenerateTest, BadInputExitsTwoNamingItAndLeavesTheDatabaseAlone) {
    const std::string before = fileBytes(s_db);
    const std::pair<std::string, std::string> cases[] = {
        {"nosuchrun --tokens 5", "nosuchrun"},
        {"tiny --tokens 0", "--tokens = 0"},
        {"tiny --tokens 100001", "--tokens = 100001"},
        {"tiny --tokens 5 --temperature -1", "--temperature = -1"},
        {"tiny --tokens 5 --temperature nan", "--temperature"},
        {"tiny --tokens 5 --temperature inf", "--temperature"},
        {"tiny --tokens 5 --cache bogus", "--cache = bogus"},
        {"tiny --tokens 5 --cache absorbed", "--cache = absorbed"},
        {"tiny --tokens 5 --threads -2", "--threads = -2"},
        {"tiny --tokens 5 --temperature 1 --seed -1", "--seed = -1"},
        {"gone --tokens 5", "run 2 has no checkpoint: its 1 checkpoint file is gone"},
    };
    for (const auto& [args, message] : cases) {
        const Result r = generate(args);
        EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
        EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
        EXPECT_TRUE(r.out.empty()) << args << "\n" << r.out;  // not even the prompt
    }
    EXPECT_EQ(fileBytes(s_db), before);
    qklab::RunStore store(s_db, qklab::StoreAccess::ReadOnly);
    EXPECT_EQ(store.checkpoints(2).size(), 1u);  // the row of the lost file is still there
    // A database that is not there is not created.
    const Result missing = run("generate 1 --tokens 5 --db " + s_dir + "/missing.db");
    EXPECT_EQ(missing.status, 2) << missing.err;
    EXPECT_FALSE(fs::exists(s_dir + "/missing.db"));
}
