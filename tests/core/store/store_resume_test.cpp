// store_resume_test.cpp — resuming a run: rows from the resume step on are deleted, one resume at a
// time, the newest checkpoint whose file exists, an older checkpoint dropped only after the newer
// row.
#include <gtest/gtest.h>

#include <fstream>

#include "support/store_fixture.h"

using namespace qklab;
using namespace qklab::testsupport;

TEST_F(StoreTest, ResumeDeletesRowsFromStepOn) {
    int64_t id;
    {
        RunWriter w(m_path, NewRun{});
        id = w.runId();
        for (int s = 0; s < 10; ++s) {
            w.addStep(step(s, 10.0 - s));
            w.addProbe(probe(s, 0, -1, s * 10.0));
            w.addHistogram({s, 0, -1, {s}, 0, 0});
            w.addAttentionMap({s, 0, 0, 1, {1.0f}, {}, MapReason::Periodic});
            Spike sp;
            sp.step = s;
            w.addSpike(sp);
        }
        w.addEvent({2, "lr_scale", "{}", "user"});
        w.addEvent({3, "warmup_end", "{}", "config"});
        w.addEvent({7, "lr_scale", "{}", "user"});
        w.addCheckpoint({5, m_path + ".checkpoints/run-" + std::to_string(id) + "/c5", {}});
        w.finish(RunStatus::Stopped, "stopped by user");
    }
    // A later checkpoint's row (the writer itself keeps only the newest one; this is the
    // resume-from-an-older-checkpoint case).
    rawExec("INSERT INTO checkpoints VALUES(" + std::to_string(id) + ", 8, 'c8', '')", m_path);
    {
        RunWriter w(m_path, id, 5);
        RunStore store(m_path);
        RunInfo r = store.run(id);
        EXPECT_EQ(r.status, RunStatus::Running);
        EXPECT_EQ(r.statusMessage, "");
        EXPECT_TRUE(r.finishedAt.empty());
        EXPECT_EQ(r.stepsDone, 5);
        EXPECT_DOUBLE_EQ(r.finalLoss.value(), 6.0);
        EXPECT_DOUBLE_EQ(r.maxLogitRaw.value(), 40.0);
        EXPECT_EQ(store.stepMetrics(id).size(), 5u);
        EXPECT_EQ(store.stepMetrics(id).back().step, 4);
        EXPECT_EQ(store.probeStats(id).size(), 5u);
        EXPECT_EQ(store.histogramSteps(id).back(), 4);
        EXPECT_EQ(store.attentionMapSteps(id).back(), 4);
        EXPECT_EQ(store.spikes(id).size(), 5u);
        auto ev = store.events(id);
        // Events before step 5 are history, whatever their source; the trainer reports config
        // events again when the resumed run reaches them.
        ASSERT_EQ(ev.size(), 2u);
        EXPECT_EQ(ev[0].step, 2);
        EXPECT_EQ(ev[1].step, 3);
        EXPECT_EQ(ev[1].source, "config");
        auto ck = store.checkpoints(id);
        ASSERT_EQ(ck.size(), 1u);
        EXPECT_EQ(ck[0].step, 5);
        EXPECT_EQ(fs::path(ck[0].path).filename(), "c5");

        w.addStep(step(5, 1.5));
        w.finish(RunStatus::Finished);
        r = store.run(id);
        EXPECT_EQ(r.status, RunStatus::Finished);
        EXPECT_EQ(r.stepsDone, 6);
        EXPECT_DOUBLE_EQ(r.finalLoss.value(), 1.5);
    }
    EXPECT_EQ(errorCodeOf([&] { RunWriter w(m_path, id + 100, 0); }), ErrorCode::NotFound);
}

// Issue 10, item 5: two resumes started together both used to be accepted and both wrote the run.
TEST_F(StoreTest, SecondConcurrentResumeIsRefused) {
    {
        RunWriter w(m_path, NewRun{});
        w.finish(RunStatus::Stopped);
    }
    RunStore first(m_path), second(m_path);
    const RunInfo before = first.claimForResume(1);
    EXPECT_EQ(before.status, RunStatus::Stopped);
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { second.claimForResume(1); }, &msg), ErrorCode::InvalidRequest);
    EXPECT_NE(msg.find("already being resumed"), std::string::npos) << msg;
    first.releaseResumeClaim(before);  // the resume could not start: the run is as it was
    EXPECT_EQ(second.run(1).status, RunStatus::Stopped);
    EXPECT_NO_THROW(second.claimForResume(1));
}

// Issue 10, item 3: a kill between deleting an old checkpoint file and committing rows could leave
// a row whose file is gone; resume falls back to the newest checkpoint that exists. Issue 22, item
// 6: the row of a missing file stays (the file may come back; deleting the row made a run whose
// checkpoint was only looked for from the wrong directory unresumable).
TEST_F(StoreTest, ResumeFallsBackToTheNewestCheckpointWhoseFileExists) {
    fs::create_directories(m_path + ".checkpoints/run-1");
    const std::string kept = m_path + ".checkpoints/run-1/step-5.pt";
    std::ofstream(kept) << "weights";
    {
        RunWriter w(m_path, NewRun{});
        w.addCheckpoint({5, kept, {}});
        w.flush();
        // A row whose file is gone; added straight to the table (the writer would drop the
        // step-5 row once the step-10 row is committed).
        sqlite3* raw = nullptr;
        sqlite3_open(m_path.c_str(), &raw);
        sqlite3_exec(raw, "INSERT INTO checkpoints VALUES(1, 10, 'run-1/step-10.pt', '')", nullptr,
                     nullptr, nullptr);
        sqlite3_close(raw);
        w.finish(RunStatus::Interrupted);
    }
    RunStore store(m_path);
    const auto c = store.newestUsableCheckpoint(1);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->step, 5);
    EXPECT_EQ(rawInt("SELECT count(*) FROM checkpoints WHERE step = 10"), 1);
}

// Issue 10, item 3: the writer drops older checkpoints only after the newer one's row is committed.
TEST_F(StoreTest, OlderCheckpointGoesOnlyAfterTheNewerRowIsCommitted) {
    fs::create_directories(m_path + ".checkpoints/run-1");
    const std::string a = m_path + ".checkpoints/run-1/step-5.pt",
                      b = m_path + ".checkpoints/run-1/step-10.pt";
    std::ofstream(a) << "a";
    std::ofstream(b) << "b";
    RunWriter w(m_path, NewRun{});
    w.addCheckpoint({5, a, {}});
    w.flush();
    w.addCheckpoint({10, b, {}});
    EXPECT_TRUE(fs::exists(a));  // buffered, not committed: the old file must stay
    w.flush();
    EXPECT_FALSE(fs::exists(a));
    EXPECT_TRUE(fs::exists(b));
    EXPECT_EQ(rawInt("SELECT count(*) FROM checkpoints"), 1);
}
