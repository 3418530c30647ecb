// compare_test.cpp — comparing stored runs: the config diff names exactly the keys that
// differ, seed twins are grouped, a run's summary is read back from a store with hand-computed
// values, and the summary's columns, JSON and CSV are what the CLI and the app rely on.
#include "qklab/analysis/compare.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "qklab/store/run_export.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"

namespace fs = std::filesystem;
using namespace qklab;
using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Event lrEvent(int64_t step, double factor) {
    Event e;
    e.step = step;
    e.kind = EventKind::LrMultiplier;
    e.args.factor = factor;
    return e;
}

std::vector<std::string> differingKeys(const std::vector<ConfigDiffRow>& rows) {
    std::vector<std::string> keys;
    for (const auto& r : rows)
        if (r.differs) keys.push_back(r.key);
    return keys;
}

const ConfigDiffRow& rowOf(const std::vector<ConfigDiffRow>& rows, const std::string& key) {
    for (const auto& r : rows)
        if (r.key == key) return r;
    throw std::runtime_error("no row " + key);
}

const SummaryColumn& columnOf(const std::string& key) {
    for (const auto& c : summaryColumns())
        if (c.key == key) return c;
    throw std::runtime_error("no column " + key);
}

class CompareStoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = (fs::temp_directory_path() / "qklab-compare-XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        m_dir = tmpl;
        m_path = (m_dir / "runs.db").string();
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }

    static StepMetrics step(int64_t s, double loss, double tokensPerSec, int64_t seqLen,
                            std::optional<double> val = std::nullopt) {
        StepMetrics m;
        m.step = s;
        m.loss = loss;
        m.valLoss = val;
        m.tokensPerSec = tokensPerSec;
        m.seqLen = seqLen;
        return m;
    }
    static ProbeStats probe(int64_t s, int32_t layer, double maxRaw, double maxCapped,
                            double entropy, int32_t head = -1) {
        ProbeStats p;
        p.step = s;
        p.layer = layer;
        p.head = head;
        p.logitMaxRaw = maxRaw;
        p.logitMaxCapped = maxCapped;
        p.entropy = entropy;
        return p;
    }

    // Batch 4, 2 layers, 2 heads; 5 steps (one NaN), probes of 2 layers at steps 0, 2, 4.
    int64_t writeRun(const std::string& name) {
        RunConfig c;
        c.data.batchSize = 4;
        c.model.nLayers = 2;
        c.model.nHeads = 2;
        NewRun nr;  // by field: NewRun gains fields (a sweep's membership)
        nr.name = name;
        nr.configJson = configToJson(c).dump();
        nr.seed = 1337;
        nr.device = "cpu";
        RunWriter w(m_path, nr);
        w.addStep(step(0, 5.0, 1000, 64));
        w.addStep(step(1, 3.5, 4000, 64, 4.0));
        w.addStep(step(2, kNaN, 0, 64));           // no rate: neither in the median nor the time
        w.addStep(step(3, 4.0, 2000, 128, kNaN));  // a NaN validation is no validation
        w.addStep(step(4, 3.8, 3000, 128, 4.1));
        w.addProbe(probe(0, 0, 10, 10, 2.0));
        w.addProbe(probe(0, 1, 12, 12, 2.2));
        w.addProbe(probe(0, 1, 500, 500, 0.1, /*head=*/0));  // a head row: not counted
        w.addProbe(probe(2, 0, 25, 25, 1.8));
        w.addProbe(probe(2, 1, 31, 29, 1.7));   // past 30 at step 2
        w.addProbe(probe(4, 0, 150, 50, 0.5));  // past 100 at step 4
        w.addProbe(probe(4, 1, 40, 30, 1.5));
        Spike a, b;
        a.step = 1;
        a.tier = 2;
        b.step = 3;
        b.tier = 3;
        w.addSpike(a);
        w.addSpike(b);
        // QK-Clip scaled three heads: two at step 2, one at step 4.
        w.addQkClip({2, 0, 0, 120, std::sqrt(100.0 / 120)});
        w.addQkClip({2, 1, 1, 400, 0.5});
        w.addQkClip({4, 0, 1, 150, std::sqrt(100.0 / 150)});
        w.finish(RunStatus::Diverged);
        return w.runId();
    }

    fs::path m_dir;
    std::string m_path;
};

}  // namespace

TEST(ConfigDiffTest, NamesExactlyTheKeysThatDifferWithEachRunsValue) {
    RunConfig a, b;
    b.attention.softcap.c = 30;
    b.events.push_back(lrEvent(6, 0.5));
    const auto rows = configDiff({a, b});
    EXPECT_EQ(differingKeys(rows), (std::vector<std::string>{"attention.softcap.c", "events"}));
    const auto& c = rowOf(rows, "attention.softcap.c");
    EXPECT_EQ(c.values, (std::vector<std::string>{"50.0", "30.0"}));
    const auto& events = rows.back();
    EXPECT_EQ(events.key, "events");
    EXPECT_EQ(events.values, (std::vector<std::string>{
                                 "[]", R"([{"factor":0.5,"kind":"lr_multiplier","step":6}])"}));
    // Every registry key once, in registry order, then events.
    ASSERT_EQ(rows.size(), configFields().size() + 1);
    for (size_t i = 0; i < configFields().size(); ++i)
        EXPECT_EQ(rows[i].key, configFields()[i].key);
    // A value of equal rows is still there: --all shows it.
    EXPECT_EQ(rowOf(rows, "optim.lr").values, (std::vector<std::string>{"0.003", "0.003"}));
    EXPECT_EQ(rowOf(rows, "optim.betas").values,
              (std::vector<std::string>{"[0.9,0.95]", "[0.9,0.95]"}));
}

TEST(ConfigDiffTest, StringsAreBareAndThreeRunsDifferWhenOneDoes) {
    RunConfig a, b, c;
    c.attention.qkNorm = QkNormVariant::Rms;
    c.run.seed = 7;
    const auto rows = configDiff({a, b, c});
    EXPECT_EQ(differingKeys(rows), (std::vector<std::string>{"attention.qk_norm", "run.seed"}));
    EXPECT_EQ(rowOf(rows, "attention.qk_norm").values,
              (std::vector<std::string>{"none", "none", "rms"}));
    EXPECT_EQ(rowOf(rows, "run.seed").values, (std::vector<std::string>{"1337", "1337", "7"}));
}

TEST(ConfigDiffTest, EqualConfigsHaveNoDifference) {
    RunConfig a, b;
    a.events.push_back(lrEvent(10, 2.0));
    b.events.push_back(lrEvent(10, 2.0));
    EXPECT_TRUE(differingKeys(configDiff({a, b})).empty());
    EXPECT_TRUE(differingKeys(configDiff({a})).empty());
    EXPECT_TRUE(configDiff({}).empty());
}

TEST(SeedGroupsTest, TwinsDifferingOnlyInSeedAreGrouped) {
    std::vector<ComparedConfig> c(6);
    c[0].qklab.run.seed = 1;
    c[1].qklab.optim.lr = 1e-2;
    c[1].qklab.run.seed = 1;
    c[2].qklab.run.seed = 2;  // twin of 0
    c[3].qklab.optim.lr = 1e-2;
    c[3].qklab.run.seed = 5;       // twin of 1
    c[4].qklab.model.dModel = 64;  // alone
    c[5].qklab.optim.lr = 2e-2;    // seed and LR differ from 0 and 1: no twin
    c[5].qklab.run.seed = 9;
    const std::vector<std::vector<size_t>> expected{{0, 2}, {1, 3}, {4}, {5}};
    EXPECT_EQ(seedGroups(c), expected);
}

TEST(SeedGroupsTest, EventsCountAndEveryRunHasAGroup) {
    std::vector<ComparedConfig> c(3);
    c[1].qklab.run.seed = 2;
    c[2].qklab.run.seed = 3;
    c[2].qklab.events.push_back(lrEvent(5, 0.5));
    EXPECT_EQ(seedGroups(c), (std::vector<std::vector<size_t>>{{0, 1}, {2}}));
    EXPECT_TRUE(seedGroups({}).empty());
}

// A Python run's user config is its config (issue 38): runs differing only in it are no
// replicates, its keys are diffed and grouped by as user.KEY, nested keys dotted.
TEST(SeedGroupsTest, TheUserConfigCountsAsConfig) {
    std::vector<ComparedConfig> c{{RunConfig{}, json{{"lr", 6e-4}, {"opt", {{"beta2", 0.95}}}}},
                                  {RunConfig{}, json{{"lr", 3e-3}, {"opt", {{"beta2", 0.95}}}}},
                                  {RunConfig{}, json{{"lr", 3e-3}, {"opt", {{"beta2", 0.95}}}}},
                                  {RunConfig{}, nullptr}};
    c[2].qklab.run.seed = 5;
    EXPECT_EQ(seedGroups(c), (std::vector<std::vector<size_t>>{{0}, {1, 2}, {3}}));
    // The user's own top-level seed is a seed, as run.seed; a nested one is a setting.
    std::vector<ComparedConfig> seeds{{RunConfig{}, json{{"lr", 3e-3}, {"seed", 1}}},
                                      {RunConfig{}, json{{"lr", 3e-3}, {"seed", 2}}},
                                      {RunConfig{}, json{{"lr", 3e-3}, {"data", {{"seed", 2}}}}},
                                      {RunConfig{}, json{{"lr", 3e-3}, {"data", {{"seed", 3}}}}}};
    EXPECT_EQ(seedGroups(seeds), (std::vector<std::vector<size_t>>{{0, 1}, {2}, {3}}));
    const auto rows = configDiff({c[0], c[1]});
    EXPECT_EQ(differingKeys(rows), std::vector<std::string>{"user.lr"});
    EXPECT_EQ(rowOf(rows, "user.lr").values, (std::vector<std::string>{"0.0006", "0.003"}));
    EXPECT_EQ(rowOf(rows, "user.lr").jsonValues, (std::vector<json>{6e-4, 3e-3}));
    EXPECT_EQ(rowOf(rows, "user.opt.beta2").values, (std::vector<std::string>{"0.95", "0.95"}));
    EXPECT_EQ(rows.back().key, "events");  // user keys before events
    const auto byLr = groupByKey(c, "user.lr");
    ASSERT_EQ(byLr.size(), 3u);
    EXPECT_EQ(byLr[1].members, (std::vector<size_t>{1, 2}));
    EXPECT_EQ(byLr[2].label, "user.lr=(missing) (1 run)");  // qklab's own run has none
    try {
        groupByKey(c, "lr");
        FAIL() << "a bare user key was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'user.lr'"), std::string::npos) << e.what();
    }
}

// A run trained outside qklab records only what qklab observed (issue 38, item 2): its other
// keys are unknown, not qklab's defaults. They are left out of the diff, a run that has a key
// differs from one that lacks it, and rows stored before (with every default) read the same.
TEST(UnobservedKeysTest, KeysARunDidNotRecordAreUnknownNotDefaults) {
    RunInfo python;
    python.id = 7;
    python.source = "python: hf-gpt2";
    python.configJson = R"({"model": {"n_layers": 2, "n_heads": 4, "d_model": 64},
                            "attention": {"qk_norm": "none"}, "probes": {"every": 10}})";
    const auto unknown = unobservedConfigKeys(python);
    EXPECT_TRUE(unknown.count("optim.lr"));
    EXPECT_TRUE(unknown.count("model.rope"));      // GPT-2 has none; qklab never looked
    EXPECT_TRUE(unknown.count("attention.kind"));  // not stored: unknown
    EXPECT_TRUE(unknown.count("run.seed"));
    EXPECT_FALSE(unknown.count("model.n_layers"));
    EXPECT_FALSE(unknown.count("probes.every"));
    EXPECT_EQ(withoutKeys(json::parse(python.configJson), unknown),
              json::parse(python.configJson));  // nothing stored is unknown here
    // A row stored before: qklab's defaults for every key, of which only the observable stay.
    RunInfo legacy = python;
    legacy.configJson = configToJson(RunConfig{}).dump();
    const json shown = withoutKeys(json::parse(legacy.configJson), unobservedConfigKeys(legacy));
    EXPECT_FALSE(shown.contains("optim"));
    EXPECT_FALSE(shown.contains("data"));
    EXPECT_FALSE(shown["model"].contains("rope"));
    EXPECT_EQ(shown["model"]["n_layers"], RunConfig{}.model.nLayers);
    EXPECT_EQ(shown["attention"]["qk_norm"], "none");
    // qklab's own runs recorded everything.
    RunInfo own = legacy;
    own.source = "qklab";
    EXPECT_TRUE(unobservedConfigKeys(own).empty());

    // The diff: lr is in no row for the Python run; against a qklab run at the default LR the
    // row differs (unknown is not 0.003), and the two are no seed replicates.
    const ComparedConfig ext = comparedConfig(python), mine = comparedConfig(own);
    const auto rows = configDiff({ext, mine});
    EXPECT_EQ(rowOf(rows, "optim.lr").values, (std::vector<std::string>{"", "0.003"}));
    EXPECT_TRUE(rowOf(rows, "optim.lr").differs);
    EXPECT_EQ(rowOf(rows, "optim.lr").jsonValues[0], json(nullptr));
    EXPECT_EQ(seedGroups({ext, mine}).size(), 2u);
    // Two Python runs that recorded the same keys and differ in no known one are replicates.
    RunInfo twin = python;
    twin.id = 8;
    EXPECT_EQ(seedGroups({ext, comparedConfig(twin)}).size(), 1u);
    // Grouping by a key no run recorded says so.
    try {
        groupByKey({ext, comparedConfig(twin)}, "optim.lr");
        FAIL() << "grouped by a key no run recorded";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("none of these runs recorded it"), std::string::npos)
            << e.what();
    }
}

// An unreadable user config: strict throws naming the run, lenient compares it as none.
TEST(SeedGroupsTest, AnUnreadableUserConfigIsNamedOrLeftOut) {
    RunInfo info;
    info.id = 4;
    info.configJson = configToJson(RunConfig{}).dump();
    info.userConfigJson = "[1, 2]";
    EXPECT_TRUE(comparedConfig(info).user.is_null());
    try {
        comparedConfig(info, /*strict=*/true);
        FAIL() << "a user config that is no object was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("run 4's user_config"), std::string::npos) << e.what();
    }
    info.userConfigJson = R"({"lr": 0.1})";
    EXPECT_EQ(comparedConfig(info, true).user, json({{"lr", 0.1}}));
}

// Group by any key: runs with the same value together, groups in order of their first run.
TEST(GroupByKeyTest, RunsWithTheSameValueShareAGroup) {
    std::vector<ComparedConfig> c(5);
    c[0].qklab.optim.lr = 1e-3;
    c[1].qklab.optim.lr = 3e-3;
    c[2].qklab.optim.lr = 1e-3;
    c[3].qklab.optim.lr = 3e-3;
    c[3].qklab.run.seed = 9;  // other keys do not matter
    c[4].qklab.optim.lr = 1e-2;
    c[1].qklab.attention.qkNorm = QkNormVariant::Rms;
    const auto byLr = groupByKey(c, "optim.lr");
    ASSERT_EQ(byLr.size(), 3u);
    EXPECT_EQ(byLr[0].members, (std::vector<size_t>{0, 2}));
    EXPECT_EQ(byLr[1].members, (std::vector<size_t>{1, 3}));
    EXPECT_EQ(byLr[2].members, (std::vector<size_t>{4}));
    EXPECT_EQ(byLr[0].value, "0.001");
    EXPECT_EQ(byLr[0].label, "optim.lr=0.001 (2 runs)");
    EXPECT_EQ(byLr[1].label, "optim.lr=0.003 (2 runs)");
    EXPECT_EQ(byLr[2].label, "optim.lr=0.01 (1 run)");
    const auto byNorm = groupByKey(c, "attention.qk_norm");
    ASSERT_EQ(byNorm.size(), 2u);
    EXPECT_EQ(byNorm[0].members, (std::vector<size_t>{0, 2, 3, 4}));
    EXPECT_EQ(byNorm[1].label, "attention.qk_norm=rms (1 run)");  // strings bare
    // A key equal everywhere: one group; every seed different: every run alone.
    EXPECT_EQ(groupByKey(c, "model.d_model").size(), 1u);
    c[0].qklab.run.seed = 1;
    c[1].qklab.run.seed = 2;
    c[2].qklab.run.seed = 3;
    c[4].qklab.run.seed = 4;
    EXPECT_EQ(groupByKey(c, "run.seed").size(), 5u);
    EXPECT_TRUE(groupByKey({}, "optim.lr").empty());
}

TEST(GroupByKeyTest, EventsGroupWithALabelCutShortAndUnknownKeysAreRefused) {
    std::vector<ComparedConfig> c(3);
    c[0].qklab.events = {lrEvent(5, 0.5), lrEvent(10, 0.5)};
    c[2].qklab.events = c[0].qklab.events;
    const auto byEvents = groupByKey(c, "events");
    ASSERT_EQ(byEvents.size(), 2u);
    EXPECT_EQ(byEvents[0].members, (std::vector<size_t>{0, 2}));
    // 37 characters of the JSON, then "...": a label, not the whole list.
    EXPECT_EQ(byEvents[0].label, R"(events=[{"factor":0.5,"kind":"lr_multiplier"... (2 runs))");
    EXPECT_EQ(byEvents[1].label, "events=[] (1 run)");
    try {
        groupByKey(c, "optim.nope");
        FAIL() << "an unknown key was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidConfig);
        EXPECT_NE(std::string(e.what()).find("'optim.nope'"), std::string::npos) << e.what();
    }
}

TEST_F(CompareStoreTest, SummaryIsReadWithHandComputedValues) {
    const int64_t id = writeRun("a");
    RunStore store(m_path, StoreAccess::ReadOnly);  // a reader: never writes
    const RunSummary s = summarizeRun(store, id);
    EXPECT_EQ(s.runId, id);
    EXPECT_EQ(s.name, "a");
    EXPECT_EQ(s.status, RunStatus::Diverged);
    EXPECT_EQ(s.steps, 5);
    EXPECT_EQ(s.layers, 2);
    EXPECT_EQ(s.heads, 2);
    EXPECT_EQ(s.finalTrainLoss, 3.8);  // the NaN step is skipped
    EXPECT_EQ(s.bestTrainLoss, 3.5);
    EXPECT_EQ(s.finalValLoss, 4.1);  // step 3's NaN validation is skipped
    EXPECT_EQ(s.bestValLoss, 4.0);
    EXPECT_EQ(s.spikes, 2);
    EXPECT_EQ(s.worstTier, 3);
    EXPECT_EQ(s.qkClips, 3);  // head clips, not clipped steps
    EXPECT_EQ(s.firstStepPast30, 2);
    EXPECT_EQ(s.firstStepPast100, 4);  // the head row of 500 at step 0 is not a layer row
    EXPECT_EQ(s.peakRawMax, 150.0);
    EXPECT_EQ(s.peakCappedMax, 50.0);
    ASSERT_TRUE(s.finalEntropy);
    EXPECT_DOUBLE_EQ(*s.finalEntropy, 1.0);  // (0.5 + 1.5) / 2 at step 4
    EXPECT_EQ(s.tokensPerSec, 2500.0);       // median of 1000, 2000, 3000, 4000
    ASSERT_TRUE(s.trainSeconds);
    // 4 x 64 / 1000 + 4 x 64 / 4000 + 4 x 128 / 2000 + 4 x 128 / 3000
    EXPECT_NEAR(*s.trainSeconds, 0.256 + 0.064 + 0.256 + 512.0 / 3000, 1e-12);
    EXPECT_EQ(store.run(id).status, RunStatus::Diverged);

    EXPECT_EQ(columnOf("status").text(s), "diverged");
    EXPECT_FALSE(columnOf("status").number(s));
    EXPECT_EQ(columnOf("steps").text(s), "5");
    EXPECT_EQ(columnOf("final_train_loss").text(s), "3.8");
    EXPECT_EQ(columnOf("first_step_past_30").text(s), "2");
    EXPECT_EQ(columnOf("first_step_past_30").number(s), 2.0);
    EXPECT_EQ(columnOf("train_seconds").text(s), "0.7467");
    EXPECT_EQ(columnOf("tokens_per_s").text(s), "2500");
    EXPECT_EQ(columnOf("qk_clips").text(s), "3");
    EXPECT_STREQ(columnOf("qk_clips").title, "QK clips");
}

// The comparison view summarizes from the rows it read for its plots: the same summary as
// the CLI's read from the store, column by column.
TEST_F(CompareStoreTest, SummaryFromRowsAlreadyReadEqualsTheStoreRead) {
    const int64_t id = writeRun("a");
    RunStore store(m_path, StoreAccess::ReadOnly);
    const RunSummary read = summarizeRun(store, id);
    const RunInfo info = store.run(id);
    const RunSummary fromRows = summarizeRun(info, configAsTrained(info), store.stepMetrics(id),
                                             store.probeStats(id, -1), store.spikes(id));
    EXPECT_EQ(summaryToJson(fromRows), summaryToJson(read));
    EXPECT_EQ(fromRows.layers, read.layers);
    EXPECT_EQ(fromRows.heads, read.heads);
    EXPECT_EQ(fromRows.firstStepPast100, 4);  // and not empty: the rows were used
    // Other rows give another summary: nothing is read from elsewhere.
    const RunSummary noSteps = summarizeRun(info, configAsTrained(info), {}, {}, {});
    EXPECT_EQ(noSteps.steps, 0);
    EXPECT_EQ(noSteps.spikes, 0);
    EXPECT_EQ(noSteps.qkClips, 3);  // the count comes with info, like the run list's
    EXPECT_FALSE(noSteps.peakRawMax);
}

TEST_F(CompareStoreTest, EmptyRunHasNoValuesAndUnknownIdIsNotFound) {
    int64_t id = 0;
    {
        RunWriter w(m_path, NewRun{});
        id = w.runId();
        w.finish(RunStatus::Stopped);
    }
    RunStore store(m_path, StoreAccess::ReadOnly);
    const RunSummary s = summarizeRun(store, id);
    EXPECT_EQ(s.steps, 0);
    EXPECT_FALSE(s.finalTrainLoss || s.bestValLoss || s.tokensPerSec || s.trainSeconds);
    EXPECT_FALSE(s.firstStepPast30 || s.peakRawMax || s.finalEntropy);
    EXPECT_EQ(s.layers, 2);  // the config's model.n_layers without probes
    EXPECT_EQ(columnOf("final_val_loss").text(s), "-");
    EXPECT_EQ(columnOf("first_step_past_30").text(s), "-");  // never probed: unknown
    try {
        summarizeRun(store, id + 1);
        ADD_FAILURE() << "expected NotFound";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::NotFound);
    }
}

TEST_F(CompareStoreTest, NeverPassedIsSaidAsNever) {
    int64_t id = 0;
    {
        RunWriter w(m_path, NewRun{});
        id = w.runId();
        w.addStep(step(0, 5.0, 100, 64));
        w.addProbe(probe(0, 0, 12, 12, 2.0));
        w.finish(RunStatus::Finished);
    }
    RunStore store(m_path, StoreAccess::ReadOnly);
    const RunSummary s = summarizeRun(store, id);
    EXPECT_EQ(columnOf("first_step_past_30").text(s), "never");
    EXPECT_EQ(columnOf("first_step_past_100").text(s), "never");
    // Never passing is the best outcome: +infinity sorts after every step and wins "best";
    // JSON says null and CSV the text.
    EXPECT_EQ(columnOf("first_step_past_30").number(s),
              std::optional<double>(std::numeric_limits<double>::infinity()));
    EXPECT_TRUE(summaryToJson(s)["first_step_past_30"].is_null());
    EXPECT_NE(summaryCsv({s}).find(",never,never,"), std::string::npos) << summaryCsv({s});
    EXPECT_EQ(columnOf("worst_tier").text(s), "0");
}

TEST(SummaryColumnsTest, OneTableInTheDocumentedOrder) {
    const std::vector<std::pair<std::string, int>> expected{{"status", 0},
                                                            {"steps", 0},
                                                            {"final_train_loss", -1},
                                                            {"best_train_loss", -1},
                                                            {"final_val_loss", -1},
                                                            {"best_val_loss", -1},
                                                            {"spikes", -1},
                                                            {"worst_tier", -1},
                                                            {"qk_clips", 0},
                                                            {"first_step_past_30", +1},
                                                            {"first_step_past_100", +1},
                                                            {"peak_raw_max", -1},
                                                            {"peak_capped_max", -1},
                                                            {"final_entropy", +1},
                                                            {"tokens_per_s", +1},
                                                            {"train_seconds", -1}};
    ASSERT_EQ(summaryColumns().size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(summaryColumns()[i].key, expected[i].first);
        EXPECT_EQ(summaryColumns()[i].better, expected[i].second) << expected[i].first;
        EXPECT_STRNE(summaryColumns()[i].title, "");
    }
}

TEST_F(CompareStoreTest, JsonAndCsvCarryEveryColumn) {
    const int64_t id = writeRun(R"(lr=3e-2, "hot")");
    RunStore store(m_path, StoreAccess::ReadOnly);
    const RunSummary s = summarizeRun(store, id);
    const json j = summaryToJson(s);
    EXPECT_EQ(j["run_id"], id);
    EXPECT_EQ(j["name"], R"(lr=3e-2, "hot")");
    EXPECT_EQ(j["status"], "diverged");
    EXPECT_TRUE(j["steps"].is_number_integer());
    EXPECT_EQ(j["steps"], 5);
    EXPECT_EQ(j["best_val_loss"], 4.0);
    EXPECT_EQ(j["first_step_past_100"], 4);
    EXPECT_EQ(j["tokens_per_s"], 2500);
    EXPECT_EQ(j["qk_clips"], 3);
    for (const auto& c : summaryColumns()) EXPECT_TRUE(j.contains(c.key)) << c.key;
    EXPECT_EQ(j.size(), summaryColumns().size() + 2);  // + run_id, name

    RunSummary empty;
    empty.runId = 9;
    empty.name = "plain";
    EXPECT_TRUE(summaryToJson(empty)["final_val_loss"].is_null());
    const std::string csv = summaryCsv({s, empty});
    const std::string header =
        "run_id,name,status,steps,final_train_loss,best_train_loss,final_val_loss,best_val_loss,"
        "spikes,worst_tier,qk_clips,first_step_past_30,first_step_past_100,peak_raw_max,peak_"
        "capped_max,"
        "final_entropy,tokens_per_s,train_seconds\n";
    ASSERT_EQ(csv.substr(0, header.size()), header);
    const std::string row =
        csv.substr(header.size(), csv.find('\n', header.size()) + 1 - header.size());
    EXPECT_EQ(
        row.rfind(std::to_string(id) +
                      R"(,"lr=3e-2, ""hot""",diverged,5,3.8,3.5,4.1,4,2,3,3,2,4,150,50,1,2500,)",
                  0),
        0u)
        << row;
    const std::string last = "9,plain,running,0,,,,,0,0,0,,,,,,,\n";  // missing: empty cells
    ASSERT_GE(csv.size(), last.size());
    EXPECT_EQ(csv.substr(csv.size() - last.size()), last);
}

TEST(ConfigAsTrainedTest, InterventionsBecomeConfigEventsInStepOrder) {
    RunConfig c;
    c.events.push_back(lrEvent(100, 0.5));
    RunInfo info;
    info.id = 4;
    info.configJson = configToJson(c).dump();
    info.interventions = {{200, "softcap", R"({"cap":"tanh","c":30})", "user"},
                          {50, "qk_norm", R"({"variant":"rms"})", "user"}};
    const RunConfig t = configAsTrained(info, /*strict=*/true);
    ASSERT_EQ(t.events.size(), 3u);
    EXPECT_EQ(t.events[0].step, 50);
    EXPECT_EQ(t.events[0].kind, EventKind::QkNorm);
    EXPECT_EQ(t.events[0].args.variant, QkNormVariant::Rms);
    EXPECT_EQ(t.events[0].source, EventSource::Config);
    EXPECT_EQ(t.events[1].step, 100);
    EXPECT_EQ(t.events[1].args.factor, 0.5);
    EXPECT_EQ(t.events[2].kind, EventKind::Softcap);
    EXPECT_EQ(t.events[2].args.c, 30.0);
    // The trained config differs from the stored one in its events only.
    EXPECT_EQ(differingKeys(configDiff({c, t})), std::vector<std::string>{"events"});
}

TEST(ConfigAsTrainedTest, StrictThrowsWhereLenientFallsBack) {
    RunInfo info;
    info.id = 3;
    info.configJson = R"({"optim": {"lr": 0.01}})";
    info.interventions = {{10, "no_such_kind", "{}", "user"},
                          {20, "lr_multiplier", R"({"factor":2})", "user"}};
    const RunConfig lenient = configAsTrained(info);
    EXPECT_EQ(lenient.optim.lr, 0.01);
    ASSERT_EQ(lenient.events.size(), 1u);  // the bad one skipped
    EXPECT_EQ(lenient.events[0].step, 20);
    EXPECT_THROW(configAsTrained(info, true), Error);

    info.interventions.clear();
    info.configJson = "{not json";
    EXPECT_EQ(configAsTrained(info).optim.lr, RunConfig{}.optim.lr);  // the defaults
    try {
        configAsTrained(info, true);
        ADD_FAILURE() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("run 3"), std::string::npos) << e.what();
    }
}
