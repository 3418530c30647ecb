// cli_hostile_test.cpp — `qklab-cli` on files from others (issue 22): merge and import check
// every source before creating anything, refuse a bad one with exit 2 naming the file, run and
// field, copy checkpoints so that resume never deletes someone else's file, say when a source
// run is still being written and update it later; readers survive unknown statuses, deep JSON
// and names full of escape sequences; checkpoints are found from any directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "support/cli_run.h"
#include "support/hostile_db.h"

using namespace hostile;
using nlohmann::json;

namespace {

class CliHostile : public ::testing::Test {
  protected:
    void SetUp() override {
        m_preset = m_dir / "tiny.json";
        std::ofstream(m_preset) << R"({"model": {"d_model": 32, "n_layers": 1, "n_heads": 2,
            "seq_len": 32}, "schedule": {"steps": 8, "warmup_steps": 2},
            "data": {"batch_size": 4}, "probes": {"every": 4}, "eval": {"every": 0}})";
    }
    Result cli(const std::string& args) { return runCli(args, m_dir / "stderr.txt"); }
    // A trained run (8 steps, its final checkpoint) made resumable for 4 more steps.
    void trainStoppedRun(const std::string& db, const std::string& name) {
        const Result r = cli("run " + m_preset + " --db " + db + " --name " + name);
        ASSERT_EQ(r.status, 0) << r.err;
        ASSERT_TRUE(rawExec(db,
                            "UPDATE runs SET status = 'stopped', config_json = "
                            "json_set(config_json, '$.schedule.steps', 12)"));
    }

    TempDir m_dir;
    std::string m_preset;
};

std::string noEscape(const std::string& s) {
    return s.find('\x1b') == std::string::npos ? "" : "raw ESC in: " + s;
}

}  // namespace

// Item 15: `merge nonexistent.db --into nx.db` exited 2 but created nx.db; so did import.
TEST_F(CliHostile, NothingIsCreatedUnlessEverySourceIsGood) {
    const std::string nx = m_dir / "nx.db", missing = m_dir / "nonexistent.db";
    EXPECT_EQ(cli("merge " + missing + " --into " + nx).status, 2);
    EXPECT_FALSE(fs::exists(nx));
    EXPECT_EQ(cli("import " + missing + " --db " + nx).status, 2);
    EXPECT_FALSE(fs::exists(nx));
    const std::string good = m_dir / "good.db", bad = m_dir / "bad.db";
    writeRun(good, "good", qklab::RunStatus::Finished, 2, false);
    writeRun(bad, "bad", qklab::RunStatus::Finished, 2, false);
    ASSERT_TRUE(rawExec(bad, "UPDATE runs SET status = 'exploded'"));
    const Result r = cli("merge " + good + " " + bad + " --into " + nx);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("run 1"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("status"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(nx));
}

// Issue 36, item 1: a crafted file reusing my run's UUID with more steps was "1 updated" and
// took my run over. Now it is refused (exit 2) naming both runs and why, and nothing changes;
// merged into a new target, the refusal leaves no target behind (issue 36, item 10).
TEST_F(CliHostile, AFileReusingMyRunsUuidIsRefusedAndAFailedMergeLeavesNoTarget) {
    const std::string mine = m_dir / "mine.db", evil = m_dir / "evil.db", nx = m_dir / "nx.db";
    writeRun(mine, "mine", qklab::RunStatus::Stopped, 3);
    writeRun(evil, "theirs", qklab::RunStatus::Finished, 6);
    ASSERT_TRUE(rawExec(evil, "UPDATE runs SET uuid = '" +
                                  rawText(mine, "SELECT uuid FROM runs WHERE id = 1") +
                                  "'; UPDATE step_metrics SET loss = 9"));
    const std::string snapshot =
        "SELECT (SELECT group_concat(name || steps_done || status) FROM runs) || '|' || "
        "(SELECT group_concat(step || ':' || loss) FROM step_metrics) || '|' || "
        "(SELECT group_concat(step || path) FROM checkpoints)";
    const std::string before = rawText(mine, snapshot);
    const Result r = cli("import " + evil + " --db " + mine);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("run 'theirs' (1 in " + evil + ") has the UUID of run 'mine'"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("is not that run continued"), std::string::npos) << r.err;
    EXPECT_EQ(rawText(mine, snapshot), before);
    EXPECT_EQ(fileText(mine + ".checkpoints/run-1/step-3.pt"), "weights of mine");

    const Result m = cli("merge " + mine + " " + evil + " --into " + nx);
    EXPECT_EQ(m.status, 2) << m.err;
    EXPECT_NE(m.err.find("is not that run continued"), std::string::npos) << m.err;
    EXPECT_FALSE(fs::exists(nx));
    EXPECT_FALSE(fs::exists(nx + ".checkpoints"));
    EXPECT_FALSE(fs::exists(nx + "-wal"));
}

// Item 20: a truncated or random-page shard exited 1 while other foreign files exit 2, and an
// unparsable stored config gave 1 from show but 2 from generate.
TEST_F(CliHostile, DamagedFilesAndUnreadableConfigsAreBadInput) {
    const std::string truncated = m_dir / "truncated.db", paged = m_dir / "paged.db";
    for (const std::string& db : {truncated, paged}) {
        for (int i = 0; i < 40; ++i)
            writeRun(db, "r" + std::to_string(i), qklab::RunStatus::Finished, 30, false);
        ASSERT_TRUE(rawExec(db, "PRAGMA wal_checkpoint(TRUNCATE)"));
    }
    fs::resize_file(truncated, fs::file_size(truncated) / 2);
    {
        std::fstream f(paged, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(4096 * 3);
        for (int i = 0; i < 4096; ++i) f.put(static_cast<char>(i * 131 + 7));
    }
    for (const std::string& db : {truncated, paged}) {
        const std::string into = db + ".merged.db";
        const Result m = cli("merge " + db + " --into " + into);
        EXPECT_EQ(m.status, 2) << m.err;
        EXPECT_LT(m.err.size(), 600u) << m.err;  // a sentence, not an SQL dump
        EXPECT_FALSE(fs::exists(into));
    }
    const std::string db = m_dir / "runs.db";
    writeRun(db, "r", qklab::RunStatus::Finished);
    ASSERT_TRUE(rawExec(db, "UPDATE runs SET config_json = '{not json'"));
    for (const char* cmd : {"show 1", "show 1 --json", "export 1 --format json", "generate 1"}) {
        const Result r = cli(std::string(cmd) + " --db " + db);
        EXPECT_EQ(r.status, 2) << cmd << ": " << r.err;
    }
}

// Item 7: a config nested 100000 deep made show --json and export --format json segfault.
TEST_F(CliHostile, DeeplyNestedStoredJsonIsAnErrorNotACrash) {
    const std::string db = m_dir / "runs.db";
    writeRun(db, "deep", qklab::RunStatus::Finished);
    ASSERT_TRUE(rawExec(db, "UPDATE runs SET config_json = '" + std::string(100000, '[') +
                                std::string(100000, ']') + "'"));
    for (const char* cmd : {"show 1", "show 1 --json", "export 1 --format json"}) {
        const Result r = cli(std::string(cmd) + " --db " + db);
        EXPECT_EQ(r.status, 2) << cmd << ": " << r.err.substr(0, 300);
        EXPECT_NE(r.err.find("config_json"), std::string::npos) << r.err.substr(0, 300);
    }
    EXPECT_EQ(cli("list --db " + db).status, 0);
    EXPECT_EQ(cli("export 1 --format csv --db " + db).status, 0);
}

// Item 8: a database holding a status this build has no name for stays readable.
TEST_F(CliHostile, AnUnknownStatusIsShownAsUnknownByEveryReader) {
    const std::string db = m_dir / "runs.db";
    writeRun(db, "a", qklab::RunStatus::Finished);
    writeRun(db, "b", qklab::RunStatus::Finished);
    ASSERT_TRUE(rawExec(db, "UPDATE runs SET status = 'exploded' WHERE id = 1"));
    const Result list = cli("list --db " + db);
    EXPECT_EQ(list.status, 0) << list.err;
    EXPECT_NE(list.out.find("unknown"), std::string::npos) << list.out;
    const Result show = cli("show 1 --json --db " + db);
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_EQ(json::parse(show.out)["summary"]["status"], "unknown");
    for (const char* cmd : {"list --json", "export 1 --format json", "export 1 --format csv",
                            "compare 1 2", "sweeps"})
        EXPECT_EQ(cli(std::string(cmd) + " --db " + db).status, 0) << cmd;
}

// Item 10: names holding escape sequences were printed raw (`list` cleared the screen).
TEST_F(CliHostile, NamesAreEscapedWhereverTheyArePrinted) {
    const std::string db = m_dir / "runs.db";
    writeRun(db, "a", qklab::RunStatus::Finished);
    writeRun(db, "b", qklab::RunStatus::Finished);
    ASSERT_TRUE(rawExec(db, "UPDATE runs SET name = 'x' || char(27) || '[2J' || id"));
    const Result list = cli("list --db " + db);
    EXPECT_EQ(list.status, 0);
    EXPECT_NE(list.out.find("\\x1B[2J1"), std::string::npos) << list.out;
    for (const char* cmd : {"list", "show 1", "compare 1 2", "sweeps"}) {
        const Result r = cli(std::string(cmd) + " --db " + db);
        EXPECT_EQ(r.status, 0) << cmd << ": " << r.err;
        EXPECT_EQ(noEscape(r.out + r.err), "") << cmd;
    }
    const std::string into = m_dir / "into.db";
    const Result m = cli("merge " + db + " --into " + into);
    // Issue 36: such names are stored under the rule, escaped, and the merge says so.
    EXPECT_EQ(m.status, 0) << m.err;
    EXPECT_EQ(noEscape(m.out + m.err), "");
    EXPECT_EQ(rawText(into, "SELECT name FROM runs WHERE id = 1"), "x\\x1B[2J1");
}

// Issue 36, item 2: `run --name` and `sweep --name` took a C1 control (U+009B, a one-character
// CSI) that import refused, so the database, or every shard of a cluster sweep, could never be
// merged. Now both refuse it before anything is written, as they refuse a bidi override; a
// name written before the rule is printed escaped.
TEST_F(CliHostile, RunAndSweepNamesFollowTheRuleImportChecks) {
    const std::string db = m_dir / "runs.db", sweep = m_dir / "s.json";
    std::ofstream(sweep) << R"({"base": ")" << m_preset << R"(", "axes": {"optim.lr": [0.01]}})";
    for (const std::string& cmd : {"run " + m_preset, "sweep " + sweep})
        for (const auto& [name, said] :
             {std::pair<std::string, std::string>{"a\xC2\x9B"
                                                  "2J",
                                                  "U+009B (a control character)"},
              {"x\xE2\x80\xAEy", "U+202E (a bidi control)"}}) {
            const Result r = cli(cmd + " --db " + db + " --name '" + name + "'");
            EXPECT_EQ(r.status, 2) << cmd << ": " << r.err;
            EXPECT_NE(r.err.find(said), std::string::npos) << cmd << ": " << r.err;
            EXPECT_EQ(r.err.find(name), std::string::npos) << cmd << ": printed raw";
        }
    EXPECT_TRUE(!fs::exists(db) || rawInt(db, "SELECT count(*) FROM runs") <= 0);
    writeRun(db, "old", qklab::RunStatus::Finished);
    ASSERT_TRUE(rawExec(db, "UPDATE runs SET name = 'txt' || char(8238) || 'exe'"));
    const Result list = cli("list --db " + db);
    EXPECT_EQ(list.status, 0) << list.err;
    EXPECT_NE(list.out.find("txt\\xE2\\x80\\xAEexe"), std::string::npos) << list.out;
}

// Item 5: `import colleague.db` then `resume theirs` deleted the colleague's step file.
TEST_F(CliHostile, AnImportedRunResumesFromItsOwnCopyOfTheCheckpoint) {
    const std::string theirs = m_dir / "colleague.db", mine = m_dir / "mine.db";
    trainStoppedRun(theirs, "theirs");
    const std::string theirFile = theirs + ".checkpoints/run-1/step-8.pt";
    ASSERT_TRUE(fs::exists(theirFile));
    const Result imp = cli("import " + theirs + " --db " + mine);
    ASSERT_EQ(imp.status, 0) << imp.err;
    const Result resume = cli("resume theirs --db " + mine);
    ASSERT_EQ(resume.status, 0) << resume.err;
    EXPECT_TRUE(fs::exists(theirFile));
    EXPECT_TRUE(fs::exists(mine + ".checkpoints/run-1/step-12.pt"));
    EXPECT_EQ(rawInt(mine, "SELECT steps_done FROM runs"), 12);
}

// Item 6: resuming from another directory said "no checkpoint" and deleted the row.
TEST_F(CliHostile, ARunResumesFromAnotherDirectory) {
    fs::create_directories(m_dir.path / "a");
    fs::create_directories(m_dir.path / "b");
    const fs::path before = fs::current_path();
    fs::current_path(m_dir.path / "a");
    trainStoppedRun("runs.db", "here");
    fs::current_path(m_dir.path / "b");
    const Result r = cli("resume here --db ../a/runs.db");
    fs::current_path(before);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(rawInt(m_dir / "a/runs.db", "SELECT steps_done FROM runs"), 12);
}

// Item 9: a shard merged while its task still wrote stayed partial; the merge now says so and
// a later merge updates the run.
TEST_F(CliHostile, MergeNamesALiveWriterAndUpdatesTheRunLater) {
    const std::string shard = m_dir / "point-0.db", into = m_dir / "merged.db";
    qklab::NewRun nr;
    nr.name = "point-0";
    nr.configJson = "{}";
    qklab::RunWriter w(shard, nr);
    for (int64_t s = 0; s < 6; ++s) {
        if (s == 3) {
            w.flush();
            const Result first = cli("merge " + shard + " --into " + into);
            ASSERT_EQ(first.status, 0) << first.err;
            EXPECT_NE(first.err.find("still being written by process " + std::to_string(getpid())),
                      std::string::npos)
                << first.err;
        }
        qklab::StepMetrics m;
        m.step = s;
        w.addStep(m);
    }
    w.finish(qklab::RunStatus::Finished);
    const Result again = cli("merge " + shard + " --into " + into);
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_NE(again.err.find("1 updated"), std::string::npos) << again.err;
    EXPECT_EQ(rawText(into, "SELECT status || ' ' || steps_done FROM runs"), "finished 6");
}

// Item 18: readers exited 1 ("no such table: runs", then an SQL dump) on a file whose data was
// in its WAL when the WAL index cannot be created (a dangling -shm link stands in for
// read-only media).
TEST_F(CliHostile, AWalOnlyFileOnReadOnlyMediaIsListed) {
    const std::string live = m_dir / "live.db";
    fs::create_directories(m_dir.path / "media");
    const std::string copy = m_dir / "media/runs.db";
    {
        qklab::RunStore holder(live);
        writeRun(live, "walled", qklab::RunStatus::Finished, 2, false);
        fs::copy_file(live, copy);
        fs::copy_file(live + "-wal", copy + "-wal");
    }
    fs::create_symlink(m_dir / "no/such/dir/shm", copy + "-shm");
    const Result r = cli("list --db " + copy);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("walled"), std::string::npos) << r.out;
}
