// store_fuzz_test.cpp — hostile shard databases (issue 22). A valid shard (a sweep, two runs
// with rows in every table and checkpoint files) is damaged in a few hundred seeded ways: deep
// JSON, unknown statuses and kinds, bad names and UUIDs, foreign and escaping checkpoint paths,
// huge values, wrong types, broken sweep references, schema changes, truncated files and random
// pages. Every import either takes valid data or refuses the file as bad input (what the CLI
// exits 2 for) with nothing committed; every reader of the target works afterwards; no file
// outside the target's checkpoint folder is touched.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "qklab/analysis/compare.h"
#include "qklab/analysis/sweep_report.h"
#include "qklab/config/sweep.h"
#include "qklab/store/run_export.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"
#include "support/hostile_db.h"

using namespace qklab;
using namespace hostile;

namespace {

const char* const kTables[] = {"runs",        "sweeps",         "step_metrics", "probe_stats",
                               "histograms",  "attention_maps", "spikes",       "events",
                               "checkpoints", "logit_alarms",   "qk_clips"};

// Rows of every table, the runs' summaries and the checkpoint files: what "nothing changed"
// compares.
std::string digest(const std::string& db) {
    std::string out;
    for (const char* t : kTables)
        out += std::string(t) + "=" + rawText(db, std::string("SELECT count(*) FROM ") + t) + ";";
    out += rawText(db, "SELECT group_concat(id || name || status || steps_done, '|') FROM runs");
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(db + ".checkpoints", ec))
        out += "\n" + e.path().string();
    return out;
}

// Everything the CLI and the app read, for every run and sweep of `db`.
void readEverything(const std::string& db) {
    RunStore s(db, StoreAccess::ReadOnly);
    const auto dumped = [](const nlohmann::json& j) {
        return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
    };
    for (const RunInfo& r : s.listRuns()) {
        s.findRun("id:" + std::to_string(r.id));
        s.findRun("name:" + r.name);
        s.stepMetrics(r.id);
        s.probeStats(r.id);
        s.spikes(r.id);
        s.events(r.id);
        s.logitAlarms(r.id);
        s.qkClips(r.id);
        s.checkpoints(r.id);
        for (int64_t step : s.attentionMapSteps(r.id)) s.attentionMaps(r.id, step);
        if (!s.histogramSteps(r.id).empty()) s.histograms(r.id, 0, -1);
        dumped(runSummaryJson(s, r.id));
        dumped(runExportJson(s, r.id));
        runExportCsv(s, r.id);
        configAsTrained(r);
    }
    for (const SweepInfo& w : s.sweeps()) dumped(sweepReportJson(sweepReport(s, w.id)));
}

// One run of the template's sweep: rows in every per-run table and a checkpoint file.
void writePoint(const std::string& db, int64_t sweepId, const SweepPoint& p) {
    NewRun nr;
    nr.name = "lr point " + std::to_string(p.index);
    nr.configJson = configToJson(p.config).dump();
    nr.sweep = SweepMembership{sweepId, p.index, p.coords.dump()};
    RunWriter w(db, nr);
    for (int64_t s = 0; s < 4; ++s) {
        StepMetrics m;
        m.step = s;
        m.loss = 5.0 - 0.2 * static_cast<double>(s);
        m.valLoss = s == 3 ? std::optional<double>(4.1) : std::nullopt;
        w.addStep(m);
    }
    ProbeStats ps;
    ps.step = 2;
    ps.layer = 0;
    ps.head = -1;
    ps.logitMaxRaw = 31;
    w.addProbe(ps);
    w.addHistogram({2, 0, -1, {1, 2, 3}, 0, 1, 0});
    AttentionMap map;
    map.step = 2;
    map.size = 2;
    map.weights = {1, 0, 0.5f, 0.5f};
    map.tokens = "ab";
    w.addAttentionMap(map);
    w.addSpike({2, "loss", 9, 5, SpikeKind::TokenSpike, 2, 2, 31, 10, 1, 1, "a paragraph"});
    w.addLogitAlarm({2, 0, "logit_max_raw", 31, 30, SpikeKind::HighLogits, 2, "high"});
    w.addQkClip({2, 0, 1, 120, 0.9});
    w.addEvent({1, "lr_multiplier", R"({"factor": 0.5})", "user"});
    const std::string dir = db + ".checkpoints/run-" + std::to_string(w.runId());
    fs::create_directories(dir);
    std::ofstream(dir + "/step-4.pt") << "weights";
    w.addCheckpoint({4, dir + "/step-4.pt", {}});
    w.finish(RunStatus::Finished);
}

class HostileShards : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        s_dir = new TempDir();
        s_template = *s_dir / "template.db";
        s_target = *s_dir / "target.db";
        s_victim = *s_dir / "VICTIM.txt";
        std::ofstream(s_victim) << "precious";
        SweepDefinition d = parseSweep(R"({"axes": {"optim.lr": [0.001, 0.01]}})", "lr.json");
        d.name = "lr";
        d.uuid = newUuid();
        int64_t sweepId = 0;
        {
            RunStore store(s_template);
            SweepInfo s;
            s.uuid = d.uuid;
            s.name = d.name;
            s.definitionJson = sweepToJson(d).dump();
            s.points = static_cast<int64_t>(d.pointCount());
            sweepId = store.addSweep(s, /*owned=*/false);
        }
        for (const SweepPoint& p : expandSweep(d)) writePoint(s_template, sweepId, p);
        ASSERT_TRUE(rawExec(s_template, "PRAGMA wal_checkpoint(TRUNCATE)"));
        writeRun(s_target, "mine", RunStatus::Stopped);
        ASSERT_TRUE(rawExec(s_target, "PRAGMA wal_checkpoint(TRUNCATE)"));
    }
    static void TearDownTestSuite() { delete s_dir; }

    // A fresh copy of a database and its checkpoint folder.
    static void copyDb(const std::string& from, const std::string& to) {
        std::error_code ec;
        fs::remove_all(to + ".checkpoints", ec);
        fs::remove(to + "-wal", ec);
        fs::remove(to + "-shm", ec);
        fs::copy_file(from, to, fs::copy_options::overwrite_existing);
        fs::copy(from + ".checkpoints", to + ".checkpoints", fs::copy_options::recursive);
    }

    static TempDir* s_dir;
    static std::string s_template, s_target, s_victim;
};

TempDir* HostileShards::s_dir = nullptr;
std::string HostileShards::s_template, HostileShards::s_target, HostileShards::s_victim;

// Values that break a column's type, its meaning, the JSON limits or the path rules.
std::vector<std::string> hostileValues(const std::string& victim) {
    return {"NULL",
            "''",
            "'exploded'",
            "-1",
            "9223372036854775807",
            "1e308",
            "'abc'",
            "x'00ff'",
            "zeroblob(100)",
            "'" + std::string(100000, '[') + "'",
            "'" + std::string(3000, '[') + std::string(3000, ']') + "'",
            "'{\"a\": 1, \"a\": 2}'",
            "'[]'",
            "'not json'",
            "char(27) || '[2J'",
            "'a' || char(0) || 'b'",
            "'a' || char(10) || 'b'",
            "char(27) || ']0;title' || char(7)",
            "printf('%.*c', 70000, 'x')",
            "printf('%.*c', 5000000, '1')",
            "'" + victim + "'",
            "'run-1/../../VICTIM.txt'",
            "'../VICTIM.txt'",
            "'/dev/zero'",
            "'{\"base\": \"/dev/zero\", \"axes\": {\"optim.lr\": [1]}}'",
            "'running'",
            "'finished'",
            "'user'",
            "'meteor'",
            "999",
            "100000",
            "'{\"optim\": {\"lr\": \"fast\"}}'",
            "'NaN'"};
}

const std::vector<std::pair<std::string, std::string>>& hostileColumns() {
    static const std::vector<std::pair<std::string, std::string>> columns{
        {"runs", "name"},
        {"runs", "status"},
        {"runs", "config_json"},
        {"runs", "seed"},
        {"runs", "steps_done"},
        {"runs", "final_loss"},
        {"runs", "uuid"},
        {"runs", "sweep_id"},
        {"runs", "sweep_point"},
        {"runs", "sweep_coords"},
        {"runs", "created_at"},
        {"runs", "notes"},
        {"runs", "device"},
        {"runs", "pid"},
        {"runs", "host"},
        {"sweeps", "name"},
        {"sweeps", "uuid"},
        {"sweeps", "definition_json"},
        {"sweeps", "points"},
        {"step_metrics", "step"},
        {"step_metrics", "loss"},
        {"step_metrics", "seq_len"},
        {"probe_stats", "layer"},
        {"probe_stats", "logit_max_raw"},
        {"histograms", "counts"},
        {"attention_maps", "size"},
        {"attention_maps", "weights"},
        {"attention_maps", "tokens"},
        {"attention_maps", "reason"},
        {"spikes", "kind"},
        {"spikes", "metric"},
        {"events", "params_json"},
        {"events", "source"},
        {"events", "kind"},
        {"checkpoints", "path"},
        {"checkpoints", "step"},
        {"logit_alarms", "kind"},
        {"qk_clips", "s_max"}};
    return columns;
}

// Damage that is not one value: the schema, the files, the checkpoint folder.
std::vector<std::string> hostileStatements() {
    return {"DROP TABLE probe_stats",
            "ALTER TABLE runs RENAME COLUMN notes TO n",
            "DROP TABLE events; CREATE VIEW events AS SELECT * FROM spikes",
            "PRAGMA user_version = 99",
            "PRAGMA user_version = 3",
            "PRAGMA application_id = 7",
            "DROP INDEX runs_by_uuid; UPDATE runs SET uuid = 'same'",
            "INSERT INTO step_metrics(run_id, step, loss) VALUES(1, -5, 'x')",
            "INSERT INTO events(run_id, step, kind, params_json) VALUES(2, 1, 'x', '[[[[')",
            "UPDATE runs SET sweep_id = NULL",
            "DELETE FROM sweeps",
            "UPDATE runs SET status = 'running', pid = 1, host = 'elsewhere'"};
}

}  // namespace

TEST_F(HostileShards, EveryImportTakesValidDataOrRefusesTheFileAndReadersKeepWorking) {
    std::mt19937 rng(20240622);
    const auto pick = [&](size_t n) {
        return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
    };
    const std::vector<std::string> values = hostileValues(s_victim);
    const std::vector<std::string> statements = hostileStatements();
    const std::string shard = *s_dir / "shard.db", target = *s_dir / "into.db";
    int imported = 0, refused = 0;
    for (int round = 0; round < 150; ++round) {
        copyDb(s_template, shard);
        copyDb(s_target, target);
        std::string what;
        const size_t mutations = 1 + pick(2);
        for (size_t m = 0; m < mutations; ++m) {
            const size_t kind = pick(10);
            if (kind < 6) {  // one column of every row of a table
                const auto& [table, column] = hostileColumns()[pick(hostileColumns().size())];
                const std::string& value = values[pick(values.size())];
                const std::string sql = "UPDATE " + table + " SET " + column + " = " + value;
                if (rawExec(shard, sql)) what += sql.substr(0, 120) + "; ";
            } else if (kind < 8) {
                const std::string& sql = statements[pick(statements.size())];
                if (rawExec(shard, sql)) what += sql + "; ";
            } else if (kind == 8) {  // the checkpoint file is a link out, or gone
                const std::string file = shard + ".checkpoints/run-1/step-4.pt";
                fs::remove(file);
                if (pick(2) == 0) fs::create_symlink(s_victim, file);
                what += "checkpoint file replaced; ";
            } else {  // the file itself: truncated, or a page of random bytes
                rawExec(shard, "PRAGMA wal_checkpoint(TRUNCATE)");
                const auto size = fs::file_size(shard);
                if (pick(2) == 0) {
                    fs::resize_file(shard, pick(static_cast<size_t>(size)));
                    what += "truncated; ";
                } else {
                    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
                    f.seekp(
                        static_cast<std::streamoff>(pick(static_cast<size_t>(size / 4096)) * 4096));
                    for (int i = 0; i < 4096; ++i) f.put(static_cast<char>(rng()));
                    what += "random page; ";
                }
            }
        }
        SCOPED_TRACE("round " + std::to_string(round) + ": " + what);
        const std::string before = digest(target);
        try {
            RunStore store(target);
            store.importRuns(shard);
            ++imported;
        } catch (const Error& e) {
            ++refused;
            EXPECT_NE(e.code(), ErrorCode::Internal) << e.what();
            EXPECT_NE(e.code(), ErrorCode::Database) << e.what();
            EXPECT_NE(e.code(), ErrorCode::Io) << e.what();
            EXPECT_EQ(digest(target), before) << e.what();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "not a qklab::Error: " << e.what();
        }
        try {
            readEverything(target);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "a reader failed after the import: " << e.what();
        }
        ASSERT_EQ(fileText(s_victim), "precious");
    }
    std::printf("%d damaged shards imported, %d refused\n", imported, refused);
    // Both outcomes happen: the damage is not all fatal, and not all harmless.
    EXPECT_GT(imported, 10);
    EXPECT_GT(refused, 60);
}
