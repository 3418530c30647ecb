// store_qk_clips_test.cpp — QK-Clip records (schema 9): stored, counted and exported, kept by a
// resume up to the checkpoint step, copied by an import, absent from older files.
#include <gtest/gtest.h>

#include <cmath>

#include "qklab/store/run_export.h"
#include "support/store_fixture.h"

using namespace qklab;
using namespace qklab::testsupport;

namespace {

QkClip clipOf(int64_t step, int32_t layer, int32_t head, double sMax, double tau = 100) {
    return QkClip{step, layer, head, sMax, std::sqrt(tau / sMax)};
}

}  // namespace

// What the trainer reports through onQkClips is stored per (step, layer, head), read back in
// that order whatever the order written, counted in the run list and exported.
TEST_F(StoreTest, QkClipsRoundTripAndAreCountedAndExported) {
    int64_t id = 0, other = 0;
    {
        NewRun nr;
        nr.configJson = "{}";  // the export parses it
        RunWriter w(m_path, nr);
        id = w.runId();
        w.addStep(step(0, 5.0));
        w.addQkClip(clipOf(7, 1, 3, 400));  // written out of order
        w.addQkClip(clipOf(3, 0, 2, 144));
        w.flush();
        w.addQkClip(clipOf(7, 0, 0, 121));
        w.addQkClip({8, 0, 1, kInf, 0.0});  // an infinite logit: factor 0
        w.finish(RunStatus::Finished);
        RunWriter o(m_path, NewRun{});  // another run's clips stay its own
        other = o.runId();
        o.addQkClip(clipOf(1, 0, 0, 200));
        o.finish(RunStatus::Finished);
    }
    RunStore store(m_path, StoreAccess::ReadOnly);
    const auto clips = store.qkClips(id);
    ASSERT_EQ(clips.size(), 4u);
    EXPECT_EQ(clips[0].step, 3);
    EXPECT_EQ(clips[0].layer, 0);
    EXPECT_EQ(clips[0].head, 2);
    EXPECT_EQ(clips[0].sMax, 144.0);
    EXPECT_DOUBLE_EQ(clips[0].factor, std::sqrt(100.0 / 144.0));
    EXPECT_EQ(clips[1].step, 7);
    EXPECT_EQ(clips[1].layer, 0);  // step, then layer
    EXPECT_EQ(clips[2].layer, 1);
    EXPECT_EQ(clips[2].head, 3);
    EXPECT_DOUBLE_EQ(clips[2].factor, 0.5);
    EXPECT_EQ(clips[3].sMax, kInf);
    EXPECT_EQ(clips[3].factor, 0.0);
    EXPECT_EQ(store.run(id).qkClips, 4);
    EXPECT_EQ(store.run(other).qkClips, 1);
    EXPECT_EQ(store.listRuns()[0].qkClips, 4);

    const auto exported = runExportJson(store, id);
    ASSERT_EQ(exported["qk_clips"].size(), 4u);
    EXPECT_EQ(exported["qk_clips"][2]["step"], 7);
    EXPECT_EQ(exported["qk_clips"][2]["layer"], 1);
    EXPECT_EQ(exported["qk_clips"][2]["head"], 3);
    EXPECT_EQ(exported["qk_clips"][2]["s_max"], 400.0);
    EXPECT_EQ(exported["qk_clips"][2]["factor"], 0.5);
    EXPECT_EQ(exported["qk_clips"][3]["s_max"], "inf");  // JSON has no infinity
    EXPECT_EQ(exported["run"]["qk_clips"], 4);
    EXPECT_EQ(runSummaryJson(store, other)["qk_clips"], 1);
}

// A clip at step s scaled the weights after s's update, so the checkpoint of step 5 (saved
// after step 4) holds clips up to step 4: a resume from it keeps those and drops the rest,
// which the resumed run reports again.
TEST_F(StoreTest, ResumeKeepsTheClipsBeforeTheCheckpointStep) {
    int64_t id = 0;
    {
        RunWriter w(m_path, NewRun{});
        id = w.runId();
        for (int s = 0; s < 8; ++s) {
            w.addStep(step(s, 5.0));
            w.addQkClip(clipOf(s, 0, 0, 120 + s));
            if (s % 2 == 0) w.addQkClip(clipOf(s, 1, 1, 300));
        }
        w.addCheckpoint({5, "c5", {}});
        w.finish(RunStatus::Stopped);
    }
    RunWriter w(m_path, id, 5);
    {
        RunStore store(m_path, StoreAccess::ReadOnly);
        const auto clips = store.qkClips(id);
        ASSERT_EQ(clips.size(), 8u);  // steps 0..4, and layer 1 at steps 0, 2, 4
        EXPECT_EQ(clips.back().step, 4);
        EXPECT_EQ(store.run(id).qkClips, 8);
    }
    // The resumed run clips step 5 again, differently this time: no constraint error.
    w.addStep(step(5, 4.0));
    w.addQkClip(clipOf(5, 0, 0, 500));
    w.finish(RunStatus::Finished);
    RunStore store(m_path, StoreAccess::ReadOnly);
    const auto clips = store.qkClips(id);
    ASSERT_EQ(clips.size(), 9u);
    EXPECT_EQ(clips.back().step, 5);
    EXPECT_EQ(clips.back().sMax, 500.0);
}

// Merging shard databases (and importing a colleague's file) copies a run's clips under its
// new id; a file from before schema 9 imports without any.
TEST_F(StoreTest, ImportCopiesQkClipsAndAnOlderFileHasNone) {
    const std::string src = (m_dir / "shard.db").string();
    {
        RunWriter taken(m_path, NewRun{});  // id 1 is taken here: the import gets id 2
        taken.finish(RunStatus::Finished);
        RunWriter w(src, NewRun{});
        w.addQkClip(clipOf(4, 1, 0, 250));
        w.addQkClip(clipOf(9, 0, 2, 110));
        w.finish(RunStatus::Finished);
    }
    RunStore store(m_path);
    ASSERT_EQ(store.importRuns(src).imported, 1);
    const auto clips = store.qkClips(2);
    ASSERT_EQ(clips.size(), 2u);
    EXPECT_EQ(clips[0].step, 4);
    EXPECT_EQ(clips[0].layer, 1);
    EXPECT_EQ(clips[0].sMax, 250.0);
    EXPECT_DOUBLE_EQ(clips[0].factor, std::sqrt(100.0 / 250.0));
    EXPECT_EQ(clips[1].head, 2);
    EXPECT_EQ(store.run(2).qkClips, 2);
    EXPECT_TRUE(store.qkClips(1).empty());

    const std::string old = (m_dir / "old.db").string();
    {
        RunWriter w(old, NewRun{});
        w.finish(RunStatus::Finished);
    }
    rawExec(QKLAB_UNDO_SCHEMA_9 "PRAGMA user_version = 8; PRAGMA wal_checkpoint(TRUNCATE)", old);
    ASSERT_EQ(store.importRuns(old).imported, 1);
    EXPECT_EQ(store.run(3).qkClips, 0);
    EXPECT_TRUE(store.qkClips(3).empty());
}

TEST_F(StoreTest, SchemaEightFileHasNoClipsForAReaderAndIsMigratedByAWriter) {
    writeRuns(m_path, 1);
    rawExec(QKLAB_UNDO_SCHEMA_9 "PRAGMA user_version = 8; PRAGMA wal_checkpoint(TRUNCATE)", m_path);
    {
        RunStore reader(m_path, StoreAccess::ReadOnly);
        EXPECT_EQ(reader.schemaVersion(), 8);
        EXPECT_TRUE(reader.qkClips(1).empty());
        EXPECT_EQ(reader.run(1).qkClips, 0);
        EXPECT_TRUE(qkClipsJson(reader, 1).empty());
    }
    EXPECT_EQ(rawInt("PRAGMA user_version"), 8);  // the reader did not migrate it
    EXPECT_EQ(rawInt("SELECT count(*) FROM sqlite_master WHERE name = 'qk_clips'"), 0);
    {
        RunWriter w(m_path, 1, 0);  // a writer migrates, then stores clips
        w.addQkClip(clipOf(0, 0, 0, 400));
        w.finish(RunStatus::Finished);
    }
    EXPECT_EQ(rawInt("PRAGMA user_version"), kLatestSchema);
    RunStore store(m_path, StoreAccess::ReadOnly);
    ASSERT_EQ(store.qkClips(1).size(), 1u);
    EXPECT_DOUBLE_EQ(store.qkClips(1)[0].factor, 0.5);
}
