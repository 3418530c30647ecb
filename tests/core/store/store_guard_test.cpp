// store_guard_test.cpp — a writer never loses rows without a word (issue 22, item 1).
//
// SQLite's locks are POSIX locks: closing any descriptor of a database file drops them for the
// whole process, and another process may then delete the WAL this one still writes to. These
// tests stage that: a companion file opened as a database must be refused before SQLite
// touches it (it would drop the locks), and a writer whose WAL is gone must stop at its next
// flush instead of committing into a deleted file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"
#include "support/proc_locks.h"
#include "support/test_files.h"

using namespace qklab;
namespace fs = std::filesystem;

namespace {

using testsupport::scratchDir;

StepMetrics step(int64_t s) {
    StepMetrics m;
    m.step = s;
    m.loss = 5.0 - 0.01 * static_cast<double>(s);
    m.gradNorm = 1.0;
    m.lr = 1e-3;
    m.seqLen = 32;
    return m;
}

NewRun newRun(const std::string& name) {
    NewRun r;
    r.name = name;
    r.configJson = "{}";
    return r;
}

}  // namespace

TEST(StoreGuard, ACompanionFileIsRefusedBeforeSqliteOpensIt) {
    const fs::path dir = scratchDir("guard-companion");
    const std::string db = (dir / "runs.db").string();
    RunWriter writer(db, newRun("live"));
    writer.addStep(step(0));
    writer.flush();
    const int shmLocks = testsupport::heldPosixLocks(db + "-shm");
    ASSERT_GT(shmLocks, 0) << "a WAL writer holds locks on the -shm index";
    for (const char* suffix : {"-shm", "-wal"}) {
        for (StoreAccess access : {StoreAccess::ReadWrite, StoreAccess::ReadOnly}) {
            try {
                RunStore store(db + suffix, access);
                ADD_FAILURE() << suffix << " opened as a database";
            } catch (const Error& e) {
                EXPECT_EQ(e.code(), ErrorCode::InvalidRequest) << e.what();
                EXPECT_NE(std::string(e.what()).find("open " + db + " itself"), std::string::npos)
                    << e.what();
            }
        }
    }
    // Opening the -shm through SQLite and closing it again dropped these.
    EXPECT_EQ(testsupport::heldPosixLocks(db + "-shm"), shmLocks);
    writer.addStep(step(1));
    EXPECT_NO_THROW(writer.flush());
    fs::remove_all(dir);
}

TEST(StoreGuard, AWriterWhoseJournalIsDeletedStopsAtItsNextFlush) {
    const fs::path dir = scratchDir("guard-deleted");
    const std::string db = (dir / "runs.db").string();
    {
        RunWriter writer(db, newRun("victim"));
        for (int s = 0; s < 5; ++s) writer.addStep(step(s));
        writer.flush();
        // What another process does once this one has lost its locks: checkpoint and delete.
        ASSERT_TRUE(fs::remove(db + "-wal"));
        ASSERT_TRUE(fs::remove(db + "-shm"));
        writer.addStep(step(5));
        try {
            writer.flush();
            ADD_FAILURE() << "a flush into a deleted journal reported success";
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::Database);
            EXPECT_NE(std::string(e.what()).find(db + "-wal was deleted"), std::string::npos)
                << e.what();
        }
        // Nothing more is written through that connection, not even the final status.
        EXPECT_THROW(writer.finish(RunStatus::Finished), Error);
        const RunWriter::FailureRecord record = writer.fail("stopped by the test");
        EXPECT_FALSE(record.stored);
        EXPECT_NE(record.message.find("the rows of step 5 were not stored"), std::string::npos)
            << record.message;
    }
    fs::remove_all(dir);
}

TEST(StoreGuard, AReplacedJournalIsNoticedToo) {
    const fs::path dir = scratchDir("guard-replaced");
    const std::string db = (dir / "runs.db").string();
    RunWriter writer(db, newRun("victim"));
    writer.addStep(step(0));
    writer.flush();
    // Deleted and created anew by someone else: same name, another file.
    ASSERT_TRUE(fs::remove(db + "-wal"));
    std::FILE* f = std::fopen((db + "-wal").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
    writer.addStep(step(1));
    try {
        writer.flush();
        ADD_FAILURE() << "a flush into a replaced journal reported success";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("was replaced by a new file"), std::string::npos)
            << e.what();
    }
    fs::remove_all(dir);
}

TEST(StoreGuard, AFailedRunKeepsItsRowsAndStoresTheReason) {
    const fs::path dir = scratchDir("guard-fail");
    const std::string db = (dir / "runs.db").string();
    int64_t id = 0;
    {
        RunWriter writer(db, newRun("failing"));
        id = writer.runId();
        for (int s = 0; s < 3; ++s) writer.addStep(step(s));
        const RunWriter::FailureRecord record = writer.fail("out of memory at step 3");
        EXPECT_TRUE(record.stored) << record.why;
        EXPECT_EQ(record.message, "out of memory at step 3");  // every row was committed
    }
    RunStore store(db, StoreAccess::ReadOnly);
    const RunInfo run = store.run(id);
    EXPECT_EQ(run.status, RunStatus::Failed);
    EXPECT_EQ(run.statusMessage, "out of memory at step 3");
    EXPECT_EQ(store.stepMetrics(id).size(), 3u);
    fs::remove_all(dir);
}
