// store_test.cpp — the SQLite run store: records round-trip bit for bit (NaN losses and
// histogram counts included), files are created, migrated and refused as they should be, a
// reader and the writer coexist, and a killed writer leaves its committed batches behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "../core/src/store/sqlite_db.h"  // the RAII layer is internal to core; tested here too
#include "qklab/error.h"
#include "qklab/run_export.h"
#include "qklab/run_store.h"
#include "qklab/run_writer.h"

namespace fs = std::filesystem;
using namespace qklab;

constexpr int kLatestSchema = 9;  // 4: histograms.nan, 5: logit_alarms, 6: map bytes,
                                  // 7: comparisons, 8: sweeps and run UUIDs, 9: qk_clips

// Turns a file back into what a schema-8 build wrote (prefix of every older downgrade).
#define QKLAB_UNDO_SCHEMA_9 "DROP TABLE qk_clips; "
// Turns a file back into what a schema-7 build wrote (prefix of every older downgrade).
#define QKLAB_UNDO_SCHEMA_8                                                                 \
    QKLAB_UNDO_SCHEMA_9                                                                     \
    "DROP INDEX runs_by_sweep; DROP INDEX runs_by_uuid; ALTER TABLE runs DROP COLUMN "      \
    "sweep_coords; ALTER TABLE runs DROP COLUMN sweep_point; ALTER TABLE runs DROP COLUMN " \
    "sweep_id; ALTER TABLE runs DROP COLUMN uuid; DROP TABLE sweeps; "

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

class StoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = (fs::temp_directory_path() / "qklab-store-XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        m_dir = tmpl;
        m_path = (m_dir / "runs.db").string();
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }

    // A second, raw connection: the tests check the file itself, not only the store's view.
    int64_t rawInt(const std::string& sql, const std::string& path = {}) {
        sqlite3* db = nullptr;
        EXPECT_EQ(sqlite3_open((path.empty() ? m_path : path).c_str(), &db), SQLITE_OK);
        sqlite3_stmt* st = nullptr;
        EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
        int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
        sqlite3_finalize(st);
        sqlite3_close(db);
        return v;
    }
    std::string rawText(const std::string& sql, const std::string& path = {}) {
        sqlite3* db = nullptr;
        EXPECT_EQ(sqlite3_open((path.empty() ? m_path : path).c_str(), &db), SQLITE_OK);
        sqlite3_stmt* st = nullptr;
        EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
        std::string v;
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        sqlite3_close(db);
        return v;
    }
    void rawExec(const std::string& sql, const std::string& path) {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sql;
        sqlite3_close(db);
    }

    static StepMetrics step(int64_t s, double loss) {
        StepMetrics m;
        m.step = s;
        m.loss = loss;
        m.gradNorm = 1.0 + s;
        m.lr = 3e-4;
        m.seqLen = 64;
        return m;
    }
    static ProbeStats probe(int64_t s, int32_t layer, int32_t head, double maxRaw) {
        ProbeStats p;
        p.step = s;
        p.layer = layer;
        p.head = head;
        p.logitMaxRaw = maxRaw;
        p.logitMaxCapped = maxRaw / 2;
        return p;
    }

    fs::path m_dir;
    std::string m_path;
};

template <typename F>
ErrorCode errorCodeOf(F&& f, std::string* message = nullptr) {
    try {
        f();
    } catch (const Error& e) {
        if (message) *message = e.what();
        return e.code();
    }
    ADD_FAILURE() << "expected a qklab::Error";
    return ErrorCode::Internal;
}

}  // namespace

TEST(RecordsTest, StatusAndSpikeKindNamesRoundTrip) {
    for (RunStatus s : {RunStatus::Running, RunStatus::Finished, RunStatus::Diverged,
                        RunStatus::Stopped, RunStatus::Interrupted, RunStatus::Failed})
        EXPECT_EQ(runStatusFromString(toString(s)), s);
    EXPECT_STREQ(toString(RunStatus::Interrupted), "interrupted");
    EXPECT_STREQ(toString(SpikeKind::QkRunaway), "qk_runaway");
    EXPECT_STREQ(toString(SpikeKind::DataOrAccumulation), "data_or_accumulation");
    for (SpikeKind k : {SpikeKind::QkRunaway, SpikeKind::TokenSpike, SpikeKind::DataOrAccumulation,
                        SpikeKind::HighLogits})
        EXPECT_EQ(spikeKindFromString(toString(k)), k);
    EXPECT_STREQ(toString(SpikeKind::HighLogits), "high_logits");
    EXPECT_STREQ(spikeKindTitle(SpikeKind::HighLogits), "logits high, no jump");
    std::string msg;
    EXPECT_EQ(errorCodeOf([] { runStatusFromString("exploded"); }, &msg), ErrorCode::Unsupported);
    EXPECT_NE(msg.find("exploded"), std::string::npos) << msg;
    EXPECT_EQ(errorCodeOf([] { spikeKindFromString("Token_Spike"); }), ErrorCode::Unsupported);
}

// Percentile columns are named "_sampled" exactly when a layer has more values than the
// sample: the default model's logits (16 x 4 x 128*129/2 = 528,384) but not its q/k vectors
// (16 x 4 x 128 = 8,192), and nothing once probes.exact_percentiles is on.
TEST(RunExportTest, SampledPercentilesAreNamedInTheCsv) {
    StepMetrics m;
    ProbeStats p;
    const auto header = [&](const RunConfig& c) {
        const std::string csv = runCsv({m}, {p}, c);
        return csv.substr(0, csv.find('\n')) + ",";
    };
    RunConfig c;
    EXPECT_NE(header(c).find(",layer0_logit_p99_raw_sampled,"), std::string::npos);
    EXPECT_NE(header(c).find(",layer0_logit_p99_capped_sampled,"), std::string::npos);
    EXPECT_NE(header(c).find(",layer0_q_raw_norm_p90,"), std::string::npos);
    EXPECT_NE(header(c).find(",layer0_logit_max_raw,"), std::string::npos);
    c.probes.exactPercentiles = true;
    EXPECT_EQ(header(c).find("_sampled"), std::string::npos);
    RunConfig tiny;  // 4 x 2 x 32*33/2 = 4,224 logits: every value is used
    tiny.data.batchSize = 4;
    tiny.model.nHeads = 2;
    tiny.model.seqLen = 32;
    EXPECT_EQ(header(tiny).find("_sampled"), std::string::npos);
    // A context switch to 256 makes the longest context count.
    tiny.events = {eventFromJson({{"step", 1}, {"kind", "context_length"}, {"seq_len", 256}}, "t")};
    EXPECT_NE(header(tiny).find(",layer0_logit_p99_raw_sampled,"), std::string::npos);
}

TEST_F(StoreTest, EveryRecordTypeRoundTrips) {
    NewRun nr;
    nr.name = "roundtrip";
    nr.configJson = R"({"model":{"layers":2}})";
    nr.seed = 1234;
    nr.device = "cpu";
    nr.torchVersion = "2.1.0";
    nr.appVersion = "0.1.0+abc";
    int64_t id;
    {
        RunWriter w(m_path, nr);
        id = w.runId();
        StepMetrics a = step(0, 2.5);
        a.valLoss = 2.75;
        a.alpha = 0.25;
        a.softcapC = 30;
        a.tokensPerSec = 12345.5;
        a.attentionPath = "fused";
        StepMetrics b = step(1, 2.25);
        b.valLoss = kNaN;  // validated, and it diverged
        StepMetrics c = step(2, kNaN);
        c.gradNorm = kInf;
        w.addStep(a);
        w.addStep(b);
        w.addStep(c);

        ProbeStats p = probe(2, 1, -1, 40.0);
        double v = 0.5;
        for (double* f :
             {&p.logitP99Raw, &p.logitMeanRaw, &p.logitP99Capped, &p.logitMeanCapped, &p.qNormP90,
              &p.kNormP90, &p.qRawNormP90, &p.kRawNormP90, &p.entropy, &p.fracAtCap})
            *f = (v += 1.25);
        w.addProbe(p);
        w.addProbe(probe(2, 1, 3, 99.0));  // a head row: must not count in the run's maximum

        LogitHistogram h;
        h.step = 2;
        h.layer = 1;
        h.head = -1;
        h.counts = {0, 1, 255, 256, int64_t(1) << 40, -7, std::numeric_limits<int64_t>::max()};
        h.underflow = 3;
        h.overflow = 9;
        h.nan = 4;
        w.addHistogram(h);

        AttentionMap am;
        am.step = 2;
        am.layer = 0;
        am.head = 1;
        am.size = 2;
        am.weights = {1.0f, 0.0f, 0.3f, 0.7f};
        am.tokens = std::string("a\0", 2);  // bytes, a NUL included
        am.reason = MapReason::LogitAlarm;
        w.addAttentionMap(am);

        Spike s;
        s.step = 2;
        s.metric = "loss";
        s.value = 9.5;
        s.zScore = 7.25;
        s.kind = SpikeKind::QkRunaway;
        s.tier = 3;
        s.probeStep = 2;
        s.probeMaxLogit = 40;
        s.baselineMaxLogit = 12;
        s.probeQkNorm = 8;
        s.baselineQkNorm = 4;
        s.diagnosis = "logits ran away";
        w.addSpike(s);
        w.addEvent({1, "lr_scale", R"({"factor":0.5})", "user"});
        // In the database's own checkpoint folder, where the trainer writes (issue 22, item 6).
        w.addCheckpoint({2, m_path + ".checkpoints/run-" + std::to_string(id) + "/step2.pt"});
        w.finish(RunStatus::Diverged, "loss is NaN at step 2");
    }

    RunStore store(m_path);
    RunInfo r = store.run(id);
    EXPECT_EQ(r.name, "roundtrip");
    EXPECT_EQ(r.status, RunStatus::Diverged);
    EXPECT_EQ(r.statusMessage, "loss is NaN at step 2");
    EXPECT_EQ(r.configJson, nr.configJson);
    EXPECT_EQ(r.seed, 1234);
    EXPECT_EQ(r.device, "cpu");
    EXPECT_EQ(r.torchVersion, "2.1.0");
    EXPECT_EQ(r.appVersion, "0.1.0+abc");
    EXPECT_FALSE(r.createdAt.empty());
    EXPECT_FALSE(r.finishedAt.empty());
    EXPECT_EQ(r.stepsDone, 3);
    ASSERT_TRUE(r.finalLoss.has_value());
    EXPECT_DOUBLE_EQ(*r.finalLoss, 2.25);  // the last *finite* loss
    ASSERT_TRUE(r.maxLogitRaw.has_value());
    EXPECT_DOUBLE_EQ(*r.maxLogitRaw, 40.0);
    EXPECT_DOUBLE_EQ(*r.maxLogitCapped, 20.0);
    EXPECT_EQ(r.spikes, 1);

    auto ms = store.stepMetrics(id);
    ASSERT_EQ(ms.size(), 3u);
    EXPECT_DOUBLE_EQ(ms[0].loss, 2.5);
    EXPECT_EQ(ms[0].valLoss, std::optional<double>(2.75));
    EXPECT_DOUBLE_EQ(ms[0].alpha, 0.25);
    EXPECT_DOUBLE_EQ(ms[0].softcapC, 30);
    EXPECT_DOUBLE_EQ(ms[0].tokensPerSec, 12345.5);
    EXPECT_DOUBLE_EQ(ms[0].gradNorm, 1.0);
    EXPECT_EQ(ms[0].seqLen, 64);
    EXPECT_EQ(ms[0].attentionPath, "fused");
    EXPECT_EQ(ms[1].attentionPath, "");  // not recorded
    ASSERT_TRUE(ms[1].valLoss.has_value());
    EXPECT_TRUE(std::isnan(*ms[1].valLoss));
    EXPECT_TRUE(std::isnan(ms[2].loss));
    EXPECT_FALSE(ms[2].valLoss.has_value());
    EXPECT_TRUE(std::isinf(ms[2].gradNorm));
    EXPECT_EQ(store.stepMetrics(id, 2).size(), 1u);

    auto ps = store.probeStats(id);
    ASSERT_EQ(ps.size(), 2u);
    EXPECT_EQ(ps[0].head, -1);
    EXPECT_EQ(ps[0].layer, 1);
    EXPECT_DOUBLE_EQ(ps[0].logitMaxRaw, 40.0);
    EXPECT_DOUBLE_EQ(ps[0].logitP99Raw, 1.75);
    EXPECT_DOUBLE_EQ(ps[0].fracAtCap, 0.5 + 10 * 1.25);
    EXPECT_DOUBLE_EQ(ps[0].entropy, 0.5 + 9 * 1.25);
    EXPECT_EQ(ps[1].head, 3);

    auto hs = store.histograms(id, 1, -1);
    ASSERT_EQ(hs.size(), 1u);
    EXPECT_EQ(hs[0].counts, (std::vector<int64_t>{0, 1, 255, 256, int64_t(1) << 40, -7,
                                                  std::numeric_limits<int64_t>::max()}));
    EXPECT_EQ(hs[0].underflow, 3);
    EXPECT_EQ(hs[0].overflow, 9);
    EXPECT_EQ(hs[0].nan, 4);
    EXPECT_EQ(store.histograms(id, 1, 0).size(), 0u);
    EXPECT_EQ(store.histogramSteps(id), std::vector<int64_t>{2});
    // The blob is little-endian int64, 8 bytes per bin, whatever the host's byte order.
    EXPECT_EQ(rawInt("SELECT length(counts) FROM histograms"), 7 * 8);
    EXPECT_EQ(rawText("SELECT hex(substr(counts, 17, 8)) FROM histograms"), "FF00000000000000");

    auto maps = store.attentionMaps(id, 2);
    ASSERT_EQ(maps.size(), 1u);
    EXPECT_EQ(maps[0].size, 2);
    EXPECT_EQ(maps[0].head, 1);
    EXPECT_EQ(maps[0].weights, (std::vector<float>{1.0f, 0.0f, 0.3f, 0.7f}));
    EXPECT_EQ(maps[0].tokens, std::string("a\0", 2));
    EXPECT_EQ(maps[0].reason, MapReason::LogitAlarm);
    EXPECT_EQ(store.attentionMapSteps(id), std::vector<int64_t>{2});

    auto sp = store.spikes(id);
    ASSERT_EQ(sp.size(), 1u);
    EXPECT_EQ(sp[0].kind, SpikeKind::QkRunaway);
    EXPECT_EQ(sp[0].tier, 3);
    EXPECT_EQ(sp[0].metric, "loss");
    EXPECT_DOUBLE_EQ(sp[0].zScore, 7.25);
    EXPECT_DOUBLE_EQ(sp[0].baselineQkNorm, 4);
    EXPECT_EQ(sp[0].diagnosis, "logits ran away");

    auto ev = store.events(id);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kind, "lr_scale");
    EXPECT_EQ(ev[0].paramsJson, R"({"factor":0.5})");
    EXPECT_EQ(ev[0].source, "user");
    auto ck = store.checkpoints(id);
    ASSERT_EQ(ck.size(), 1u);
    EXPECT_EQ(ck[0].path, fs::weakly_canonical(m_path + ".checkpoints/run-1/step2.pt").string());
    EXPECT_EQ(rawText("SELECT path FROM checkpoints"), "run-1/step2.pt");  // relative to it
}

TEST_F(StoreTest, SummaryIsKeptAcrossFlushesAndProbesFilter) {
    RunWriter w(m_path, NewRun{});
    w.addStep(step(0, 3.0));
    w.addProbe(probe(0, 0, -1, 10));
    w.addProbe(probe(0, 1, -1, 12));
    w.addProbe(probe(0, 0, 0, 50));
    w.flush();
    w.addStep(step(1, 2.0));
    w.addStep(step(2, kNaN));  // a NaN last step leaves the final loss at the last finite one
    w.addProbe(probe(2, 0, -1, 7));
    w.addProbe(probe(2, 0, 1, 8));
    w.flush();

    RunStore store(m_path);
    RunInfo r = store.run(w.runId());
    EXPECT_EQ(r.name, "run-" + std::to_string(w.runId()));
    EXPECT_EQ(r.stepsDone, 3);
    EXPECT_DOUBLE_EQ(r.finalLoss.value(), 2.0);
    EXPECT_DOUBLE_EQ(r.maxLogitRaw.value(), 12);
    EXPECT_EQ(store.probeStats(w.runId()).size(), 5u);
    auto layers = store.probeStats(w.runId(), -1);
    ASSERT_EQ(layers.size(), 3u);
    EXPECT_EQ(layers[0].layer, 0);
    EXPECT_EQ(layers[1].layer, 1);
    EXPECT_EQ(layers[2].step, 2);
    EXPECT_EQ(store.probeStats(w.runId(), 1).size(), 1u);
    EXPECT_EQ(store.probeStats(w.runId(), std::nullopt, 1).size(), 2u);
}

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

TEST_F(StoreTest, ListedRunsCarryTheirInterventionsInStepOrder) {
    {
        RunWriter w(m_path, NewRun{});
        w.addEvent({80, "softcap", R"({"cap":"tanh","c":30})", "user"});
        w.addEvent({50, "qk_norm", R"({"variant":"rms"})", "user"});
        w.addEvent({50, "lr_multiplier", R"({"factor":0.5})", "user"});  // same step: id order
        w.addEvent({10, "dirty_batch", "{}", "config"});  // the config's own: not listed
        w.finish(RunStatus::Finished);
    }
    RunStore store(m_path, StoreAccess::ReadOnly);
    const auto runs = store.listRuns();
    ASSERT_EQ(runs.size(), 1u);
    const auto& iv = runs[0].interventions;
    ASSERT_EQ(iv.size(), 3u);
    EXPECT_EQ(iv[0].step, 50);
    EXPECT_EQ(iv[0].kind, "qk_norm");
    EXPECT_EQ(iv[0].paramsJson, R"({"variant":"rms"})");
    EXPECT_EQ(iv[1].kind, "lr_multiplier");
    EXPECT_EQ(iv[2].step, 80);
    EXPECT_EQ(iv[2].source, "user");
    EXPECT_EQ(store.run(1).interventions.size(), 3u);
}

TEST_F(StoreTest, NewerSchemaIsRefused) {
    { RunStore s(m_path); }
    rawExec("PRAGMA user_version = 99", m_path);
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { RunStore s(m_path); }, &msg), ErrorCode::Unsupported);
    EXPECT_NE(msg.find("99"), std::string::npos) << msg;
    EXPECT_NE(msg.find("newer"), std::string::npos) << msg;
}

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
        w.addAttentionMap({0, 0, 0, 1, {1.0f}});
        w.addSpike(Spike{});
        w.addEvent({0, "e", "{}", "user"});
        w.addCheckpoint({0, "p"});
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

TEST_F(StoreTest, ResumeDeletesRowsFromStepOn) {
    int64_t id;
    {
        RunWriter w(m_path, NewRun{});
        id = w.runId();
        for (int s = 0; s < 10; ++s) {
            w.addStep(step(s, 10.0 - s));
            w.addProbe(probe(s, 0, -1, s * 10.0));
            w.addHistogram({s, 0, -1, {s}, 0, 0});
            w.addAttentionMap({s, 0, 0, 1, {1.0f}});
            Spike sp;
            sp.step = s;
            w.addSpike(sp);
        }
        w.addEvent({2, "lr_scale", "{}", "user"});
        w.addEvent({3, "warmup_end", "{}", "config"});
        w.addEvent({7, "lr_scale", "{}", "user"});
        w.addCheckpoint({5, m_path + ".checkpoints/run-" + std::to_string(id) + "/c5"});
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

// ---- the RAII layer itself ----

TEST_F(StoreTest, TransactionRollsBackUnlessCommitted) {
    Database db(m_path);
    db.exec("CREATE TABLE t(x INTEGER)");
    {
        Transaction tx(db);
        db.exec("INSERT INTO t VALUES(1)");
    }
    EXPECT_EQ(db.queryInt("SELECT count(*) FROM t"), 0);
    {
        Transaction tx(db);
        db.exec("INSERT INTO t VALUES(1)");
        tx.commit();
    }
    EXPECT_EQ(db.queryInt("SELECT count(*) FROM t"), 1);
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { Statement st(db, "SELECT nope FROM t"); }, &msg),
              ErrorCode::Database);
    EXPECT_NE(msg.find("SELECT nope FROM t"), std::string::npos) << msg;
    EXPECT_NE(msg.find(m_path), std::string::npos) << msg;
}

TEST_F(StoreTest, LockedDatabaseGivesAClearError) {
    { RunStore s(m_path); }
    Database holder(m_path);
    Transaction lock(holder);  // holds the write lock
    holder.exec("INSERT INTO runs(name) VALUES('holder')");
    Database impatient(m_path, /*busyTimeoutMs=*/50);
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { Transaction tx(impatient); }, &msg), ErrorCode::Database);
    EXPECT_NE(msg.find("locked"), std::string::npos) << msg;
    EXPECT_NE(msg.find(m_path), std::string::npos) << msg;
    // Reading alongside the writer still works: that is what WAL is for.
    EXPECT_EQ(impatient.queryInt("SELECT count(*) FROM runs"), 0);
}

// ---- issue 10 ----

// Item 5: two resumes started together both used to be accepted and both wrote the run.
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

// Item 3: a kill between deleting an old checkpoint file and committing rows could leave a
// row whose file is gone; resume falls back to the newest checkpoint that exists.
// Issue 22, item 6: the row of a missing file stays (the file may come back; deleting the row
// made a run whose checkpoint was only looked for from the wrong directory unresumable).
TEST_F(StoreTest, ResumeFallsBackToTheNewestCheckpointWhoseFileExists) {
    fs::create_directories(m_path + ".checkpoints/run-1");
    const std::string kept = m_path + ".checkpoints/run-1/step-5.pt";
    std::ofstream(kept) << "weights";
    {
        RunWriter w(m_path, NewRun{});
        w.addCheckpoint({5, kept});
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

// Item 3: the writer drops older checkpoints only after the newer one's row is committed.
TEST_F(StoreTest, OlderCheckpointGoesOnlyAfterTheNewerRowIsCommitted) {
    fs::create_directories(m_path + ".checkpoints/run-1");
    const std::string a = m_path + ".checkpoints/run-1/step-5.pt",
                      b = m_path + ".checkpoints/run-1/step-10.pt";
    std::ofstream(a) << "a";
    std::ofstream(b) << "b";
    RunWriter w(m_path, NewRun{});
    w.addCheckpoint({5, a});
    w.flush();
    w.addCheckpoint({10, b});
    EXPECT_TRUE(fs::exists(a));  // buffered, not committed: the old file must stay
    w.flush();
    EXPECT_FALSE(fs::exists(a));
    EXPECT_TRUE(fs::exists(b));
    EXPECT_EQ(rawInt("SELECT count(*) FROM checkpoints"), 1);
}

// Item 12: control characters in a run name broke the list table.
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

// Item 13: a reader opens without creating, migrating or writing.
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

TEST_F(StoreTest, LogitAlarmsKeepTheFirstCrossingPerLayerAndRule) {
    {
        RunWriter w(m_path, NewRun{});
        LogitAlarm a;
        a.step = 10;
        a.layer = 0;
        a.metric = "logit_max_raw";
        a.value = 134;
        a.threshold = 30;
        a.kind = SpikeKind::QkRunaway;
        a.tier = 3;
        a.text = "first";
        w.addLogitAlarm(a);
        a.step = 15;  // the same layer and rule again (a resumed run): ignored
        a.text = "again";
        w.addLogitAlarm(a);
        a.layer = 1;
        a.step = 12;
        a.text = "layer 1";
        w.addLogitAlarm(a);
        w.finish(RunStatus::Finished);
    }
    RunStore store(m_path);
    const auto alarms = store.logitAlarms(1);
    ASSERT_EQ(alarms.size(), 2u);
    EXPECT_EQ(alarms[0].step, 10);
    EXPECT_EQ(alarms[0].text, "first");
    EXPECT_EQ(alarms[0].kind, SpikeKind::QkRunaway);
    EXPECT_DOUBLE_EQ(alarms[0].value, 134);
    EXPECT_EQ(alarms[1].layer, 1);
    EXPECT_EQ(store.run(1).logitAlarms, 2);
}

// ---- saved comparisons (schema 7) ----

namespace {

// n finished runs named run-a, run-b, ...; their ids are 1..n.
void writeRuns(const std::string& path, int n) {
    for (int i = 0; i < n; ++i) {
        NewRun nr;
        nr.name = std::string("run-") + static_cast<char>('a' + i);
        RunWriter w(path, nr);
        w.finish(RunStatus::Finished);
    }
}

SavedComparison comparisonOf(const std::string& name, std::vector<int64_t> ids,
                             const std::string& settings = "{}") {
    SavedComparison c;
    c.name = name;
    c.runIds = std::move(ids);
    c.settingsJson = settings;
    return c;
}

bool isIsoUtc(const std::string& s) {
    return s.size() == 20 && s[4] == '-' && s[10] == 'T' && s[19] == 'Z';
}

}  // namespace

TEST_F(StoreTest, ComparisonsRoundTripAndKeepTheirCreationTime) {
    writeRuns(m_path, 3);
    RunStore store(m_path);
    const std::string settings =
        R"({"x_axis":"tokens","layer":1,"smoothing":0.6,"groups":true,"differences_only":false})";
    store.saveComparison(comparisonOf("softcap vs none", {3, 1, 2}, settings));
    SavedComparison c = store.comparison("softcap vs none");
    EXPECT_EQ(c.name, "softcap vs none");
    EXPECT_EQ(c.runIds, (std::vector<int64_t>{3, 1, 2}));  // display order, not id order
    EXPECT_EQ(c.settingsJson, settings);                   // as the app wrote it
    EXPECT_TRUE(isIsoUtc(c.createdAt)) << c.createdAt;
    EXPECT_EQ(c.updatedAt, c.createdAt);

    // Saving under the same name replaces ids and settings but keeps when it was created.
    rawExec(
        "UPDATE comparisons SET created_at = '2001-02-03T04:05:06Z', "
        "updated_at = '2001-02-03T04:05:06Z'",
        m_path);
    SavedComparison again = comparisonOf("softcap vs none", {2, 1}, R"({"layer":0})");
    again.createdAt = again.updatedAt = "ignored";
    store.saveComparison(again);
    c = store.comparison("softcap vs none");
    EXPECT_EQ(c.runIds, (std::vector<int64_t>{2, 1}));
    EXPECT_EQ(c.settingsJson, R"({"layer":0})");
    EXPECT_EQ(c.createdAt, "2001-02-03T04:05:06Z");
    EXPECT_TRUE(isIsoUtc(c.updatedAt)) << c.updatedAt;
    EXPECT_NE(c.updatedAt, c.createdAt);
    EXPECT_EQ(rawInt("SELECT count(*) FROM comparisons"), 1);
    EXPECT_EQ(rawText("SELECT run_ids FROM comparisons"), "[2,1]");
}

TEST_F(StoreTest, ComparisonsAreListedByName) {
    writeRuns(m_path, 2);
    RunStore store(m_path);
    EXPECT_TRUE(store.comparisons().empty());
    store.saveComparison(comparisonOf("gamma", {1, 2}));
    store.saveComparison(comparisonOf("alpha", {2, 1}, R"({"smoothing":0.9})"));
    store.saveComparison(comparisonOf("beta", {1, 2}));
    const auto all = store.comparisons();
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0].name, "alpha");
    EXPECT_EQ(all[0].runIds, (std::vector<int64_t>{2, 1}));
    EXPECT_EQ(all[0].settingsJson, R"({"smoothing":0.9})");
    EXPECT_EQ(all[1].name, "beta");
    EXPECT_EQ(all[2].name, "gamma");
}

TEST_F(StoreTest, InvalidComparisonsAreRefusedAndNothingIsStored) {
    writeRuns(m_path, 2);
    RunStore store(m_path);
    std::vector<int64_t> thirteen;
    for (int64_t i = 1; i <= 13; ++i) thirteen.push_back(i);
    const std::vector<int64_t> twelve(thirteen.begin(), thirteen.end() - 1);
    const std::vector<std::pair<SavedComparison, std::string>> cases = {
        {comparisonOf("", {1, 2}), "empty"},
        {comparisonOf("a\nb", {1, 2}), "control characters"},
        {comparisonOf(std::string(201, 'x'), {1, 2}), "at most 200 bytes"},
        {comparisonOf("one", {1}), "1 run id;"},
        {comparisonOf("none", {}), "0 run ids"},
        {comparisonOf("thirteen", thirteen), "13 run ids"},
        {comparisonOf("array", {1, 2}, "[1]"), "must be a JSON object"},
        {comparisonOf("number", {1, 2}, "3"), "must be a JSON object"},
        {comparisonOf("garbage", {1, 2}, "not json"), "not valid JSON"},
        {comparisonOf("empty settings", {1, 2}, ""), "not valid JSON"},
        {comparisonOf("truncated", {1, 2}, R"({"layer":)"), "not valid JSON"},
    };
    for (const auto& [c, expected] : cases) {
        std::string msg;
        EXPECT_EQ(errorCodeOf([&] { store.saveComparison(c); }, &msg), ErrorCode::InvalidRequest)
            << c.name;
        EXPECT_NE(msg.find(expected), std::string::npos) << msg;
        if (!c.name.empty() && c.name.size() <= 200 && c.name.find('\n') == std::string::npos)
            EXPECT_NE(msg.find("'" + c.name + "'"), std::string::npos) << msg;
    }
    EXPECT_TRUE(store.comparisons().empty());
    EXPECT_EQ(rawInt("SELECT count(*) FROM comparisons"), 0);
    // The limits themselves are fine.
    store.saveComparison(comparisonOf(std::string(200, 'x'), twelve));
    store.saveComparison(comparisonOf("two", {1, 2}));
    EXPECT_EQ(store.comparisons().size(), 2u);
    EXPECT_EQ(store.comparison(std::string(200, 'x')).runIds, twelve);
}

TEST_F(StoreTest, DeletingARunLeavesItsIdInComparisons) {
    writeRuns(m_path, 3);
    RunStore store(m_path);
    store.saveComparison(comparisonOf("all three", {1, 2, 3}));
    store.deleteRun(2);
    const SavedComparison c = store.comparison("all three");
    EXPECT_EQ(c.runIds, (std::vector<int64_t>{1, 2, 3}));
    EXPECT_EQ(errorCodeOf([&] { store.run(2); }), ErrorCode::NotFound);  // shown as missing
    EXPECT_EQ(rawText("SELECT run_ids FROM comparisons"), "[1,2,3]");

    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { store.comparison("nope"); }, &msg), ErrorCode::NotFound);
    EXPECT_NE(msg.find("'nope'"), std::string::npos) << msg;
    store.deleteComparison("all three");
    EXPECT_TRUE(store.comparisons().empty());
    EXPECT_EQ(errorCodeOf([&] { store.deleteComparison("all three"); }, &msg), ErrorCode::NotFound);
    EXPECT_NE(msg.find("'all three'"), std::string::npos) << msg;
    EXPECT_EQ(store.listRuns().size(), 2u);  // deleting a comparison deletes no run
}

TEST_F(StoreTest, ReadOnlyStoreReadsComparisonsButDoesNotWriteThem) {
    writeRuns(m_path, 2);
    {
        RunStore writer(m_path);
        writer.saveComparison(comparisonOf("saved", {2, 1}, R"({"x_axis":"time"})"));
    }
    RunStore reader(m_path, StoreAccess::ReadOnly);
    const auto all = reader.comparisons();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].runIds, (std::vector<int64_t>{2, 1}));
    const SavedComparison c = reader.comparison("saved");
    EXPECT_EQ(c.settingsJson, R"({"x_axis":"time"})");
    EXPECT_EQ(errorCodeOf([&] { reader.comparison("other"); }), ErrorCode::NotFound);
    // Writes on a read-only connection throw, as renameRun does.
    EXPECT_THROW(reader.saveComparison(comparisonOf("new", {1, 2})), Error);
    EXPECT_THROW(reader.saveComparison(comparisonOf("saved", {1, 2})), Error);
    EXPECT_THROW(reader.deleteComparison("saved"), Error);
    EXPECT_EQ(rawInt("SELECT count(*) FROM comparisons"), 1);
    EXPECT_EQ(rawText("SELECT run_ids FROM comparisons"), "[2,1]");
}

TEST_F(StoreTest, SchemaSixFileHasNoComparisonsForAReaderAndIsMigratedByAWriter) {
    writeRuns(m_path, 2);
    // Turn the file back into what a version-6 build wrote.
    rawExec(QKLAB_UNDO_SCHEMA_8
            "DROP TABLE comparisons; PRAGMA user_version = 6; PRAGMA wal_checkpoint(TRUNCATE)",
            m_path);
    {
        RunStore reader(m_path, StoreAccess::ReadOnly);
        EXPECT_EQ(reader.schemaVersion(), 6);
        EXPECT_TRUE(reader.comparisons().empty());
        EXPECT_EQ(errorCodeOf([&] { reader.comparison("any"); }), ErrorCode::NotFound);
        EXPECT_EQ(errorCodeOf([&] { reader.deleteComparison("any"); }), ErrorCode::NotFound);
        EXPECT_EQ(reader.listRuns().size(), 2u);
    }
    EXPECT_EQ(rawInt("PRAGMA user_version"), 6);  // the reader did not migrate it
    EXPECT_EQ(rawInt("SELECT count(*) FROM sqlite_master WHERE name = 'comparisons'"), 0);

    RunStore store(m_path);
    EXPECT_EQ(store.schemaVersion(), kLatestSchema);
    const auto runs = store.listRuns();
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[0].name, "run-a");
    EXPECT_EQ(runs[1].name, "run-b");
    EXPECT_TRUE(store.comparisons().empty());
    store.saveComparison(comparisonOf("after migration", {1, 2}));
    EXPECT_EQ(store.comparison("after migration").runIds, (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(rawInt("PRAGMA user_version"), kLatestSchema);
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

// ---- QK-Clip records (schema 9) ----

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
        w.addCheckpoint({5, "c5"});
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
