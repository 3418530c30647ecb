// record_columns_test.cpp — adding a column to a record touches that record's column table and
// one migration. This build adds a column to every record that way (record_columns_extra.h),
// writes a run and finds each column in the stored tables, in what the store reads back, in
// qklab-cli's `export --format json`, `export --format csv`, `show --json`, `list` and
// `list --json` (qklab-cli built with the same extra columns) and among the lesson metrics,
// and an import copies them, checks them by their import rules and merges a continued run by
// them. A writer, reader, export, list or import that named its columns itself would miss them.
#include "qklab/store/record_columns.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "qklab/analysis/lesson.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"
#include "store/src/schema.h"
#include "support/cli_run.h"
#include "support/test_files.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace qklab;

namespace {

class RecordColumnsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        m_dir = testsupport::scratchDir("record-columns");
        m_db = (m_dir / "runs.db").string();
        ASSERT_TRUE(findColumn(stepMetricTable().columns, "twice_loss"))
            << "built without QKLAB_EXTRA_COLUMNS (tests/core/store/CMakeLists.txt)";
        writeRun();
    }
    void TearDown() override { fs::remove_all(m_dir); }

    // Steps 0..4 (loss 4, 3.5, ...), a spike, a logit alarm, a QK clip, a change report, a
    // forecast, a probe, a histogram, an attention map, an event and a checkpoint.
    void writeRun() {
        NewRun run;
        run.name = "extra";
        RunWriter w(m_db, run);
        for (int64_t s = 0; s < 5; ++s) {
            StepMetrics m;
            m.step = s;
            m.loss = 4.0 - 0.5 * double(s);
            w.addStep(m);
        }
        w.addSpike({3, "loss", 9, 7, SpikeKind::TokenSpike, 2, 2, 31, 10, 1, 1, "a paragraph"});
        w.addLogitAlarm({2, 0, "logit_max_raw", 41, 30, SpikeKind::HighLogits, 2, "past 30"});
        w.addQkClip({2, 0, 1, 400, 0.5});
        ChangeReport report;
        report.step = 1;
        report.kind = "softcap";
        report.lossZ = 3;
        w.addChangeReport(report);
        Forecast forecast;
        forecast.step = 2;
        forecast.rate = 0.25;
        w.addForecast(forecast);
        ProbeStats probe;
        probe.step = 2;
        probe.head = 1;
        probe.entropy = 1.5;
        w.addProbe(probe);
        w.addHistogram({2, 0, 1, {1, 2, 3}, 4, 5, 6});
        w.addAttentionMap({2, 0, 1, 2, {1, 0, 0.5f, 0.5f}, "ab", MapReason::BeforeEvent});
        w.addEvent({1, "softcap", R"({"cap":30.0})", "user"});
        w.addCheckpoint({4, m_db + ".checkpoints/run-1/step-4.pt", ""});
        w.finish(RunStatus::Finished);
    }

    // The file as another program sees it.
    void exec(const std::string& sql) { execIn(m_db, sql); }
    static void execIn(const std::string& path, const std::string& sql) {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
        EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sql;
        sqlite3_close(db);
    }
    double real(const std::string& sql) { return std::stod(textIn(m_db, sql)); }
    // The first value `sql` reads from the file at `path`, as text ("-1": no row).
    static std::string textIn(const std::string& path, const std::string& sql) {
        sqlite3* db = nullptr;
        sqlite3_stmt* st = nullptr;
        EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
        EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
        std::string v = "-1";
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        sqlite3_close(db);
        return v;
    }
    // What importing the run into a new file at `into` says: "" when it was imported.
    std::string importInto(const std::string& into) {
        try {
            RunStore(into).importRuns(m_db);
            return "";
        } catch (const Error& e) {
            return e.what();
        }
    }

    // New values in the extra columns only: whatever shows them read them from there.
    void changeExtraColumns() {
        exec(
            "UPDATE step_metrics SET twice_loss = 100 WHERE step = 3;"
            "UPDATE spikes SET twice_z_score = 18; UPDATE logit_alarms SET twice_threshold = 50;"
            "UPDATE qk_clips SET twice_factor = 0.5; UPDATE change_reports SET twice_loss_z = 7;"
            "UPDATE forecasts SET twice_rate = 3;"
            "UPDATE probe_stats SET twice_entropy = 5; UPDATE histograms SET twice_overflow = 14;"
            "UPDATE attention_maps SET tokens_copy = X'7879'; UPDATE events SET kind_copy = "
            "'qk_norm'; UPDATE checkpoints SET path_copy = 'run-1/copy.pt';"
            "UPDATE runs SET extra_note = 'from the extra column'");
    }

    Result cli(const std::string& args) {
        return runCli(args + " --db " + m_db, (m_dir / "stderr.txt").string(),
                      qklab::testpaths::extraCliPath());
    }

    fs::path m_dir;
    std::string m_db;
};

std::vector<std::string> csvCells(const std::string& line) {
    std::vector<std::string> cells;
    std::stringstream in(line);
    for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
    return cells;
}

}  // namespace

TEST_F(RecordColumnsTest, TheWriterStoresEveryExtraColumnThroughItsMigration) {
    EXPECT_EQ(real("PRAGMA user_version"), latestSchemaVersion());
    EXPECT_EQ(real("SELECT twice_loss FROM step_metrics WHERE step = 2"), 6.0);
    EXPECT_EQ(real("SELECT twice_z_score FROM spikes"), 14.0);
    EXPECT_EQ(real("SELECT twice_threshold FROM logit_alarms"), 60.0);
    EXPECT_EQ(real("SELECT twice_factor FROM qk_clips"), 1.0);
    EXPECT_EQ(real("SELECT twice_loss_z FROM change_reports"), 6.0);
    EXPECT_EQ(real("SELECT twice_rate FROM forecasts"), 0.5);
    EXPECT_EQ(real("SELECT twice_entropy FROM probe_stats"), 3.0);
    EXPECT_EQ(real("SELECT twice_overflow FROM histograms"), 10.0);
    EXPECT_EQ(real("SELECT tokens_copy = X'6162' FROM attention_maps"), 1.0);  // "ab"
    EXPECT_EQ(real("SELECT kind_copy = 'softcap' FROM events"), 1.0);
    EXPECT_EQ(real("SELECT path_copy = 'run-1/step-4.pt' FROM checkpoints"), 1.0);
}

TEST_F(RecordColumnsTest, TheReaderDecodesEveryExtraColumn) {
    changeExtraColumns();
    RunStore store(m_db, StoreAccess::ReadOnly);
    EXPECT_EQ(store.stepMetrics(1)[3].loss, 50.0);  // half of twice_loss
    EXPECT_EQ(store.stepMetrics(1)[2].loss, 3.0);
    EXPECT_EQ(store.spikes(1).at(0).zScore, 9.0);
    EXPECT_EQ(store.logitAlarms(1).at(0).threshold, 25.0);
    EXPECT_EQ(store.qkClips(1).at(0).factor, 0.25);
    EXPECT_EQ(store.changeReports(1).at(0).lossZ, 3.5);
    EXPECT_EQ(store.forecasts(1).at(0).rate, 1.5);  // half of twice_rate
    EXPECT_EQ(store.run(1).notes, "from the extra column");
    ASSERT_EQ(store.probeStats(1).size(), 1u);
    EXPECT_EQ(store.probeStats(1)[0].entropy, 2.5);  // half of twice_entropy
    EXPECT_EQ(store.probeStats(1, 1).at(0).entropy, 2.5);
    EXPECT_TRUE(store.probeStats(1, 0).empty());
    const auto histograms = store.histograms(1, 0, 1);
    ASSERT_EQ(histograms.size(), 1u);
    EXPECT_EQ(histograms[0].overflow, 7);  // half of twice_overflow
    EXPECT_EQ(histograms[0].counts, (std::vector<int64_t>{1, 2, 3}));
    EXPECT_EQ(histograms[0].nan, 6);
    const auto maps = store.attentionMaps(1, 2);
    ASSERT_EQ(maps.size(), 1u);
    EXPECT_EQ(maps[0].tokens, "xy");  // X'7879' from tokens_copy
    EXPECT_EQ(maps[0].weights, (std::vector<float>{1, 0, 0.5f, 0.5f}));
    EXPECT_EQ(maps[0].reason, MapReason::BeforeEvent);
    ASSERT_EQ(store.events(1).size(), 1u);
    EXPECT_EQ(store.events(1)[0].kind, "qk_norm");
    EXPECT_EQ(store.events(1)[0].paramsJson, R"({"cap":30.0})");
    ASSERT_EQ(store.checkpoints(1).size(), 1u);
    EXPECT_EQ(store.checkpoints(1)[0].step, 4);
    EXPECT_EQ(fs::path(store.checkpoints(1)[0].path).filename(), "copy.pt");  // from path_copy
}

TEST_F(RecordColumnsTest, EveryExportAndListShowsTheExtraColumns) {
    changeExtraColumns();
    const Result exported = cli("export 1 --format json");
    ASSERT_EQ(exported.status, 0) << exported.err;
    const json e = json::parse(exported.out);
    EXPECT_EQ(e["steps"][3]["twice_loss"], 100.0);
    EXPECT_EQ(e["steps"][3]["loss"], 50.0);
    EXPECT_EQ(e["spikes"][0]["twice_z_score"], 18.0);
    EXPECT_EQ(e["alarms"][0]["twice_threshold"], 50.0);
    EXPECT_EQ(e["qk_clips"][0]["twice_factor"], 0.5);
    EXPECT_EQ(e["forecasts"][0]["twice_rate"], 3.0);
    EXPECT_EQ(e["run"]["extra_note"], "from the extra column");

    const Result csv = cli("export 1 --format csv");
    ASSERT_EQ(csv.status, 0) << csv.err;
    std::stringstream lines(csv.out);
    std::string header, row;
    std::getline(lines, header);
    const auto names = csvCells(header);
    const auto at = std::find(names.begin(), names.end(), "twice_loss") - names.begin();
    ASSERT_LT(size_t(at), names.size()) << header;
    while (std::getline(lines, row) && row.rfind("3,", 0) != 0) {
    }
    ASSERT_GT(csvCells(row).size(), size_t(at)) << csv.out;
    EXPECT_EQ(csvCells(row)[size_t(at)], "100");

    const Result show = cli("show 1 --json");
    ASSERT_EQ(show.status, 0) << show.err;
    const json s = json::parse(show.out);
    EXPECT_EQ(s["summary"]["extra_note"], "from the extra column");
    EXPECT_EQ(s["alarms"][0]["twice_threshold"], 50.0);
    EXPECT_EQ(s["forecasts"][0]["twice_rate"], 3.0);

    const Result list = cli("list");
    ASSERT_EQ(list.status, 0) << list.err;
    EXPECT_NE(list.out.find("extra note"), std::string::npos) << list.out;
    EXPECT_NE(list.out.find("from the extra column"), std::string::npos) << list.out;
    const Result listJson = cli("list --json");
    ASSERT_EQ(listJson.status, 0) << listJson.err;
    EXPECT_EQ(json::parse(listJson.out)[0]["extra_note"], "from the extra column");
}

TEST_F(RecordColumnsTest, LessonsCanWatchTheExtraStepColumn) {
    const auto metrics = lessonMetrics();
    EXPECT_NE(std::find(metrics.begin(), metrics.end(), "twice_loss"), metrics.end());
    EXPECT_NE(lessonReferenceMarkdown().find("`twice_loss`: twice the loss (step)"),
              std::string::npos);
}

TEST_F(RecordColumnsTest, AnImportCopiesAndChecksTheExtraColumnsByTheirRules) {
    changeExtraColumns();
    exec("UPDATE runs SET extra_note = 'two' || char(10) || 'lines'");  // paragraphs: taken
    const std::string into = (m_dir / "into.db").string();
    ASSERT_EQ(importInto(into), "");
    RunStore store(into, StoreAccess::ReadOnly);
    EXPECT_EQ(store.run(1).notes, "two\nlines");
    EXPECT_EQ(store.stepMetrics(1).at(3).loss, 50.0);
    EXPECT_EQ(store.histograms(1, 0, 1).at(0).overflow, 7);
    EXPECT_EQ(store.events(1).at(0).kind, "qk_norm");

    exec("UPDATE histograms SET twice_overflow = 15");  // odd: refused by its rule
    const std::string odd = importInto((m_dir / "odd.db").string());
    EXPECT_NE(odd.find("twice_overflow holds integer '15'; expected an even integer"),
              std::string::npos)
        << odd;
    exec(
        "UPDATE histograms SET twice_overflow = 14;"
        "UPDATE events SET kind_copy = 'a' || char(10) || 'b'");  // one line by default
    const std::string broken = importInto((m_dir / "broken.db").string());
    EXPECT_NE(broken.find("kind_copy holds text"), std::string::npos) << broken;
    EXPECT_NE(broken.find("expected one line of text"), std::string::npos) << broken;
    EXPECT_TRUE(RunStore((m_dir / "odd.db").string()).listRuns().empty());  // nothing stored
}

TEST_F(RecordColumnsTest, AMergedContinuationKeepsTheExtraColumnOursKeeps) {
    const std::string into = (m_dir / "into.db").string();
    ASSERT_EQ(importInto(into), "");
    execIn(into, "UPDATE runs SET extra_note = 'ours'");
    {
        RunWriter w(m_db, 1, 5);  // the run continued where it came from
        StepMetrics m;
        m.step = 5;
        m.loss = 1;
        w.addStep(m);
        w.finish(RunStatus::Finished);
    }
    exec(
        "UPDATE runs SET extra_note = 'theirs'; UPDATE step_metrics SET twice_loss = 8 "
        "WHERE step = 5");
    RunStore store(into);
    EXPECT_EQ(store.importRuns(m_db).updated, 1);
    EXPECT_EQ(textIn(into, "SELECT extra_note FROM runs"), "ours");
    EXPECT_EQ(store.stepMetrics(1).size(), 6u);
    EXPECT_EQ(store.stepMetrics(1).at(5).loss, 4.0);  // the source's twice_loss, taken
}
