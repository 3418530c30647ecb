// sweep_test.cpp — sweep files and grids, LR sensitivity against hand-computed values, the
// store's sweeps, and importing (merging) runs between files by UUID.
#include "qklab/config/sweep.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "qklab/analysis/sweep_report.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using namespace qklab;
using nlohmann::json;

namespace {

std::string errorOf(const std::string& text) {
    try {
        expandSweep(parseSweep(text, "s.json"));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

const char* const kGrid = R"({
  "base": {"schedule": {"steps": 50}},
  "axes": {"optim.lr": {"log": [1e-3, 1e-1], "points": 3},
           "attention.qk_norm": ["none", "rms"]},
  "seeds": [7, 8],
  "set": {"model.n_layers": 1}})";

}  // namespace

TEST(SweepGrid, LogGridHasExactEndpointsAndEqualRatios) {
    const std::vector<double> g = logGrid(3e-4, 3e-1, 7);
    ASSERT_EQ(g.size(), 7u);
    EXPECT_EQ(g.front(), 3e-4);  // exact, not exp(log(..)) rounding
    EXPECT_EQ(g.back(), 3e-1);
    EXPECT_NEAR(g[2], 3e-3, 1e-12);
    EXPECT_NEAR(g[1], 9.48683e-4, 1e-12);  // 3e-4 * sqrt(10), six significant digits
    for (size_t i = 1; i < g.size(); ++i) EXPECT_NEAR(g[i] / g[i - 1], std::sqrt(10.0), 1e-5);
    const std::vector<double> lin = linearGrid(0.0, 1.0, 5);
    EXPECT_EQ(lin, (std::vector<double>{0.0, 0.25, 0.5, 0.75, 1.0}));
}

TEST(SweepGrid, ProductOfAxesAndSeedsWithSeedsInnermost) {
    const SweepDefinition d = parseSweep(kGrid, "s.json");
    ASSERT_EQ(d.pointCount(), 12u);  // 3 LRs x 2 norms x 2 seeds
    const std::vector<SweepPoint> points = expandSweep(d);
    ASSERT_EQ(points.size(), 12u);
    // Axes in key order (attention.qk_norm, optim.lr), seeds last and fastest.
    EXPECT_EQ(points[0].coords,
              (json{{"attention.qk_norm", "none"}, {"optim.lr", 1e-3}, {"run.seed", 7}}));
    EXPECT_EQ(points[1].coords["run.seed"], 8);
    EXPECT_EQ(points[2].coords["optim.lr"], 1e-2);
    EXPECT_EQ(points[6].coords["attention.qk_norm"], "rms");
    EXPECT_EQ(points[11].coords,
              (json{{"attention.qk_norm", "rms"}, {"optim.lr", 1e-1}, {"run.seed", 8}}));
    // Each config is base + set + coordinates.
    EXPECT_EQ(points[11].config.run.seed, 8);
    EXPECT_DOUBLE_EQ(points[11].config.optim.lr, 0.1);
    EXPECT_EQ(points[11].config.attention.qkNorm, QkNormVariant::Rms);
    EXPECT_EQ(points[11].config.schedule.steps, 50);
    EXPECT_EQ(points[11].config.model.nLayers, 1);
    for (size_t i = 0; i < points.size(); ++i) EXPECT_EQ(points[i].index, int64_t(i));
}

TEST(SweepGrid, ZippedAxesMoveTogether) {
    const SweepDefinition d = parseSweep(R"({
      "axes": {"model.d_model": [32, 64, 96], "model.n_heads": [2, 4, 6],
               "optim.lr": [0.001, 0.01]},
      "zip": [["model.d_model", "model.n_heads"]]})",
                                         "s.json");
    const std::vector<SweepPoint> points = expandSweep(d);
    ASSERT_EQ(points.size(), 6u);  // 3 zipped pairs x 2 LRs, not 3 x 3 x 2
    for (const SweepPoint& p : points)
        EXPECT_EQ(p.coords["model.d_model"].get<int>(), 16 * p.coords["model.n_heads"].get<int>());
    EXPECT_EQ(points[0].coords["model.d_model"], 32);
    EXPECT_EQ(points[5].coords["model.d_model"], 96);
}

TEST(SweepGrid, IntegerKeysGetWholeNumbersFromAGrid) {
    const SweepDefinition d =
        parseSweep(R"({"axes": {"schedule.steps": {"log": [10, 1000], "points": 3}}})", "s.json");
    ASSERT_EQ(d.axes.size(), 1u);
    EXPECT_EQ(d.axes[0].values, (std::vector<json>{10, 100, 1000}));
}

TEST(SweepGrid, NormalisedDefinitionRoundTrips) {
    SweepDefinition d = parseSweep(kGrid, "s.json");
    d.name = "grid";
    d.uuid = newUuid();
    const SweepDefinition back = parseSweep(sweepToJson(d).dump(), "stored");
    EXPECT_EQ(back.uuid, d.uuid);
    EXPECT_EQ(back.name, "grid");
    const auto a = expandSweep(d), b = expandSweep(back);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].coords, b[i].coords);
}

TEST(SweepGrid, InvalidPointNamesAxisValueAndPoint) {
    const std::string e = errorOf(R"({"axes": {"optim.lr": [0.01, -1]}})");
    EXPECT_NE(e.find("axis \"optim.lr\""), std::string::npos) << e;
    EXPECT_NE(e.find("value -1"), std::string::npos) << e;
    EXPECT_NE(e.find("grid point 1"), std::string::npos) << e;
    // A wrong type for a choice key, at point 0.
    const std::string t = errorOf(R"({"axes": {"attention.qk_norm": ["nonsense"]}})");
    EXPECT_NE(t.find("attention.qk_norm"), std::string::npos) << t;
    EXPECT_NE(t.find("nonsense"), std::string::npos) << t;
    EXPECT_NE(t.find("grid point 0"), std::string::npos) << t;
}

TEST(SweepGrid, MalformedFilesNameTheField) {
    EXPECT_NE(errorOf("{").find("not valid JSON"), std::string::npos);
    EXPECT_NE(errorOf(R"({"axis": {}})").find("unknown field \"axis\""), std::string::npos);
    EXPECT_NE(errorOf(R"({"axes": {"optim.lrr": [1]}})").find("did you mean \"optim.lr\""),
              std::string::npos);
    EXPECT_NE(errorOf(R"({"axes": {"optim.lr": {"log": [0, 1], "points": 3}}})").find("> 0"),
              std::string::npos);
    EXPECT_NE(errorOf(R"({"axes": {"optim.lr": {"log": [1e-3, 1], "points": 0}}})")
                  .find("optim.lr\".points"),
              std::string::npos);
    EXPECT_NE(errorOf(R"({"axes": {"optim.lr": [1e-3], "model.n_heads": [2, 4]},
                          "zip": [["optim.lr", "model.n_heads"]]})")
                  .find("same number of values"),
              std::string::npos);
    EXPECT_NE(errorOf(R"({"axes": {"optim.lr": [1e-3]}, "zip": [["optim.lr", "x.y"]]})")
                  .find("\"x.y\" is not an axis"),
              std::string::npos);
    EXPECT_NE(errorOf(R"({"axes": {"optim.lr": [1e-3]}, "seeds": [1, 1]})").find("listed twice"),
              std::string::npos);
    EXPECT_NE(errorOf(R"({"axes": {}})").find("at least one axis"), std::string::npos);
    EXPECT_NE(errorOf(R"({"axes": {"optim.lr": [1]}, "base": "no-such-preset.json"})")
                  .find("no-such-preset.json"),
              std::string::npos);
}

TEST(SweepGrid, BaseFileIsResolvedNextToTheSweepFile) {
    const fs::path dir = fs::temp_directory_path() / ("qklab-sweep-" + std::to_string(getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "base.json") << R"({"optim": {"lr": 0.005}, "schedule": {"steps": 90}})";
    std::ofstream(dir / "lr.json") << R"({"base": "base.json", "axes": {"run.seed": [1, 2]}})";
    const SweepDefinition d = loadSweepFile((dir / "lr.json").string());
    EXPECT_EQ(d.name, "lr");  // the file's stem
    const auto points = expandSweep(d);
    ASSERT_EQ(points.size(), 2u);
    EXPECT_DOUBLE_EQ(points[1].config.optim.lr, 0.005);
    EXPECT_EQ(points[1].config.schedule.steps, 90);
    EXPECT_EQ(points[1].config.run.seed, 2);
    fs::remove_all(dir);
}

// Wortsman's sensitivity by hand: initial loss 5.5; LR 1e-3 -> 3.0, 1e-2 -> 2.5, 1e-1 diverged
// (counts as 5.5), 1.0 -> 7.0 (clipped to 5.5). Best 2.5; mean excess (0.5 + 0 + 3 + 3) / 4.
TEST(LrSensitivity, HandComputedWithADivergedPoint) {
    const double nan = std::nan("");
    const LrCurve c = lrCurve({{1e-1, {nan}, {500}, 0},
                               {1e-3, {3.0}, {4}, 0},
                               {1.0, {7.0}, {}, 0},
                               {1e-2, {2.5}, {9}, 0}},
                              5.5, 0.6);
    ASSERT_EQ(c.points.size(), 4u);
    EXPECT_EQ(c.points[0].lr, 1e-3);  // sorted by LR
    EXPECT_DOUBLE_EQ(c.bestLoss, 2.5);
    EXPECT_DOUBLE_EQ(c.sensitivity, (0.5 + 0.0 + 3.0 + 3.0) / 4.0);
    EXPECT_EQ(c.points[2].diverged, 1);
    EXPECT_DOUBLE_EQ(c.points[2].mean, 5.5);
    EXPECT_DOUBLE_EQ(c.points[3].mean, 5.5);
    EXPECT_EQ(*c.points[2].peakRawLogit, 500);
    // Stable: 1e-3 (3.0 <= 2.5 + 0.6) and 1e-2; 1e-1 diverged; 1.0 ended far above the best.
    EXPECT_TRUE(c.points[0].stable);
    EXPECT_FALSE(c.points[2].stable);
    EXPECT_FALSE(c.points[3].stable);
    ASSERT_TRUE(c.maxStableLr.has_value());
    EXPECT_EQ(*c.maxStableLr, 1e-2);
    EXPECT_FALSE(c.maxStableLrIsLowerBound);  // larger LRs were tested and failed
    EXPECT_EQ(maxStableLrText(c, 3), "0.01");
}

TEST(LrSensitivity, AStableLargestLrMakesTheMaxStableLrALowerBound) {
    // Both LRs end near the best: the grid never found the edge, so "max stable LR 0.03" would
    // claim more than was measured.
    const LrCurve c = lrCurve({{1e-2, {3.0}, {}, 0}, {3e-2, {2.95}, {}, 0}}, 5.5, 0.1);
    ASSERT_TRUE(c.maxStableLr.has_value());
    EXPECT_EQ(*c.maxStableLr, 3e-2);
    EXPECT_TRUE(c.maxStableLrIsLowerBound);
    EXPECT_EQ(maxStableLrText(c, 3), "\u2265 0.03");
    EXPECT_EQ(maxStableLrText(lrCurve({{1e-3, {std::nan("")}, {}, 0}}, 5.5, 1), 3), "none");
}

TEST(LrSensitivity, SeedsAreAveragedAndOneDivergedSeedMakesAnLrUnstable) {
    const double nan = std::nan("");
    const LrCurve c = lrCurve({{1e-3, {3.0, 3.2}, {}, 0}, {1e-2, {2.4, nan}, {}, 1}}, 5.5, 10.0);
    ASSERT_EQ(c.points.size(), 2u);
    EXPECT_DOUBLE_EQ(c.points[0].mean, 3.1);
    EXPECT_DOUBLE_EQ(c.points[1].mean, (2.4 + 5.5) / 2);  // 3.95
    EXPECT_DOUBLE_EQ(c.points[1].min, 2.4);
    EXPECT_DOUBLE_EQ(c.points[1].max, 5.5);
    EXPECT_EQ(c.points[1].pending, 1);
    EXPECT_DOUBLE_EQ(c.bestLoss, 3.1);
    EXPECT_DOUBLE_EQ(c.sensitivity, (0 + 0.85) / 2);
    EXPECT_EQ(*c.maxStableLr, 1e-3);  // a wide margin does not excuse a diverged seed
    // A margin of 0 keeps only the best LR.
    EXPECT_EQ(*lrCurve({{1e-3, {3.0}, {}, 0}, {1e-2, {2.9}, {}, 0}}, 5.5, 0).maxStableLr, 1e-2);
    EXPECT_FALSE(lrCurve({{1e-3, {nan}, {}, 0}}, 5.5, 1).maxStableLr.has_value());
}

// ---- the store: sweeps, reports, import ------------------------------------------------------

namespace {

class SweepStoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        m_dir = fs::temp_directory_path() /
                ("qklab-sweepstore-" + std::to_string(getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
    }
    void TearDown() override { fs::remove_all(m_dir); }
    std::string path(const std::string& name) const { return (m_dir / name).string(); }

    // A 2 LR x 2 seed sweep definition; stored in `db` (owned or as a shard's record).
    static SweepDefinition definition(const std::string& uuid) {
        SweepDefinition d =
            parseSweep(R"({"axes": {"optim.lr": [0.001, 0.01]}, "seeds": [1, 2]})", "lr.json");
        d.name = "lr";
        d.uuid = uuid;
        return d;
    }
    static int64_t addSweep(const std::string& db, const SweepDefinition& d, bool owned) {
        RunStore store(db);
        SweepInfo s;
        s.uuid = d.uuid;
        s.name = d.name;
        s.definitionJson = sweepToJson(d).dump();
        s.points = static_cast<int64_t>(d.pointCount());
        return store.addSweep(s, owned);
    }
    // A run of grid point `point`: 3 steps whose losses are first, mid, last.
    static int64_t writePoint(const std::string& db, int64_t sweepId, const SweepPoint& p,
                              RunStatus status, double first, double last) {
        NewRun nr;
        nr.name = sweepRunName("lr", p.index, 4, p.coords);
        nr.configJson = configToJson(p.config).dump();
        nr.sweep = SweepMembership{sweepId, p.index, p.coords.dump()};
        RunWriter w(db, nr);
        for (int64_t step = 0; step < 3; ++step) {
            StepMetrics m;
            m.step = step;
            m.loss = step == 0 ? first : step == 2 ? last : (first + last) / 2;
            w.addStep(m);
        }
        ProbeStats ps;
        ps.step = 2;
        ps.layer = 0;
        ps.head = -1;
        ps.logitMaxRaw = 10.0 + static_cast<double>(p.index);
        w.addProbe(ps);
        w.finish(status);
        return w.runId();
    }
    fs::path m_dir;
};

}  // namespace

TEST_F(SweepStoreTest, AddSweepIsFoundByUuidAndRefusesATakenName) {
    const std::string db = path("a.db");
    const SweepDefinition d = definition(newUuid());
    const int64_t id = addSweep(db, d, true);
    EXPECT_EQ(addSweep(db, d, false), id);  // same UUID: the same sweep (a shard adds it again)
    try {
        addSweep(db, definition(newUuid()), true);
        FAIL() << "a second sweep named 'lr' was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidRequest);
        EXPECT_NE(std::string(e.what()).find("'lr' already exists"), std::string::npos);
    }
    RunStore store(db, StoreAccess::ReadOnly);
    ASSERT_EQ(store.sweeps().size(), 1u);
    EXPECT_EQ(store.findSweep("lr").id, id);
    EXPECT_EQ(store.findSweep(std::to_string(id)).uuid, d.uuid);
    EXPECT_EQ(store.sweep(id).status, "running");  // owned by this live process
    EXPECT_THROW(store.findSweep("nope"), Error);
}

TEST_F(SweepStoreTest, ReportHasOnePointPerGridPointAndTheHandComputedCurve) {
    const std::string db = path("r.db");
    const SweepDefinition d = definition(newUuid());
    const int64_t id = addSweep(db, d, true);
    const auto points = expandSweep(d);  // lr 0.001 seeds 1,2; lr 0.01 seeds 1,2
    writePoint(db, id, points[0], RunStatus::Finished, 5.0, 3.0);
    writePoint(db, id, points[1], RunStatus::Finished, 5.2, 3.4);
    writePoint(db, id, points[2], RunStatus::Diverged, 5.4, 9.0);
    // points[3] not run yet.
    RunStore store(db, StoreAccess::ReadOnly);
    const SweepReport r = sweepReport(store, id, SweepReportOptions{});
    ASSERT_EQ(r.points.size(), 4u);
    EXPECT_EQ(r.finished, 2);
    EXPECT_EQ(r.diverged, 1);
    EXPECT_EQ(r.pending, 1);
    EXPECT_EQ(r.points[3].state(), "pending");
    EXPECT_DOUBLE_EQ(r.initialLoss, 5.2);  // median of the first-step losses 5.0, 5.2, 5.4
    ASSERT_EQ(r.configurations.size(), 1u);
    const LrCurve& c = r.configurations[0].curve;
    ASSERT_EQ(c.points.size(), 2u);
    EXPECT_DOUBLE_EQ(c.points[0].mean, 3.2);  // (3.0 + 3.4) / 2
    EXPECT_DOUBLE_EQ(c.points[1].mean, 5.2);  // the diverged seed counts as the initial loss
    EXPECT_EQ(c.points[1].pending, 1);
    EXPECT_DOUBLE_EQ(c.sensitivity, (0 + 2.0) / 2);
    EXPECT_EQ(*c.maxStableLr, 0.001);
    EXPECT_EQ(*c.points[1].peakRawLogit, 12.0);  // point 2's probe
    const json j = sweepReportJson(r);
    EXPECT_EQ(j["configurations"][0]["max_stable_lr"], 0.001);
    EXPECT_EQ(j["configurations"][0]["max_stable_lr_is_lower_bound"], false);  // 0.01 failed
    EXPECT_EQ(j["configurations"][0]["lr"], (json{0.001, 0.01}));
    EXPECT_EQ(j["points"][2]["state"], "diverged");
}

TEST_F(SweepStoreTest, MergingShardsKeepsIdsUniqueOverwritesNothingAndIsIdempotent) {
    const SweepDefinition d = definition(newUuid());
    const auto points = expandSweep(d);
    for (int i = 0; i < 4; ++i) {  // one shard per point, as the Slurm array writes them
        const std::string shard = path("point-" + std::to_string(i) + ".db");
        writePoint(shard, addSweep(shard, d, false), points[i], RunStatus::Finished, 5.0,
                   3.0 + 0.1 * i);
    }
    const std::string into = path("merged.db");
    {  // the destination already has an unrelated run named like point 0's
        NewRun nr;
        nr.name = sweepRunName("lr", 0, 4, points[0].coords);
        RunWriter w(into, nr);
        StepMetrics m;
        m.loss = 4.5;
        w.addStep(m);
        w.finish(RunStatus::Finished);
    }
    RunStore store(into);
    for (int i = 0; i < 4; ++i) {
        const ImportResult r = store.importRuns(path("point-" + std::to_string(i) + ".db"));
        EXPECT_EQ(r.imported, 1);
        EXPECT_EQ(r.skipped, 0);
        EXPECT_EQ(r.renamed.size(), i == 0 ? 1u : 0u);
    }
    const auto runs = store.listRuns();
    ASSERT_EQ(runs.size(), 5u);
    EXPECT_EQ(runs[0].name, sweepRunName("lr", 0, 4, points[0].coords));  // untouched
    EXPECT_DOUBLE_EQ(*runs[0].finalLoss, 4.5);
    EXPECT_FALSE(runs[0].sweep.has_value());
    std::set<int64_t> ids;
    std::set<std::string> uuids;
    for (const auto& r : runs) {
        ids.insert(r.id);
        uuids.insert(r.uuid);
    }
    EXPECT_EQ(ids.size(), 5u);
    EXPECT_EQ(uuids.size(), 5u);
    // The sweep is reassembled from the shards: one record, every point, finished.
    ASSERT_EQ(store.sweeps().size(), 1u);
    const SweepInfo s = store.sweeps()[0];
    EXPECT_EQ(s.uuid, d.uuid);
    EXPECT_EQ(s.status, "finished");
    const auto members = store.sweepRuns(s.id);
    ASSERT_EQ(members.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(members[i].sweep->point, i);
        EXPECT_EQ(json::parse(members[i].sweep->coordsJson), points[i].coords);
        EXPECT_NEAR(*members[i].finalLoss, 3.0 + 0.1 * i, 1e-12);
        EXPECT_EQ(store.stepMetrics(members[i].id).size(), 3u);  // every row came along
        EXPECT_EQ(store.probeStats(members[i].id).size(), 1u);
    }
    // Merging again changes nothing.
    const int64_t version = store.dataVersion();
    for (int i = 0; i < 4; ++i) {
        const ImportResult again = store.importRuns(path("point-" + std::to_string(i) + ".db"));
        EXPECT_EQ(again.imported, 0);
        EXPECT_EQ(again.skipped, 1);
    }
    EXPECT_EQ(store.listRuns().size(), 5u);
    EXPECT_EQ(store.sweeps().size(), 1u);
    (void)version;
    EXPECT_THROW(store.importRuns(into), Error);  // not into itself
}

TEST_F(SweepStoreTest, ImportingReadsTheSourceWithoutWritingIt) {
    const std::string src = path("src.db");
    const SweepDefinition d = definition(newUuid());
    writePoint(src, addSweep(src, d, true), expandSweep(d)[0], RunStatus::Finished, 5, 3);
    const auto before = fs::last_write_time(src);
    const auto size = fs::file_size(src);
    fs::permissions(src, fs::perms::owner_read, fs::perm_options::replace);
    RunStore store(path("dst.db"));
    EXPECT_EQ(store.importRuns(src).imported, 1);
    EXPECT_EQ(fs::last_write_time(src), before);
    EXPECT_EQ(fs::file_size(src), size);
    // The source sweep was owned by a live process (this one): the copy is nobody's, partial
    // until all 4 points are in.
    EXPECT_EQ(store.sweeps()[0].status, "partial");
}

TEST(SweepGrid, EveryShippedSweepExpands) {
    int count = 0;
    for (const auto& entry :
         fs::directory_iterator(qklab::testpaths::source("/experiments/sweeps"))) {
        if (entry.path().extension() != ".json") continue;
        const SweepDefinition d = loadSweepFile(entry.path().string());
        EXPECT_GT(d.why.size(), 40u) << entry.path();
        EXPECT_EQ(expandSweep(d).size(), d.pointCount()) << entry.path();
        ++count;
    }
    EXPECT_GE(count, 3);
}

// sweep --twins: every point with and without the sweep's skip-step policy, from the same
// seed; a stored definition read back gives the same points (the workers read that one).
TEST(SweepTwins, EveryPointTwiceWithThePolicyAndWithout) {
    SweepDefinition d = parseSweep(R"({
      "base": {"schedule": {"steps": 50}},
      "axes": {"optim.lr": [0.01, 0.1], "attention.qk_norm": ["none", "rms"]},
      "seeds": [1, 2], "set": {"optim.skip_step": "sigma"}})",
                                   "s.json");
    d.name = "twins";
    addTwinsAxis(d);
    const std::vector<SweepPoint> points = expandSweep(d);
    ASSERT_EQ(points.size(), 16u);  // 2 LRs x 2 norms x 2 policies x 2 seeds
    std::map<std::string, int> policies;
    for (const SweepPoint& p : points) {
        ++policies[p.coords["optim.skip_step"].get<std::string>()];
        EXPECT_EQ(nameOf(p.config.optim.skipStep), p.coords["optim.skip_step"]);
    }
    EXPECT_EQ(policies, (std::map<std::string, int>{{"off", 8}, {"sigma", 8}}));
    EXPECT_FALSE(d.set.contains("optim.skip_step"));
    const std::vector<SweepPoint> stored =
        expandSweep(parseStoredSweep(sweepToJson(d).dump(), "stored"));
    ASSERT_EQ(stored.size(), points.size());
    for (size_t i = 0; i < points.size(); ++i) EXPECT_EQ(stored[i].coords, points[i].coords) << i;
}

TEST(SweepTwins, ASweepWithoutAPolicyOrWithItsAxisIsRefused) {
    SweepDefinition none = parseSweep(R"({"axes": {"optim.lr": [0.01, 0.1]}})", "s.json");
    try {
        addTwinsAxis(none);
        FAIL() << "no policy";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("turns no skip-step policy on"), std::string::npos)
            << e.what();
    }
    SweepDefinition axis = parseSweep(
        R"({"axes": {"optim.lr": [0.01], "optim.skip_step": ["off", "sigma"]}})", "s.json");
    EXPECT_THROW(addTwinsAxis(axis), Error);
    // The policy can come from the base as well.
    SweepDefinition base =
        parseSweep(R"({"base": {"optim": {"skip_step": "forecast"}, "probes": {"every": 2}},
                      "axes": {"optim.lr": [0.01]}})",
                   "s.json");
    addTwinsAxis(base);
    EXPECT_EQ(expandSweep(base)[1].config.optim.skipStep, SkipStepPolicy::Forecast);
    EXPECT_EQ(expandSweep(base)[0].config.optim.skipStep, SkipStepPolicy::Off);
}
