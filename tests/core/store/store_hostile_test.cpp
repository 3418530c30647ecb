// store_hostile_test.cpp — files from others are untrusted input (issue 22): importing a shard
// or a colleague's database checks every row, copies checkpoints instead of trusting their
// paths, updates a run merged while it was still written; checkpoint paths are read relative to
// the database's own folder from any directory and never deleted outside it; readers keep going
// over values this build has no name for; a WAL-only file on read-only media is read whole.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "qklab/config/names.h"
#include "qklab/store/run_export.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"
#include "support/hostile_db.h"

using namespace qklab;
using namespace hostile;

namespace {

ErrorCode importError(RunStore& store, const std::string& src, std::string* message = nullptr) {
    try {
        store.importRuns(src);
    } catch (const Error& e) {
        if (message) *message = e.what();
        return e.code();
    }
    ADD_FAILURE() << src << " was imported";
    return ErrorCode::Internal;
}

// Runs the test body in `dir` and comes back, whatever happens.
struct InDirectory {
    fs::path before = fs::current_path();
    explicit InDirectory(const fs::path& dir) { fs::current_path(dir); }
    ~InDirectory() { fs::current_path(before); }
};

}  // namespace

// Item 5: a checkpoints row pointing outside qklab's folders (~/VICTIM.txt) made `resume`
// delete that file once the resumed run saved a newer checkpoint.
TEST(HostileImport, ACheckpointPathOutsideTheFolderIsNeverOpenedOrDeleted) {
    TempDir d;
    const std::string shard = d / "shard.db", into = d / "mine.db", victim = d / "VICTIM.txt";
    std::ofstream(victim) << "precious";
    const int64_t id = writeRun(shard, "theirs", RunStatus::Stopped, 3, false);
    ASSERT_TRUE(rawExec(shard, "INSERT INTO checkpoints VALUES(" + std::to_string(id) + ", 3, '" +
                                   victim + "', '')"));
    {
        RunStore store(into);
        store.importRuns(shard);
        // The foreign path is not a usable checkpoint here.
        EXPECT_FALSE(store.newestUsableCheckpoint(1).has_value());
        for (const auto& c : store.checkpoints(1)) EXPECT_NE(c.path, victim);
    }
    {  // what `resume` does: continue from step 3 and save a newer checkpoint
        RunWriter w(into, 1, 3);
        const std::string dir = into + ".checkpoints/run-1";
        fs::create_directories(dir);
        std::ofstream(dir + "/step-4.pt") << "newer";
        w.addCheckpoint({4, dir + "/step-4.pt", {}});
        w.finish(RunStatus::Stopped);
    }
    EXPECT_EQ(fileText(victim), "precious");
}

// Item 5: `import colleague.db` then `resume theirs` deleted the colleague's own step file.
// The import copies it into this database's folder; the colleague's file is never touched.
TEST(HostileImport, ImportedCheckpointsAreCopiedIntoTheTargetsFolder) {
    TempDir d;
    const std::string theirs = d / "colleague.db", mine = d / "mine.db";
    writeRun(mine, "my own", RunStatus::Finished, 2, false);  // id 1 is taken here
    writeRun(theirs, "theirs", RunStatus::Stopped, 5);
    const std::string theirFile = theirs + ".checkpoints/run-1/step-5.pt";
    ASSERT_TRUE(fs::exists(theirFile));
    RunStore store(mine);
    store.importRuns(theirs);
    const auto c = store.newestUsableCheckpoint(2);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->step, 5);
    EXPECT_EQ(fs::weakly_canonical(c->path),
              fs::weakly_canonical(mine + ".checkpoints/run-2/step-5.pt"));
    EXPECT_EQ(fileText(c->path), "weights of theirs");
    EXPECT_EQ(rawText(mine, "SELECT path FROM checkpoints WHERE run_id = 2"), "run-2/step-5.pt");
    // No staging left over: run folders only (a writer's disk reserve has no name).
    for (const auto& e : fs::directory_iterator(mine + ".checkpoints"))
        EXPECT_EQ(e.path().filename().string().rfind("run-", 0), 0u) << e.path();
    {  // resuming the copy and saving past it drops the copy, not the colleague's file
        RunWriter w(mine, 2, 5);
        std::ofstream(mine + ".checkpoints/run-2/step-6.pt") << "newer";
        w.addCheckpoint({6, mine + ".checkpoints/run-2/step-6.pt", {}});
        w.finish(RunStatus::Stopped);
    }
    EXPECT_EQ(fileText(theirFile), "weights of theirs");
    EXPECT_FALSE(fs::exists(mine + ".checkpoints/run-2/step-5.pt"));
}

// Item 6: checkpoint paths were stored relative to the working directory; resuming from
// another directory said "no checkpoint" and deleted the row.
TEST(CheckpointPaths, AreStoredRelativeToTheFolderAndReadFromAnyDirectory) {
    TempDir d;
    fs::create_directories(d / "a/sub");
    fs::create_directories(d / "b");
    {
        InDirectory in(d / "a");
        writeRun("sub/runs.db", "r", RunStatus::Stopped, 4);
    }
    const std::string db = d / "a/sub/runs.db";
    EXPECT_EQ(rawText(db, "SELECT path FROM checkpoints"), "run-1/step-4.pt");
    InDirectory in(d / "b");
    RunStore store("../a/sub/runs.db");
    const auto c = store.newestUsableCheckpoint(1);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(fileText(c->path), "weights of r");
    EXPECT_EQ(rawInt(db, "SELECT count(*) FROM checkpoints"), 1);
}

// Item 6: rows written by older builds hold the cwd-relative path; read from elsewhere they
// still find their file, and a file that is missing keeps its row (it may come back).
TEST(CheckpointPaths, OlderRowsAreFoundFromAnotherDirectoryAndMissingFilesKeepTheirRows) {
    TempDir d;
    fs::create_directories(d / "a/sub");
    const std::string db = d / "a/sub/runs.db";
    writeRun(db, "r", RunStatus::Stopped, 4);
    ASSERT_TRUE(rawExec(db,
                        "UPDATE checkpoints SET path = 'sub/runs.db.checkpoints/run-1/step-4.pt'; "
                        "INSERT INTO checkpoints VALUES(1, 9, 'sub/runs.db.checkpoints/run-1/"
                        "step-9.pt', '')"));
    InDirectory in(d.path);
    {
        RunStore store(db);
        const auto c = store.newestUsableCheckpoint(1);
        ASSERT_TRUE(c.has_value());
        EXPECT_EQ(c->step, 4);
    }
    EXPECT_EQ(rawInt(db, "SELECT count(*) FROM checkpoints"), 2);  // step 9's row stays
}

// Item 6: ".." and symlinks that lead out of the run's folder are refused, also for a path in
// the current form; the writer's cleanup never deletes through them.
TEST(CheckpointPaths, DotDotAndSymlinksOutOfTheRunFolderAreRefused) {
    TempDir d;
    const std::string db = d / "runs.db", victim = d / "VICTIM.txt";
    std::ofstream(victim) << "precious";
    writeRun(db, "r", RunStatus::Stopped, 2, false);
    fs::create_directories(db + ".checkpoints/run-1");
    fs::create_symlink(victim, db + ".checkpoints/run-1/step-3.pt");
    ASSERT_TRUE(rawExec(db,
                        "INSERT INTO checkpoints VALUES(1, 2, 'run-1/../../VICTIM.txt', ''); "
                        "INSERT INTO checkpoints VALUES(1, 3, 'run-1/step-3.pt', '')"));
    // From inside the folder, both rows name the victim if read as paths of the working
    // directory (what older builds did).
    InDirectory in(db + ".checkpoints");
    {
        RunStore store(db);
        EXPECT_FALSE(store.newestUsableCheckpoint(1).has_value());
        for (const auto& c : store.checkpoints(1)) EXPECT_EQ(c.path, "") << c.step;
    }
    {
        RunWriter w(db, 1, 3);
        std::ofstream(db + ".checkpoints/run-1/step-5.pt") << "new";
        w.addCheckpoint({5, db + ".checkpoints/run-1/step-5.pt", {}});
        w.finish(RunStatus::Stopped);
    }
    EXPECT_EQ(fileText(victim), "precious");
}

// Item 7: a config nested 100000 deep crashed show and export; it is refused at import.
TEST(HostileImport, DeeplyNestedJsonIsRefusedAndNothingIsImported) {
    TempDir d;
    const std::string shard = d / "shard.db", into = d / "into.db";
    writeRun(shard, "ok", RunStatus::Finished);
    writeRun(shard, "deep", RunStatus::Finished);
    ASSERT_TRUE(rawExec(shard, "UPDATE runs SET config_json = '" + std::string(100000, '[') +
                                   std::string(100000, ']') + "' WHERE id = 2"));
    RunStore store(into);
    std::string msg;
    EXPECT_EQ(importError(store, shard, &msg), ErrorCode::NotQklabDatabase);
    EXPECT_NE(msg.find(shard), std::string::npos) << msg;
    EXPECT_NE(msg.find("run 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("config_json"), std::string::npos) << msg;
    EXPECT_TRUE(store.listRuns().empty());
    EXPECT_FALSE(fs::exists(into + ".checkpoints/run-1"));  // the copied file went again
}

// Issue 26: a run logged from Python keeps the user's config (up to 1 MiB of JSON) and its
// custom scalars through a merge; a user config that is not a JSON object refuses the file
// (a custom scalar name with a control character is stored under the name rule: names_test).
TEST(HostileImport, AnExternalRunsUserConfigAndScalarsAreCheckedAndKept) {
    TempDir d;
    const std::string shard = d / "shard.db", into = d / "into.db";
    writeRun(shard, "external", RunStatus::Finished);
    const std::string big = "{\"note\": \"" + std::string(200000, 'x') + "\"}";
    ASSERT_TRUE(
        rawExec(shard, "UPDATE runs SET source = 'python: hf-llama', user_config = '" + big + "'"));
    ASSERT_TRUE(rawExec(shard, "INSERT INTO custom_scalars VALUES(1, 'tokens_seen', 3, 4096)"));
    {
        RunStore store(into);
        EXPECT_EQ(store.importRuns(shard).imported, 1);
        const RunInfo r = store.listRuns().at(0);
        EXPECT_EQ(r.source, "python: hf-llama");
        EXPECT_EQ(r.userConfigJson.size(), big.size());
        const auto scalars = store.customScalars(r.id);
        ASSERT_EQ(scalars.size(), 1u);
        EXPECT_EQ(scalars[0].name, "tokens_seen");
        EXPECT_EQ(scalars[0].value, 4096.0);
    }
    for (const std::string& bad : {std::string("UPDATE runs SET user_config = '[1, 2]'")}) {
        const std::string hostile = d / ("hostile" + std::to_string(bad.size()) + ".db");
        writeRun(hostile, "external", RunStatus::Finished);
        ASSERT_TRUE(rawExec(hostile, bad));
        RunStore store(d / ("fresh" + std::to_string(bad.size()) + ".db"));
        std::string msg;
        EXPECT_EQ(importError(store, hostile, &msg), ErrorCode::NotQklabDatabase) << bad;
        EXPECT_NE(msg.find("run 1"), std::string::npos) << msg;
        EXPECT_TRUE(store.listRuns().empty());
    }
}

// Item 7: a file that already holds such a config gives an error, not a crash.
TEST(StoredRows, DeepOrBrokenJsonInAStoredRunIsAnErrorNotACrash) {
    TempDir d;
    const std::string db = d / "runs.db";
    writeRun(db, "r", RunStatus::Finished);
    ASSERT_TRUE(rawExec(db, "UPDATE runs SET config_json = '" + std::string(100000, '[') + "'"));
    RunStore store(db, StoreAccess::ReadOnly);
    EXPECT_EQ(store.listRuns().size(), 1u);
    EXPECT_THROW(runExportJson(store, 1), Error);
    EXPECT_NO_THROW(runExportCsv(store, 1));
}

// Item 8: one row with an unknown status was committed and broke every reader of the file.
TEST(HostileImport, AnUnknownStatusRefusesTheWholeFileNamingRunAndField) {
    TempDir d;
    const std::string shard = d / "shard.db", into = d / "into.db";
    writeRun(shard, "fine", RunStatus::Finished);
    writeRun(shard, "boom", RunStatus::Finished);
    ASSERT_TRUE(rawExec(shard, "UPDATE runs SET status = 'exploded' WHERE id = 2"));
    RunStore store(into);
    std::string msg;
    EXPECT_EQ(importError(store, shard, &msg), ErrorCode::NotQklabDatabase);
    EXPECT_NE(msg.find("run 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("status"), std::string::npos) << msg;
    EXPECT_NE(msg.find("exploded"), std::string::npos) << msg;
    EXPECT_TRUE(store.listRuns().empty());
    EXPECT_TRUE(store.sweeps().empty());
}

// Item 8: a database that already holds such a row is read, the value shown as unknown.
TEST(StoredRows, UnknownStatusesAndKindsReadAsUnknown) {
    TempDir d;
    const std::string db = d / "runs.db";
    writeRun(db, "r", RunStatus::Finished);
    writeRun(db, "s", RunStatus::Finished);
    ASSERT_TRUE(rawExec(db,
                        "UPDATE runs SET status = 'exploded' WHERE id = 1; "
                        "UPDATE spikes SET kind = 'meteor'"));
    RunStore store(db, StoreAccess::ReadOnly);
    const auto runs = store.listRuns();
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_STREQ(toString(runs[0].status), "unknown");
    EXPECT_STREQ(toString(runs[1].status), "finished");
    ASSERT_EQ(store.spikes(1).size(), 1u);
    EXPECT_STREQ(toString(store.spikes(1)[0].kind), "unknown");
    EXPECT_EQ(runSummaryJson(store, 1)["status"], "unknown");
    EXPECT_NO_THROW(runExportJson(store, 1));
}

// Item 9: a shard merged while its task still ran arrived as a partial copy, and merging it
// again later kept the partial copy.
TEST(HostileImport, MergingAgainReplacesARunTheShardNowHoldsMoreOf) {
    TempDir d;
    const std::string shard = d / "point-0.db", into = d / "merged.db";
    NewRun nr;
    nr.name = "point-0";
    nr.configJson = "{}";
    RunWriter w(shard, nr);
    const auto steps = [&](int64_t from, int64_t to) {
        for (int64_t s = from; s < to; ++s) {
            StepMetrics m;
            m.step = s;
            m.loss = 4.0 - 0.01 * static_cast<double>(s);
            w.addStep(m);
        }
    };
    steps(0, 3);
    w.flush();  // still being written by this process
    {
        RunStore store(into);
        EXPECT_EQ(store.importRuns(shard).imported, 1);
        const RunInfo r = store.run(1);
        EXPECT_STREQ(toString(r.status), "interrupted");
        EXPECT_EQ(r.stepsDone, 3);
    }
    steps(3, 6);
    const std::string dir = shard + ".checkpoints/run-1";
    fs::create_directories(dir);
    std::ofstream(dir + "/step-6.pt") << "final";
    w.addCheckpoint({6, dir + "/step-6.pt", {}});
    w.finish(RunStatus::Finished);
    RunStore store(into);
    const ImportResult again = store.importRuns(shard);
    EXPECT_EQ(again.imported, 0);
    EXPECT_EQ(again.skipped, 0);  // updated, not skipped
    ASSERT_EQ(store.listRuns().size(), 1u);
    const RunInfo r = store.run(1);
    EXPECT_STREQ(toString(r.status), "finished");
    EXPECT_EQ(r.stepsDone, 6);
    EXPECT_EQ(r.name, "point-0");
    EXPECT_EQ(store.stepMetrics(1).size(), 6u);
    const auto c = store.newestUsableCheckpoint(1);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(fileText(c->path), "final");
    // Once more: nothing left to take.
    EXPECT_EQ(store.importRuns(shard).skipped, 1);
}

// Item 9: a copy resumed here past what the shard holds is kept.
TEST(HostileImport, ACopyThatGotFurtherHereIsKept) {
    TempDir d;
    const std::string shard = d / "shard.db", into = d / "into.db";
    writeRun(shard, "r", RunStatus::Stopped, 3, false);
    RunStore store(into);
    store.importRuns(shard);
    {
        RunWriter w(into, 1, 3);
        StepMetrics m;
        m.step = 3;
        w.addStep(m);
        w.finish(RunStatus::Stopped);
    }
    EXPECT_EQ(store.importRuns(shard).skipped, 1);
    EXPECT_EQ(store.run(1).stepsDone, 4);
}

// Item 10: imported names skipped the name checks: 10 kB, empty, NUL, newlines, ESC and OSC.
// Issue 36: a name breaking the name rule no longer refuses the file (an older qklab wrote such
// names, and the shards of a sweep that ran must still merge): it is stored under the rule,
// escaped and at most 200 bytes; only a name that is not bounded text refuses the file.
TEST(HostileImport, NamesBreakingTheNameRulesAreStoredUnderTheRule) {
    const std::vector<std::string> names{std::string(10000, 'n'),
                                         "",
                                         "a\nb",
                                         "\x1b[2J",
                                         "\x1b]0;pwned\x07",
                                         std::string("nul\0x", 5),
                                         std::string(70000, 'z')};
    for (const std::string& name : names) {
        TempDir d;
        const std::string shard = d / "shard.db", into = d / "into.db";
        writeRun(shard, "placeholder", RunStatus::Finished);
        sqlite3* db = nullptr;
        sqlite3_stmt* st = nullptr;
        ASSERT_EQ(sqlite3_open(shard.c_str(), &db), SQLITE_OK);
        sqlite3_prepare_v2(db, "UPDATE runs SET name = ?", -1, &st, nullptr);
        sqlite3_bind_text(st, 1, name.data(), static_cast<int>(name.size()), SQLITE_TRANSIENT);
        ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
        sqlite3_close(db);
        RunStore store(into);
        if (name.size() > 65536) {  // not one bounded line of text: the file is refused
            std::string msg;
            EXPECT_EQ(importError(store, shard, &msg), ErrorCode::NotQklabDatabase);
            EXPECT_NE(msg.find("name"), std::string::npos) << msg;
            EXPECT_TRUE(store.listRuns().empty());
            continue;
        }
        EXPECT_EQ(store.importRuns(shard).imported, 1) << name.size();
        const std::string stored = store.listRuns().at(0).name;
        EXPECT_EQ(stored, nameUnderTheRule(name));
        EXPECT_NO_THROW(checkRunName(stored)) << stored;
        EXPECT_EQ(stored.find('\x1b'), std::string::npos) << stored;
    }
}

// Item 18: a database whose data is all in its WAL, on media where the WAL index (-shm)
// cannot be created, read as empty ("no such table: runs"). A dangling -shm symlink stands in
// for read-only media: even root cannot create the index through it.
TEST(WalOnly, AFileWhoseDataIsInItsWalIsReadWithoutItsIndex) {
    TempDir d;
    const std::string live = d / "live.db";
    fs::create_directories(d / "media");
    const std::string copy = d / "media/runs.db";
    {
        RunStore holder(live);  // keeps the WAL from being checkpointed into the file
        writeRun(live, "in the wal", RunStatus::Finished, 2, false);
        ASSERT_GT(fs::file_size(live + "-wal"), 0u);
        fs::copy_file(live, copy);
        fs::copy_file(live + "-wal", copy + "-wal");
    }
    fs::create_symlink(d / "no/such/folder/shm", copy + "-shm");
    RunStore store(copy, StoreAccess::ReadOnly);
    const auto runs = store.listRuns();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].name, "in the wal");
    EXPECT_EQ(store.stepMetrics(1).size(), 2u);
    std::size_t entries = 0;
    for (const auto& e : fs::directory_iterator(d / "media")) entries += e.path().empty() ? 0 : 1;
    EXPECT_EQ(entries, 3u);  // runs.db, its WAL and the -shm link: nothing written there
}
