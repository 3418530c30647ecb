// store_schema_test.cpp — database files are created, migrated from every older schema and refused
// as they should be; a reader opens without creating, migrating or writing; the default path.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "support/store_fixture.h"

using namespace qklab;
using namespace qklab::testsupport;

TEST_F(StoreTest, EmptyFileIsMigrated) {
    std::ofstream(m_path).close();
    ASSERT_EQ(fs::file_size(m_path), 0u);
    {
        RunStore store(m_path);
        EXPECT_EQ(store.schemaVersion(), kLatestSchema);
        EXPECT_TRUE(store.listRuns().empty());
    }
    EXPECT_EQ(rawInt("PRAGMA user_version"), kLatestSchema);
    EXPECT_EQ(rawInt("PRAGMA application_id"), 0x514B4C42);
    EXPECT_EQ(rawText("PRAGMA journal_mode"), "wal");
    EXPECT_EQ(rawInt("SELECT count(*) FROM sqlite_master WHERE name = 'step_metrics'"), 1);
    RunStore again(m_path);  // reopening a current file is a no-op
    EXPECT_EQ(again.schemaVersion(), kLatestSchema);
}

TEST_F(StoreTest, InMemoryDatabaseWorks) {
    RunStore store(":memory:");
    EXPECT_EQ(store.schemaVersion(), kLatestSchema);
    EXPECT_EQ(store.maxRunId(), 0);
    EXPECT_EQ(store.markInterruptedRuns(), 0);
}

TEST_F(StoreTest, MissingDirectoryIsCreated) {
    std::string nested = (m_dir / "a" / "b" / "runs.db").string();
    RunStore store(nested);
    EXPECT_TRUE(fs::exists(nested));
    EXPECT_EQ(store.path(), nested);
}

TEST_F(StoreTest, ForeignSqliteFileIsRefusedAndLeftAlone) {
    std::string other = (m_dir / "other.sqlite").string();
    rawExec("CREATE TABLE songs(title TEXT); INSERT INTO songs VALUES('x')", other);
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { RunStore s(other); }, &msg), ErrorCode::NotQklabDatabase);
    EXPECT_NE(msg.find(other + " is not a qklab database"), std::string::npos) << msg;
    EXPECT_EQ(rawText("PRAGMA journal_mode", other), "delete");  // not switched to WAL
    EXPECT_EQ(rawInt("PRAGMA user_version", other), 0);
    EXPECT_EQ(errorCodeOf([&] { RunWriter w(other, NewRun{}); }), ErrorCode::NotQklabDatabase);
}

TEST_F(StoreTest, GarbageFileIsRefused) {
    std::string junk = (m_dir / "junk.db").string();
    {
        std::ofstream out(junk);
        for (int i = 0; i < 300; ++i) out << "this is a text file, not a database\n";
    }
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { RunStore s(junk); }, &msg), ErrorCode::NotQklabDatabase);
    EXPECT_NE(msg.find(junk), std::string::npos) << msg;
}

TEST_F(StoreTest, VersionOneFileIsMigratedKeepingItsRows) {
    NewRun nr;
    nr.name = "old";
    int64_t id;
    {
        RunWriter w(m_path, nr);
        id = w.runId();
        w.addStep(step(0, 2.5));
        w.finish(RunStatus::Finished);
    }
    // Turn the file back into what a version-1 build wrote.
    rawExec(
        QKLAB_UNDO_SCHEMA_8
        "ALTER TABLE step_metrics DROP COLUMN attention_path; ALTER TABLE histograms DROP COLUMN "
        "nan; DROP TABLE logit_alarms; DROP TABLE comparisons; "
        "ALTER TABLE attention_maps DROP COLUMN tokens; ALTER TABLE attention_maps DROP COLUMN "
        "reason; PRAGMA user_version = 1",
        m_path);
    ASSERT_EQ(rawInt("SELECT count(*) FROM pragma_table_info('step_metrics') "
                     "WHERE name = 'attention_path'"),
              0);
    RunStore store(m_path);
    EXPECT_EQ(store.schemaVersion(), kLatestSchema);
    const auto ms = store.stepMetrics(id);
    ASSERT_EQ(ms.size(), 1u);
    EXPECT_DOUBLE_EQ(ms[0].loss, 2.5);
    EXPECT_EQ(ms[0].attentionPath, "");
}

TEST_F(StoreTest, VersionThreeHistogramsGainAZeroNanCount) {
    {
        RunWriter w(m_path, NewRun{});
        LogitHistogram h;
        h.counts = {1, 2};
        h.overflow = 5;
        w.addHistogram(h);
        w.finish(RunStatus::Finished);
    }
    rawExec(
        QKLAB_UNDO_SCHEMA_8
        "ALTER TABLE histograms DROP COLUMN nan; DROP TABLE logit_alarms; DROP TABLE comparisons; "
        "ALTER TABLE attention_maps DROP COLUMN tokens; ALTER TABLE attention_maps DROP COLUMN "
        "reason; PRAGMA user_version = 3",
        m_path);
    RunStore store(m_path);
    EXPECT_EQ(store.schemaVersion(), kLatestSchema);
    const auto hs = store.histograms(1, 0, -1);
    ASSERT_EQ(hs.size(), 1u);
    EXPECT_EQ(hs[0].overflow, 5);
    EXPECT_EQ(hs[0].nan, 0);
}

TEST_F(StoreTest, VersionTwoUserEventsLoseTheHiddenInterventionKey) {
    {
        RunWriter w(m_path, NewRun{});
        w.addEvent({21, "qk_norm", R"({"variant":"rms","_intervention":true})", "user"});
        w.addEvent({30, "dirty_batch", "not json", "config"});  // left as it is
        w.finish(RunStatus::Finished);
    }
    // Put back what a version-2 build wrote, then let this build open it.
    rawExec(
        QKLAB_UNDO_SCHEMA_8
        R"(UPDATE events SET params_json = '{"variant":"rms","_intervention":true}' WHERE step = 21;
               ALTER TABLE histograms DROP COLUMN nan; DROP TABLE logit_alarms; DROP TABLE comparisons;
               ALTER TABLE attention_maps DROP COLUMN tokens;
               ALTER TABLE attention_maps DROP COLUMN reason; PRAGMA user_version = 2)",
        m_path);
    RunStore store(m_path);
    EXPECT_EQ(store.schemaVersion(), kLatestSchema);
    const auto events = store.events(1);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].paramsJson, R"({"variant":"rms"})");
    EXPECT_EQ(events[0].source, "user");
    EXPECT_EQ(events[1].paramsJson, "not json");
}

TEST_F(StoreTest, NewerSchemaIsRefused) {
    { RunStore s(m_path); }
    rawExec("PRAGMA user_version = 99", m_path);
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { RunStore s(m_path); }, &msg), ErrorCode::Unsupported);
    EXPECT_NE(msg.find("99"), std::string::npos) << msg;
    EXPECT_NE(msg.find("newer"), std::string::npos) << msg;
}

// Issue 10, item 13: a reader opens without creating, migrating or writing.
TEST_F(StoreTest, ReadOnlyStoreCreatesNothing) {
    EXPECT_EQ(errorCodeOf([&] { RunStore s(m_path, StoreAccess::ReadOnly); }),
              ErrorCode::MissingFile);
    EXPECT_FALSE(fs::exists(m_path));
    {
        RunWriter w(m_path, NewRun{});
        w.finish(RunStatus::Finished);
    }
    RunStore reader(m_path, StoreAccess::ReadOnly);
    EXPECT_TRUE(reader.readOnly());
    EXPECT_EQ(reader.listRuns().size(), 1u);
    EXPECT_EQ(reader.markInterruptedRuns(), 0);
    EXPECT_THROW(reader.renameRun(1, "x"), Error);  // a write on a read-only connection
}

TEST_F(StoreTest, DefaultPathFollowsXdg) {
    std::string oldXdg = std::getenv("XDG_DATA_HOME") ? std::getenv("XDG_DATA_HOME") : "";
    std::string oldHome = std::getenv("HOME") ? std::getenv("HOME") : "";
    setenv("XDG_DATA_HOME", "/data/x", 1);
    EXPECT_EQ(defaultDatabasePath(), "/data/x/qklab/runs.db");
    unsetenv("XDG_DATA_HOME");
    setenv("HOME", "/home/someone", 1);
    EXPECT_EQ(defaultDatabasePath(), "/home/someone/.local/share/qklab/runs.db");
    if (oldXdg.empty())
        unsetenv("XDG_DATA_HOME");
    else
        setenv("XDG_DATA_HOME", oldXdg.c_str(), 1);
    setenv("HOME", oldHome.c_str(), 1);
}

// Schema 8 gave runs a UUID. A run written before it has one made from what identifies it:
// a reader of the old file and the migrated file agree on it, so importing an old file twice
// (once as it is, once migrated) still skips the run.
TEST_F(StoreTest, SchemaSevenRunsGetTheSameUuidReadAsTheyAreAndMigrated) {
    writeRuns(m_path, 2);
    rawExec(QKLAB_UNDO_SCHEMA_8 "PRAGMA user_version = 7; PRAGMA wal_checkpoint(TRUNCATE)", m_path);
    std::vector<std::string> before;
    {
        RunStore reader(m_path, StoreAccess::ReadOnly);
        EXPECT_EQ(reader.schemaVersion(), 7);
        EXPECT_TRUE(reader.sweeps().empty());
        for (const auto& r : reader.listRuns()) {
            EXPECT_EQ(r.uuid.rfind("legacy:", 0), 0u) << r.uuid;
            EXPECT_FALSE(r.sweep.has_value());
            before.push_back(r.uuid);
        }
    }
    ASSERT_EQ(before.size(), 2u);
    EXPECT_NE(before[0], before[1]);
    RunStore writer(m_path);
    EXPECT_EQ(writer.schemaVersion(), kLatestSchema);
    std::vector<std::string> after;
    for (const auto& r : writer.listRuns()) after.push_back(r.uuid);
    EXPECT_EQ(after, before);
    // New runs get a random version-4 UUID.
    RunWriter w(m_path, NewRun{});
    const std::string fresh = writer.run(w.runId()).uuid;
    EXPECT_EQ(fresh.size(), 36u);
    EXPECT_EQ(fresh[14], '4');
}
