// store_failure_test.cpp — a store error during a live run stops the run at once and fails it
// with the reason (issue 22, items 2 and 19).
//
// Write failures are injected through a SQLite VFS (support/faulty_vfs.h); the full disk is a
// real one: a small tmpfs, where this machine lets root mount one.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "qklab/engine/run_session.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"
#include "support/cli_run.h"
#include "support/faulty_vfs.h"
#include "support/test_files.h"
#include "support/tiny_config.h"

using namespace qklab;
namespace fs = std::filesystem;

namespace {

using testsupport::scratchDir;

RunConfig tinyConfig(int64_t steps) {
    RunConfig c = testsupport::tinyRunConfig(steps);
    c.eval.every = 0;
    c.run.checkpointSeconds = 0;
    return c;
}

// Arms the fault once step `armAt` is reported; remembers the last step it saw.
struct Saboteur : TrainingObserver {
    int64_t armAt = 0;
    testsupport::WriteFault fault = testsupport::WriteFault::IoError;
    std::string file;
    int count = -1;
    int64_t lastStep = -1;
    void onStep(const StepMetrics& m) override {
        lastStep = m.step;
        if (m.step == armAt) testsupport::armWriteFault(fault, file, count);
    }
};

struct FaultyVfsTest : ::testing::Test {
    void SetUp() override { testsupport::installFaultyVfs(); }
    void TearDown() override { testsupport::disarmWriteFault(); }
};

}  // namespace

TEST_F(FaultyVfsTest, AWriteFailureMidRunStopsItAtOnceAndFailsItWithTheReason) {
    const fs::path dir = scratchDir("storefail-transient");
    const std::string db = (dir / "runs.db").string();
    RunSession session(tinyConfig(400), SessionOptions{db, "victim", {}});
    const int64_t id = session.runId();
    Saboteur saboteur;
    saboteur.armAt = 60;
    saboteur.file = "runs.db-wal";
    saboteur.count = 1;  // one refused write: the store works again for the status
    try {
        session.run(&saboteur);
        ADD_FAILURE() << "the run went on after its rows could not be written";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Database);
        EXPECT_NE(std::string(e.what()).find("disk I/O error"), std::string::npos) << e.what();
    }
    EXPECT_EQ(testsupport::refusedWrites(), 1);
    testsupport::disarmWriteFault();
    RunStore store(db, StoreAccess::ReadOnly);
    const RunInfo run = store.run(id);
    EXPECT_EQ(run.status, RunStatus::Failed);
    EXPECT_NE(run.statusMessage.find("disk I/O error"), std::string::npos) << run.statusMessage;
    // At once: nothing trained past the flush that failed, and what trained is stored.
    EXPECT_LT(saboteur.lastStep, 80);
    EXPECT_EQ(run.stepsDone, saboteur.lastStep + 1);
    EXPECT_EQ(static_cast<int64_t>(store.stepMetrics(id).size()), run.stepsDone);
    fs::remove_all(dir);
}

TEST_F(FaultyVfsTest, WhenEvenTheStatusCannotBeWrittenTheErrorSaysSo) {
    const fs::path dir = scratchDir("storefail-persistent");
    const std::string db = (dir / "runs.db").string();
    RunSession session(tinyConfig(400), SessionOptions{db, "victim", {}});
    Saboteur saboteur;
    saboteur.armAt = 30;
    saboteur.file = "runs.db-wal";  // every write from step 30 on
    try {
        session.run(&saboteur);
        ADD_FAILURE() << "the run went on after its rows could not be written";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("disk I/O error"), std::string::npos) << what;
        EXPECT_NE(what.find("the run's status could not be stored either"), std::string::npos)
            << what;
        EXPECT_NE(what.find("were not stored"), std::string::npos) << what;
    }
    EXPECT_LT(saboteur.lastStep, 50);
    testsupport::disarmWriteFault();
    fs::remove_all(dir);
}

// A real full disk: a 4 MiB tmpfs filled by a run that stores histograms and attention maps
// at every step. Needs root and a kernel that lets this process mount (CI has both).
TEST(FullDisk, ARunThatFillsTheDiskIsFailedWithTheReasonAndKeepsItsRows) {
    const fs::path dir = scratchDir("storefail-tmpfs");
    const std::string mount = "mount -t tmpfs -o size=4m qklab-full-disk " + dir.string();
    if (::geteuid() != 0 || std::system((mount + " 2>/dev/null").c_str()) != 0)
        GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << mount;
    const std::string db = (dir / "full.db").string();
    const fs::path errDir = scratchDir("storefail-stderr");
    const std::string err = (errDir / "stderr.txt").string();
    const Result r = runCli(
        "run '{}' --db " + db +
            " --name filler --set schedule.steps=3000 --set probes.every=1"
            " --set probes.attn_map_every=1 --set eval.every=0 --set run.checkpoint_seconds=0"
            " --set run.threads=1",
        err);
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("is full"), std::string::npos) << r.err;
    const Result shown = runCli("show filler --json --db " + db, err);
    ASSERT_EQ(shown.status, 0) << shown.err;
    EXPECT_NE(shown.out.find("\"status\": \"failed\""), std::string::npos) << shown.out;
    EXPECT_NE(shown.out.find("is full"), std::string::npos) << shown.out;
    {
        RunStore store(db, StoreAccess::ReadOnly);
        const RunInfo run = store.findRun("filler");
        EXPECT_GT(run.stepsDone, 0);
        EXPECT_EQ(static_cast<int64_t>(store.stepMetrics(run.id).size()), run.stepsDone);
    }
    std::system(("umount -l " + dir.string()).c_str());
    fs::remove_all(dir);
    fs::remove_all(errDir);
}

namespace {

// Writes into `path` until the file system has not one byte left.
void fillTheDisk(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::setvbuf(f, nullptr, _IONBF, 0);
    std::vector<char> chunk(64 * 1024, 'x');
    for (size_t size = chunk.size(); size > 0; size /= 2)
        while (std::fwrite(chunk.data(), 1, size, f) == size) {
        }
    std::fclose(f);
}

}  // namespace

// The disk fills up between two commits, to the last byte: the writer's next commit fails, and
// only the reserve it keeps next to the database leaves room to store why the run stopped.
TEST(FullDisk, TheReserveLeavesRoomToStoreWhyTheRunFailed) {
    const fs::path dir = scratchDir("storefail-reserve");
    const std::string mount = "mount -t tmpfs -o size=2m qklab-full-disk " + dir.string();
    if (::geteuid() != 0 || std::system((mount + " 2>/dev/null").c_str()) != 0)
        GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << mount;
    const std::string db = (dir / "runs.db").string();
    int64_t id = 0;
    {
        NewRun run;
        run.name = "squeezed";
        run.configJson = "{}";
        RunWriter writer(db, run);
        id = writer.runId();
        StepMetrics m;
        m.loss = 4.0;
        writer.addStep(m);
        writer.flush();
        fillTheDisk((dir / "filler").string());
        for (int s = 1; s < 200; ++s) {
            m.step = s;
            writer.addStep(m);
        }
        try {
            writer.flush();
            ADD_FAILURE() << "a commit on a full disk succeeded";
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::Io);
            EXPECT_NE(std::string(e.what()).find("is full"), std::string::npos) << e.what();
        }
        const RunWriter::FailureRecord record = writer.fail("the disk is full");
        EXPECT_TRUE(record.stored) << record.why;
        EXPECT_NE(record.message.find("steps 1-199 were not stored"), std::string::npos)
            << record.message;
    }
    {
        RunStore store(db, StoreAccess::ReadOnly);
        const RunInfo run = store.run(id);
        EXPECT_EQ(run.status, RunStatus::Failed);
        EXPECT_NE(run.statusMessage.find("the disk is full"), std::string::npos);
        EXPECT_EQ(store.stepMetrics(id).size(), 1u);
    }
    std::system(("umount -l " + dir.string()).c_str());
    fs::remove_all(dir);
}

namespace {

// A run of one committed step on `db`.
std::unique_ptr<RunWriter> startedRun(const std::string& db, const std::string& name) {
    NewRun run;
    run.name = name;
    run.configJson = "{}";
    auto writer = std::make_unique<RunWriter>(db, run);
    writer->addStep(StepMetrics{});
    writer->flush();
    return writer;
}

// Fills the disk with `filler`, fails the writer's next commit, and fails the run.
RunWriter::FailureRecord squeeze(RunWriter& writer, const std::string& filler) {
    fillTheDisk(filler);
    StepMetrics m;
    for (m.step = 1; m.step < 200; ++m.step) writer.addStep(m);
    EXPECT_THROW(writer.flush(), Error);
    return writer.fail("the disk is full");
}

}  // namespace

// Issue 36, item 10: the writers of one database shared one reserve file, so the second of two
// writers failing on a full disk found it gone (the first had freed it, and the disk filled up
// again) and could not store why it failed; and a writer started on a disk with less than the
// reserve left started without one. Each writer now holds its own, or does not start.
TEST(FullDisk, EachWriterKeepsItsOwnReserveOrDoesNotStart) {
    const fs::path dir = scratchDir("storefail-two-writers");
    const std::string mount = "mount -t tmpfs -o size=4m qklab-full-disk " + dir.string();
    if (::geteuid() != 0 || std::system((mount + " 2>/dev/null").c_str()) != 0)
        GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << mount;
    const std::string db = (dir / "runs.db").string();
    {
        auto first = startedRun(db, "first");
        auto second = startedRun(db, "second");
        const RunWriter::FailureRecord one = squeeze(*first, (dir / "filler-1").string());
        EXPECT_TRUE(one.stored) << one.why;
        const RunWriter::FailureRecord two = squeeze(*second, (dir / "filler-2").string());
        EXPECT_TRUE(two.stored) << two.why;
    }
    // 256 KiB free: room for a run's first rows, not for the reserve that reports its end.
    fillTheDisk((dir / "filler-3").string());
    const fs::path filler = dir / "filler-1";  // the first fill: most of the disk
    fs::resize_file(filler, fs::file_size(filler) - (256 << 10));
    NewRun third;
    third.name = "third";
    try {
        RunWriter w(db, third);
        ADD_FAILURE() << "a run started without room to store why it might fail";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Io);
        EXPECT_NE(std::string(e.what()).find("is full"), std::string::npos) << e.what();
    }
    {
        RunStore store(db, StoreAccess::ReadOnly);
        const auto runs = store.listRuns();
        ASSERT_EQ(runs.size(), 2u);  // no third run
        for (const RunInfo& run : runs) {
            EXPECT_EQ(run.status, RunStatus::Failed) << run.name;
            EXPECT_NE(run.statusMessage.find("the disk is full"), std::string::npos) << run.name;
        }
    }
    std::system(("umount -l " + dir.string()).c_str());
    fs::remove_all(dir);
}

// Issue 36, item 10: a merge into a new database on a disk too small for it failed and left
// the new database behind.
TEST(FullDisk, AFailedMergeIntoANewTargetLeavesNoTarget) {
    const fs::path dir = scratchDir("storefail-merge");
    const fs::path src = scratchDir("storefail-merge-source");
    const std::string mount = "mount -t tmpfs -o size=2m qklab-full-disk " + dir.string();
    if (::geteuid() != 0 || std::system((mount + " 2>/dev/null").c_str()) != 0)
        GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << mount;
    const std::string shard = (src / "shard.db").string();
    {  // a shard whose checkpoint (3 MiB) does not fit on the target's disk
        auto writer = startedRun(shard, "point-0");
        const fs::path folder = shard + ".checkpoints/run-1";
        fs::create_directories(folder);
        const std::string file = (folder / "step-1.pt").string();
        std::ofstream(file) << std::string(3 << 20, 'w');
        writer->addCheckpoint({1, file, {}});
        writer->finish(RunStatus::Finished);
    }
    const std::string into = (dir / "merged.db").string();
    const Result r = runCli("merge " + shard + " --into " + into, (src / "stderr.txt").string());
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("cannot copy checkpoint"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_empty(dir)) << "left behind in " << dir;
    std::system(("umount -l " + dir.string()).c_str());
    fs::remove_all(dir);
    fs::remove_all(src);
}
