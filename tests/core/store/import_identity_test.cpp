// import_identity_test.cpp — a UUID is no proof of identity (issue 36, item 1): a crafted file
// that reused one of my runs' UUIDs and claimed more steps took the run over (its rows, its
// checkpoint), and one that reused my sweep's UUID added its runs as my sweep's points. An
// import now updates a run only when the source is provably that run continued, never replaces
// a checkpoint of it, and adds runs to a sweep here only from the same grid.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "qklab/config/sweep.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"
#include "support/hostile_db.h"

using namespace qklab;
using namespace hostile;

namespace {

// Everything stored about run 1 of `db` that an import could change, as one text.
std::string runOne(const std::string& db) {
    return rawText(db,
                   "SELECT name || '|' || status || '|' || steps_done || '|' || notes || '|' || "
                   "(SELECT group_concat(step || ':' || loss, ',') FROM step_metrics WHERE "
                   "run_id = 1) || '|' || (SELECT group_concat(step || ':' || path, ',') FROM "
                   "checkpoints WHERE run_id = 1) FROM runs WHERE id = 1");
}

std::string refusal(const std::string& into, const std::string& src) {
    RunStore store(into);
    try {
        store.importRuns(src);
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidRequest) << e.what();
        return e.what();
    }
    ADD_FAILURE() << src << " was imported";
    return "";
}

// A copy of the database `from` and its checkpoint folder at `to`.
void copyDatabase(const std::string& from, const std::string& to) {
    ASSERT_TRUE(rawExec(from, "PRAGMA wal_checkpoint(TRUNCATE)"));
    fs::copy_file(from, to);
    fs::copy(from + ".checkpoints", to + ".checkpoints", fs::copy_options::recursive);
}

// Steps [from, to) of run `id` of `db`, resumed at `from`, each with loss `loss`; a checkpoint
// file of step `to` holding `weights` when it is not empty.
void resumeRun(const std::string& db, int64_t id, int64_t from, int64_t to, double loss,
               const std::string& weights, RunStatus end) {
    RunWriter w(db, id, from);
    for (int64_t s = from; s < to; ++s) {
        StepMetrics m;
        m.step = s;
        m.loss = loss;
        w.addStep(m);
    }
    if (!weights.empty()) {
        const std::string file =
            db + ".checkpoints/run-" + std::to_string(id) + "/step-" + std::to_string(to) + ".pt";
        std::ofstream(file) << weights;
        w.addCheckpoint({to, file, {}});
    }
    w.finish(end);
}

const char* const kGrid = R"({"name": "grid", "base": {"schedule": {"steps": 10}},
                              "axes": {"optim.lr": [0.001, 0.01]}})";

// The sweep of `definition` (a sweep file's text) under `uuid` in `db`, and a run at `point`.
void sweepWithRun(const std::string& db, const std::string& definition, const std::string& uuid,
                  int64_t point, const std::string& runName) {
    SweepDefinition d = parseSweep(definition, "grid.json");
    d.uuid = uuid;
    SweepInfo s;
    s.uuid = uuid;
    s.name = d.name;
    s.definitionJson = sweepToJson(d).dump();
    s.points = static_cast<int64_t>(d.pointCount());
    int64_t sweepId = 0;
    {
        RunStore store(db);
        sweepId = store.addSweep(s, /*owned=*/false);
    }
    NewRun nr;
    nr.name = runName;
    nr.configJson = "{}";
    nr.sweep = SweepMembership{sweepId, point, "{}"};
    RunWriter w(db, nr);
    StepMetrics m;
    w.addStep(m);
    w.finish(RunStatus::Finished);
}

}  // namespace

// The attack as filed: their run, given my run's UUID and more steps, was "1 updated": my run
// kept its name but got their rows, and my checkpoint was replaced by theirs.
TEST(ImportIdentity, AFileReusingMyRunsUuidIsRefusedAndChangesNothing) {
    TempDir d;
    const std::string mine = d / "mine.db", evil = d / "evil.db";
    writeRun(mine, "mine", RunStatus::Stopped, 3);  // rows 0-2, checkpoint of step 3
    writeRun(evil, "theirs", RunStatus::Finished, 6);
    const std::string uuid = rawText(mine, "SELECT uuid FROM runs WHERE id = 1");
    ASSERT_TRUE(rawExec(evil, "UPDATE runs SET uuid = '" + uuid + "'"));
    const std::string before = runOne(mine);
    const std::string myCheckpoint = mine + ".checkpoints/run-1/step-3.pt";

    // Their rows from step 0 on are not mine: no checkpoint of mine is that early.
    ASSERT_TRUE(rawExec(evil, "UPDATE step_metrics SET loss = 9"));
    std::string why = refusal(mine, evil);
    EXPECT_NE(why.find(evil), std::string::npos) << why;
    EXPECT_NE(why.find("run 'theirs'"), std::string::npos) << why;
    EXPECT_NE(why.find("run 'mine' (1 in " + mine + ")"), std::string::npos) << why;
    EXPECT_NE(why.find("step_metrics rows differ from ours at step 0"), std::string::npos) << why;
    EXPECT_EQ(runOne(mine), before);
    EXPECT_EQ(fileText(myCheckpoint), "weights of mine");

    // Every row of mine copied (as from `export`), but another config: not my run either.
    ASSERT_TRUE(rawExec(evil, "UPDATE step_metrics SET loss = 3.0 + 0.1 * step"));
    ASSERT_TRUE(rawExec(evil, "UPDATE runs SET config_json = '{\"why\": \"mine now\"}'"));
    why = refusal(mine, evil);
    EXPECT_NE(why.find("its config differs from ours"), std::string::npos) << why;
    EXPECT_EQ(runOne(mine), before);
    EXPECT_EQ(fileText(myCheckpoint), "weights of mine");
    EXPECT_EQ(rawInt(mine, "SELECT count(*) FROM runs"), 1);
}

// A copy of my run resumed elsewhere from my newest checkpoint (its steps from there computed
// again, so they differ from mine) and brought back longer updates my run: their rows, my name
// and notes, my checkpoint file as it was (theirs of the same step is not taken) and theirs of
// later steps added. A copy that parted from mine before my newest checkpoint is another run.
TEST(ImportIdentity, AResumedLongerCopyUpdatesMyRunAndNeverReplacesMyCheckpoint) {
    TempDir d;
    const std::string mine = d / "mine.db", copy = d / "copy.db", fork = d / "fork.db";
    writeRun(mine, "mine", RunStatus::Stopped, 3);
    copyDatabase(mine, copy);
    copyDatabase(mine, fork);
    // Theirs of my checkpoint's step holds other bytes: it must not replace mine.
    std::ofstream(copy + ".checkpoints/run-1/step-3.pt") << "their weights of step 3";
    resumeRun(mine, 1, 3, 5, 2.5, "", RunStatus::Interrupted);  // mine went on, then was killed
    { RunStore(mine).setNotes(1, "my notes"); }
    resumeRun(copy, 1, 3, 8, 2.0, "their weights of step 8", RunStatus::Finished);

    RunStore store(mine);
    const ImportResult r = store.importRuns(copy);
    EXPECT_EQ(r.updated, 1);
    EXPECT_EQ(r.imported, 0);
    const RunInfo run = store.run(1);
    EXPECT_EQ(run.name, "mine");
    EXPECT_EQ(run.notes, "my notes");
    EXPECT_EQ(run.stepsDone, 8);
    EXPECT_EQ(run.status, RunStatus::Finished);
    const auto steps = store.stepMetrics(1);
    ASSERT_EQ(steps.size(), 8u);
    EXPECT_DOUBLE_EQ(steps[2].loss, 3.2);  // mine, and theirs: the rows before step 3
    EXPECT_DOUBLE_EQ(steps[4].loss, 2.0);  // theirs
    const auto checkpoints = store.checkpoints(1);
    ASSERT_EQ(checkpoints.size(), 2u);
    EXPECT_EQ(checkpoints[0].step, 3);
    EXPECT_EQ(fileText(checkpoints[0].path), "weights of mine");
    EXPECT_EQ(checkpoints[1].step, 8);
    EXPECT_EQ(fileText(checkpoints[1].path), "their weights of step 8");
    EXPECT_EQ(store.importRuns(copy).skipped, 1);  // once more: nothing changes

    // The fork resumed from step 2 (rows from 2 on differ), before my checkpoint of step 3.
    ASSERT_TRUE(rawExec(fork, "UPDATE checkpoints SET step = 2"));
    resumeRun(fork, 1, 2, 12, 1.0, "", RunStatus::Finished);
    const std::string before = runOne(mine);
    const std::string why = refusal(mine, fork);
    EXPECT_NE(why.find("rows differ from ours at step 2, before our newest checkpoint (step 8)"),
              std::string::npos)
        << why;
    EXPECT_EQ(runOne(mine), before);
}

// The attack on sweeps: their sweep, given my sweep's UUID, made their runs my sweep's points
// in sweep-report. Only a sweep with the same grid (a shard of mine) adds runs to it.
TEST(ImportIdentity, AFileReusingMySweepsUuidWithAnotherGridIsRefused) {
    TempDir d;
    const std::string mine = d / "mine.db", evil = d / "evil.db", shard = d / "shard.db";
    const std::string uuid = "sweep-uuid-1";
    sweepWithRun(mine, kGrid, uuid, 0, "grid point 0");
    sweepWithRun(evil,
                 R"({"name": "grid", "base": {"schedule": {"steps": 10}},
                     "axes": {"optim.lr": [0.5, 0.9]}})",
                 uuid, 1, "their point 1");
    sweepWithRun(shard, kGrid, uuid, 1, "grid point 1");

    const std::string why = refusal(mine, evil);
    EXPECT_NE(why.find("sweep 'grid' (1) has the UUID of sweep 'grid' (1 in " + mine + ")"),
              std::string::npos)
        << why;
    EXPECT_NE(why.find("its grid differs from ours (axes)"), std::string::npos) << why;
    RunStore store(mine);
    ASSERT_EQ(store.sweepRuns(1).size(), 1u);
    EXPECT_EQ(rawInt(mine, "SELECT count(*) FROM runs"), 1);

    // A shard of my sweep (the same grid) brings its point home.
    const ImportResult r = store.importRuns(shard);
    EXPECT_EQ(r.imported, 1);
    ASSERT_EQ(store.sweepRuns(1).size(), 2u);
    EXPECT_EQ(store.sweepRuns(1)[1].name, "grid point 1");
    EXPECT_EQ(store.sweeps().size(), 1u);
}
