// store_runs_test.cpp — the runs of a store: unique names, lookup by id or name, deletion of every
// row, live and abandoned writers, a reader beside the writer, a killed writer's committed rows.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "support/store_fixture.h"

using namespace qklab;
using namespace qklab::testsupport;

TEST_F(StoreTest, NamesAreUniqueAndFindRunTakesIdOrName) {
    NewRun a;
    a.name = "alpha";
    RunWriter wa(m_path, a);
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { RunWriter dup(m_path, a); }, &msg), ErrorCode::InvalidRequest);
    EXPECT_NE(msg.find("'alpha'"), std::string::npos) << msg;

    NewRun b;
    b.name = "7";  // a numeric name that is not an id: found by name
    RunWriter wb(m_path, b);
    RunStore store(m_path);
    EXPECT_EQ(store.findRun("alpha").id, wa.runId());
    EXPECT_EQ(store.findRun(std::to_string(wa.runId())).name, "alpha");
    EXPECT_EQ(store.findRun("7").id, wb.runId());
    EXPECT_EQ(errorCodeOf([&] { store.findRun("beta"); }, &msg), ErrorCode::NotFound);
    EXPECT_NE(msg.find("beta"), std::string::npos) << msg;
    EXPECT_EQ(errorCodeOf([&] { store.run(424242); }), ErrorCode::NotFound);

    EXPECT_EQ(errorCodeOf([&] { store.renameRun(wb.runId(), "alpha"); }, &msg),
              ErrorCode::InvalidRequest);
    EXPECT_NE(msg.find("alpha"), std::string::npos) << msg;
    store.renameRun(wb.runId(), "bravo");
    store.setNotes(wb.runId(), "note");
    store.setTags(wb.runId(), "qk,baseline");
    RunInfo r = store.findRun("bravo");
    EXPECT_EQ(r.notes, "note");
    EXPECT_EQ(r.tags, "qk,baseline");
    EXPECT_EQ(store.maxRunId(), wb.runId());
}

TEST_F(StoreTest, DeleteCascadesToEveryTable) {
    RunWriter keep(m_path, NewRun{});
    keep.addStep(step(0, 1));
    keep.flush();
    int64_t id;
    {
        RunWriter w(m_path, NewRun{});
        id = w.runId();
        w.addStep(step(0, 1));
        w.addProbe(probe(0, 0, -1, 1));
        w.addHistogram({0, 0, -1, {1, 2}, 0, 0});
        w.addAttentionMap({0, 0, 0, 1, {1.0f}, {}, MapReason::Periodic});
        w.addSpike(Spike{});
        w.addEvent({0, "e", "{}", "user"});
        w.addCheckpoint({0, "p", {}});
        w.addQkClip({0, 0, 1, 150.0, 0.5});
        w.finish(RunStatus::Stopped);
    }
    RunStore store(m_path);
    ASSERT_EQ(store.qkClips(id).size(), 1u);
    store.deleteRun(id);
    EXPECT_EQ(errorCodeOf([&] { store.run(id); }), ErrorCode::NotFound);
    for (const char* t : {"step_metrics", "probe_stats", "histograms", "attention_maps", "spikes",
                          "events", "checkpoints", "qk_clips"})
        EXPECT_EQ(rawInt(std::string("SELECT count(*) FROM ") + t +
                         " WHERE run_id = " + std::to_string(id)),
                  0)
            << t;
    EXPECT_EQ(store.stepMetrics(keep.runId()).size(), 1u);
    EXPECT_EQ(errorCodeOf([&] { store.deleteRun(id); }), ErrorCode::NotFound);
}

TEST_F(StoreTest, LiveRunsStayRunningAndAnAbandonedWriterIsInterrupted) {
    RunStore store(m_path);
    int64_t abandoned;
    {
        RunWriter live(m_path, NewRun{});
        EXPECT_EQ(store.markInterruptedRuns(), 0);  // this process is alive
        EXPECT_EQ(store.run(live.runId()).status, RunStatus::Running);
        {
            RunWriter w(m_path, NewRun{});
            abandoned = w.runId();
            w.addStep(step(0, 1));
        }  // destroyed without finish(): flushed, then marked interrupted
        EXPECT_EQ(store.run(abandoned).status, RunStatus::Interrupted);
        EXPECT_EQ(store.stepMetrics(abandoned).size(), 1u);
        live.finish(RunStatus::Finished);
    }
    EXPECT_EQ(store.listRuns().front().status, RunStatus::Finished);
}

TEST_F(StoreTest, ConcurrentReaderSeesOnlyGrowthAndNoLockErrors) {
    constexpr int kBatches = 150, kPerBatch = 20;
    RunWriter w(m_path, NewRun{});
    RunStore reader(m_path);
    int64_t id = w.runId();
    std::atomic<bool> done{false};
    std::string writerError;
    std::thread writer([&] {
        try {
            for (int b = 0; b < kBatches; ++b) {
                for (int i = 0; i < kPerBatch; ++i) {
                    int64_t s = int64_t(b) * kPerBatch + i;
                    w.addStep(step(s, 1.0));
                    w.addProbe(probe(s, 0, -1, 1.0));
                }
                w.flush();
            }
        } catch (const std::exception& e) {
            writerError = e.what();
        }
        done = true;
    });
    size_t last = 0;
    int64_t lastDone = 0, versionBefore = reader.dataVersion();
    EXPECT_EQ(reader.dataVersion(), versionBefore);  // nothing committed yet: unchanged
    int reads = 0, partialReads = 0;
    try {
        while (!done) {
            size_t n = reader.stepMetrics(id).size();
            RunInfo r = reader.run(id);
            EXPECT_GE(n, last);
            EXPECT_GE(r.stepsDone, lastDone);
            EXPECT_EQ(n % kPerBatch, 0u) << "a reader saw half a batch";
            last = n;
            lastDone = r.stepsDone;
            partialReads += n > 0 && n < size_t(kBatches * kPerBatch);
            ++reads;
        }
    } catch (const std::exception& e) {
        ADD_FAILURE() << "reader failed: " << e.what();
    }
    writer.join();
    EXPECT_EQ(writerError, "");
    EXPECT_GT(reads, 0);
    EXPECT_EQ(reader.stepMetrics(id).size(), size_t(kBatches * kPerBatch));
    EXPECT_EQ(reader.run(id).stepsDone, kBatches * kPerBatch);
    EXPECT_NE(reader.dataVersion(), versionBefore);  // the GUI's cue that something changed
    RecordProperty("reads", reads);
    RecordProperty("partialReads", partialReads);
}

// A writer killed mid-run: every committed batch survives, the buffered one is lost, and the
// run reads as running until markInterruptedRuns() sees that its process is gone.
TEST_F(StoreTest, SigkilledWriterKeepsCommittedRows) {
    constexpr int kBatches = 4, kPerBatch = 25;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        close(fds[0]);
        try {
            RunWriter w(m_path, NewRun{});
            for (int b = 0; b < kBatches; ++b) {
                for (int i = 0; i < kPerBatch; ++i) w.addStep(step(b * kPerBatch + i, 1.0));
                w.flush();
            }
            w.addStep(step(kBatches * kPerBatch, 1.0));  // buffered, never committed
            int64_t id = w.runId();
            if (write(fds[1], &id, sizeof id) != sizeof id) _exit(2);
            for (;;) pause();
        } catch (...) {
            _exit(1);
        }
    }
    close(fds[1]);
    int64_t id = 0;
    ssize_t got = read(fds[0], &id, sizeof id);
    close(fds[0]);
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);  // reaped: no zombie that kill(pid, 0) sees
    ASSERT_EQ(got, ssize_t(sizeof id)) << "the child failed before signalling";
    ASSERT_TRUE(WIFSIGNALED(status));

    RunStore store(m_path);
    EXPECT_EQ(store.stepMetrics(id).size(), size_t(kBatches * kPerBatch));
    RunInfo r = store.run(id);
    EXPECT_EQ(r.stepsDone, kBatches * kPerBatch);
    // Reads already show the dead writer's run as interrupted; the row changes only when a
    // writer marks it.
    EXPECT_EQ(r.status, RunStatus::Interrupted);
    EXPECT_EQ(rawInt("SELECT status = 'running' FROM runs WHERE id = " + std::to_string(id)), 1);
    EXPECT_EQ(rawInt("SELECT pid FROM runs WHERE id = " + std::to_string(id)), child);
    EXPECT_EQ(store.markInterruptedRuns(), 1);
    r = store.run(id);
    EXPECT_EQ(r.status, RunStatus::Interrupted);
    EXPECT_NE(r.statusMessage.find(std::to_string(child)), std::string::npos) << r.statusMessage;
    EXPECT_EQ(store.markInterruptedRuns(), 0);
}

// Issue 10, item 12: control characters in a run name broke the list table.
TEST_F(StoreTest, RunNamesWithControlCharactersAreRefused) {
    NewRun nr;
    nr.name = "a\nb";
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { RunWriter w(m_path, nr); }, &msg), ErrorCode::InvalidRequest);
    EXPECT_NE(msg.find("control characters"), std::string::npos) << msg;
    RunWriter w(m_path, NewRun{});
    RunStore store(m_path);
    EXPECT_EQ(errorCodeOf([&] { store.renameRun(1, "tab\there"); }), ErrorCode::InvalidRequest);
    EXPECT_EQ(errorCodeOf([&] { store.renameRun(1, std::string(300, 'x')); }),
              ErrorCode::InvalidRequest);
}
