// store_change_reports_test.cpp — change reports (schema 12, qklab/analysis/change_reports.h):
// stored one per change (step and kind), NaN measures kept, a report made again keeps the last
// word, copied by an import, absent from older files, which a reader does not migrate.
#include <gtest/gtest.h>

#include <cmath>

#include "support/store_fixture.h"

using namespace qklab;
using namespace qklab::testsupport;

namespace {

ChangeReport reportOf(int64_t step, const std::string& kind, double lossAfter) {
    ChangeReport r;
    r.step = step;
    r.kind = kind;
    r.reportStep = step + 19;
    r.lossBefore = 2.0;
    r.lossAfter = lossAfter;
    r.lossZ = (lossAfter - 2.0) / 0.01;
    r.entropyBefore = 2.44;
    r.entropyAfter = 0.055;
    r.maxLogitBefore = 30;
    r.maxLogitAfter = 606;
    r.moved = true;
    r.text = "step " + std::to_string(step) + ", " + kind + ": ...";
    return r;
}

}  // namespace

TEST_F(StoreTest, ChangeReportsRoundTripByStepAndKind) {
    int64_t id = 0;
    {
        RunWriter w(m_path, NewRun{});
        id = w.runId();
        w.addChangeReport(reportOf(120, "softcap", 2.3));  // written out of order
        ChangeReport unprobed = reportOf(80, "softcap", 2.32);
        unprobed.entropyBefore = unprobed.entropyAfter = kNaN;  // no probe in a window
        unprobed.moved = false;
        w.addChangeReport(unprobed);
        w.flush();
        w.addChangeReport(reportOf(80, "dirty_batch", 2.5));
        w.addChangeReport(reportOf(120, "softcap", 2.4));  // made again: the last one stays
        w.finish(RunStatus::Finished);
    }
    RunStore store(m_path, StoreAccess::ReadOnly);
    const auto reports = store.changeReports(id);
    ASSERT_EQ(reports.size(), 3u);
    EXPECT_EQ(reports[0].step, 80);
    EXPECT_EQ(reports[0].kind, "dirty_batch");
    EXPECT_EQ(reports[1].kind, "softcap");
    EXPECT_TRUE(std::isnan(reports[1].entropyBefore));
    EXPECT_TRUE(std::isnan(reports[1].entropyAfter));
    EXPECT_FALSE(reports[1].moved);
    EXPECT_DOUBLE_EQ(reports[1].lossAfter, 2.32);
    EXPECT_EQ(reports[2].step, 120);
    EXPECT_EQ(reports[2].reportStep, 139);
    EXPECT_DOUBLE_EQ(reports[2].lossAfter, 2.4);
    EXPECT_DOUBLE_EQ(reports[2].maxLogitAfter, 606);
    EXPECT_TRUE(reports[2].moved);
    EXPECT_EQ(reports[2].text, "step 120, softcap: ...");
}

// A resume from step 100 drops the reports of changes from it on (the resumed run makes them
// again); an import copies them under the run's new id; a schema-11 file has none and its
// reader leaves it at 11.
TEST_F(StoreTest, ChangeReportsFollowResumeImportAndOlderFiles) {
    const std::string src = (m_dir / "shard.db").string();
    {
        RunWriter w(src, NewRun{});
        w.addChangeReport(reportOf(80, "softcap", 2.3));
        w.addChangeReport(reportOf(120, "softcap", 2.3));
        w.finish(RunStatus::Finished);
    }
    {
        RunWriter resumed(src, 1, 100);
        resumed.finish(RunStatus::Finished);
    }
    {
        RunWriter taken(m_path, NewRun{});  // id 1 is taken here: the import gets id 2
        taken.finish(RunStatus::Finished);
    }
    RunStore store(m_path);
    ASSERT_EQ(store.importRuns(src).imported, 1);
    ASSERT_EQ(store.changeReports(2).size(), 1u);
    EXPECT_EQ(store.changeReports(2)[0].step, 80);
    EXPECT_TRUE(store.changeReports(1).empty());

    rawExec(QKLAB_UNDO_SCHEMA_12 "PRAGMA user_version = 11; PRAGMA wal_checkpoint(TRUNCATE)", src);
    {
        RunStore reader(src, StoreAccess::ReadOnly);
        EXPECT_EQ(reader.schemaVersion(), 11);
        EXPECT_TRUE(reader.changeReports(1).empty());
    }
    EXPECT_EQ(rawInt("PRAGMA user_version", src), 11);
    ASSERT_EQ(store.importRuns(src).imported, 0);  // the same run (its UUID) is there already
}
