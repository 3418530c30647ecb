// store_output_logits_test.cpp — the output-logit statistics and the update norm (schema 10)
// and the output embedding's mean norm (schema 15) round-trip through the store and every
// export; a schema-9 (schema-14) file reads them as NaN ("nan" in JSON and CSV) and a writer
// migrates it, keeping its rows.
#include <gtest/gtest.h>

#include <cmath>

#include "qklab/store/run_export.h"
#include "support/store_fixture.h"

using namespace qklab;
using namespace qklab::testsupport;

namespace {

StepMetrics stepWithOutputLogits(int64_t s) {
    StepMetrics m;
    m.step = s;
    m.loss = 2.0;
    m.seqLen = 64;
    m.logZMean = 5.5 + s;
    m.logZMax = 9.25 + s;
    m.outLogitMax = 12.5 + s;
    m.zLossTerm = 31.0 + s;
    m.updateNorm = 0.125 * (s + 1);
    m.muNorm = 0.75 + s;
    return m;
}

// The CSV's header and its first data row, split at commas.
std::pair<std::vector<std::string>, std::vector<std::string>> csvHeadAndFirstRow(
    const std::string& csv) {
    auto split = [](const std::string& line) {
        std::vector<std::string> cells;
        size_t start = 0;
        for (size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1)
            cells.push_back(line.substr(start, comma - start));
        cells.push_back(line.substr(start));
        return cells;
    };
    const size_t first = csv.find('\n'), second = csv.find('\n', first + 1);
    return {split(csv.substr(0, first)), split(csv.substr(first + 1, second - first - 1))};
}

std::string cellOf(const std::string& csv, const std::string& column) {
    const auto [head, row] = csvHeadAndFirstRow(csv);
    for (size_t i = 0; i < head.size() && i < row.size(); ++i)
        if (head[i] == column) return row[i];
    return "<no column " + column + ">";
}

}  // namespace

TEST_F(StoreTest, OutputLogitStatisticsRoundTripAndAreExported) {
    {
        RunWriter w(m_path, NewRun{});
        w.addStep(stepWithOutputLogits(0));
        w.addStep(stepWithOutputLogits(1));
        w.finish(RunStatus::Finished);
    }
    RunStore store(m_path, StoreAccess::ReadOnly);
    const auto ms = store.stepMetrics(1);
    ASSERT_EQ(ms.size(), 2u);
    EXPECT_DOUBLE_EQ(ms[1].logZMean, 6.5);
    EXPECT_DOUBLE_EQ(ms[1].logZMax, 10.25);
    EXPECT_DOUBLE_EQ(ms[1].outLogitMax, 13.5);
    EXPECT_DOUBLE_EQ(ms[1].zLossTerm, 32.0);
    EXPECT_DOUBLE_EQ(ms[1].updateNorm, 0.25);
    EXPECT_DOUBLE_EQ(ms[1].muNorm, 1.75);
    const auto json = runExportJson(store, 1);
    EXPECT_DOUBLE_EQ(json["steps"][0]["logz_mean"].get<double>(), 5.5);
    EXPECT_DOUBLE_EQ(json["steps"][0]["logz_max"].get<double>(), 9.25);
    EXPECT_DOUBLE_EQ(json["steps"][0]["out_logit_max"].get<double>(), 12.5);
    EXPECT_DOUBLE_EQ(json["steps"][0]["z_loss_term"].get<double>(), 31.0);
    EXPECT_DOUBLE_EQ(json["steps"][0]["update_norm"].get<double>(), 0.125);
    const std::string csv = runExportCsv(store, 1);
    EXPECT_EQ(cellOf(csv, "logz_mean"), "5.5");
    EXPECT_EQ(cellOf(csv, "out_logit_max"), "12.5");
    EXPECT_EQ(cellOf(csv, "update_norm"), "0.125");
    EXPECT_DOUBLE_EQ(json["steps"][0]["mu_norm"].get<double>(), 0.75);
    EXPECT_EQ(cellOf(csv, "mu_norm"), "0.75");
}

// Schema 15 added mu_norm (output embedding centring): a schema-14 file's steps read it as NaN,
// and a writer migrates it and stores it.
TEST_F(StoreTest, SchemaFourteenStepsReadMuNormAsNanAndAWriterMigrates) {
    {
        RunWriter w(m_path, NewRun{});
        w.addStep(stepWithOutputLogits(0));
        w.finish(RunStatus::Finished);
    }
    rawExec(QKLAB_UNDO_SCHEMA_15 "PRAGMA user_version = 14; PRAGMA wal_checkpoint(TRUNCATE)",
            m_path);
    {
        RunStore reader(m_path, StoreAccess::ReadOnly);
        const auto ms = reader.stepMetrics(1);
        ASSERT_EQ(ms.size(), 1u);
        EXPECT_DOUBLE_EQ(ms[0].logZMean, 5.5);
        EXPECT_TRUE(std::isnan(ms[0].muNorm));
        EXPECT_EQ(cellOf(runExportCsv(reader, 1), "mu_norm"), "nan");
    }
    EXPECT_EQ(rawInt("PRAGMA user_version"), 14);  // the reader did not migrate it
    {
        RunWriter w(m_path, 1, 1);
        w.addStep(stepWithOutputLogits(1));
        w.finish(RunStatus::Finished);
    }
    EXPECT_EQ(rawInt("PRAGMA user_version"), kLatestSchema);
    const auto ms = RunStore(m_path, StoreAccess::ReadOnly).stepMetrics(1);
    ASSERT_EQ(ms.size(), 2u);
    EXPECT_TRUE(std::isnan(ms[0].muNorm));  // the migrated row has NULL
    EXPECT_DOUBLE_EQ(ms[1].muNorm, 1.75);
}

TEST_F(StoreTest, SchemaNineStepsReadTheNewColumnsAsNanAndAWriterMigrates) {
    {
        RunWriter w(m_path, NewRun{});
        w.addStep(step(0, 2.5));
        w.finish(RunStatus::Finished);
    }
    rawExec(QKLAB_UNDO_SCHEMA_10 "PRAGMA user_version = 9; PRAGMA wal_checkpoint(TRUNCATE)",
            m_path);
    {
        RunStore reader(m_path, StoreAccess::ReadOnly);
        EXPECT_EQ(reader.schemaVersion(), 9);
        const auto ms = reader.stepMetrics(1);
        ASSERT_EQ(ms.size(), 1u);
        EXPECT_DOUBLE_EQ(ms[0].loss, 2.5);
        EXPECT_TRUE(std::isnan(ms[0].logZMean));
        EXPECT_TRUE(std::isnan(ms[0].updateNorm));
        EXPECT_EQ(runExportJson(reader, 1)["steps"][0]["logz_max"], "nan");  // as any NaN
        EXPECT_EQ(cellOf(runExportCsv(reader, 1), "z_loss_term"), "nan");
    }
    EXPECT_EQ(rawInt("PRAGMA user_version"), 9);  // the reader did not migrate it
    {
        RunWriter w(m_path, 1, 1);  // a writer migrates, then appends a step with the columns
        w.addStep(stepWithOutputLogits(1));
        w.finish(RunStatus::Finished);
    }
    EXPECT_EQ(rawInt("PRAGMA user_version"), kLatestSchema);
    RunStore store(m_path, StoreAccess::ReadOnly);
    const auto ms = store.stepMetrics(1);
    ASSERT_EQ(ms.size(), 2u);
    EXPECT_DOUBLE_EQ(ms[0].loss, 2.5);
    EXPECT_TRUE(std::isnan(ms[0].outLogitMax));  // the migrated row has NULL
    EXPECT_DOUBLE_EQ(ms[1].outLogitMax, 13.5);
    EXPECT_DOUBLE_EQ(ms[1].zLossTerm, 32.0);
}

// Schema 11 (issue 26): a schema-10 file's runs read as qklab's own, with no user config and no
// custom scalars, without the reader migrating it; a writer migrates it and can store them.
TEST_F(StoreTest, SchemaTenRunsReadAsQklabsOwnAndAWriterMigrates) {
    {
        RunWriter w(m_path, NewRun{});
        w.addStep(step(0, 2.5));
        w.finish(RunStatus::Finished);
    }
    rawExec(QKLAB_UNDO_SCHEMA_11 "PRAGMA user_version = 10; PRAGMA wal_checkpoint(TRUNCATE)",
            m_path);
    {
        RunStore reader(m_path, StoreAccess::ReadOnly);
        EXPECT_EQ(reader.schemaVersion(), 10);
        const RunInfo r = reader.run(1);
        EXPECT_EQ(r.source, "qklab");
        EXPECT_EQ(r.userConfigJson, "");
        EXPECT_TRUE(reader.customScalars(1).empty());
        EXPECT_TRUE(runExportJson(reader, 1)["user_config"].is_null());
    }
    EXPECT_EQ(rawInt("PRAGMA user_version"), 10);  // the reader did not migrate it
    {
        NewRun run;
        run.name = "external";
        run.source = "python: hf-llama";
        run.userConfigJson = R"({"lr": 0.03})";
        RunWriter w(m_path, run);  // a writer migrates
        w.addStep(step(0, 3.0));
        w.addCustomScalar({0, "tokens_seen", 1024});
        w.finish(RunStatus::Finished);
    }
    EXPECT_EQ(rawInt("PRAGMA user_version"), kLatestSchema);
    RunStore store(m_path, StoreAccess::ReadOnly);
    EXPECT_EQ(store.run(1).source, "qklab");
    EXPECT_EQ(store.run(2).source, "python: hf-llama");
    EXPECT_EQ(runExportJson(store, 2)["user_config"]["lr"], 0.03);
    const auto scalars = store.customScalars(2);
    ASSERT_EQ(scalars.size(), 1u);
    EXPECT_EQ(scalars[0].name, "tokens_seen");
    EXPECT_DOUBLE_EQ(scalars[0].value, 1024.0);
    // The CSV export (`qklab-cli export --format csv`) has it as a column after the step metrics.
    const std::string csv = runExportCsv(store, 2);
    const std::string header = csv.substr(0, csv.find('\n'));
    EXPECT_EQ(header.substr(header.rfind(',') + 1), "tokens_seen") << header;
    EXPECT_EQ(csv.substr(csv.rfind(',') + 1), "1024\n") << csv;
}

// Schema 14 added the sink probes (first_token_share, max_activation): a schema-13 file's probe
// rows read them as NaN, and a writer migrates it and stores them.
TEST_F(StoreTest, SchemaThirteenProbesReadTheSinkColumnsAsNanAndAWriterMigrates) {
    ProbeStats p;
    p.step = 0;
    p.entropy = 2.5;
    p.firstTokenShare = 0.25;
    p.maxActivation = 40;
    {
        RunWriter w(m_path, NewRun{});
        w.addProbe(p);
        w.finish(RunStatus::Finished);
    }
    rawExec(QKLAB_UNDO_SCHEMA_14 "PRAGMA user_version = 13; PRAGMA wal_checkpoint(TRUNCATE)",
            m_path);
    {
        RunStore reader(m_path, StoreAccess::ReadOnly);
        const auto ps = reader.probeStats(1);
        ASSERT_EQ(ps.size(), 1u);
        EXPECT_DOUBLE_EQ(ps[0].entropy, 2.5);
        EXPECT_TRUE(std::isnan(ps[0].firstTokenShare));
        EXPECT_TRUE(std::isnan(ps[0].maxActivation));
    }
    EXPECT_EQ(rawInt("PRAGMA user_version"), 13);  // the reader did not migrate it
    {
        RunWriter w(m_path, 1, 1);
        p.step = 1;
        w.addProbe(p);
        w.finish(RunStatus::Finished);
    }
    EXPECT_EQ(rawInt("PRAGMA user_version"), kLatestSchema);
    const auto ps = RunStore(m_path, StoreAccess::ReadOnly).probeStats(1);
    ASSERT_EQ(ps.size(), 2u);
    EXPECT_TRUE(std::isnan(ps[0].firstTokenShare));  // the migrated row has NULL
    EXPECT_DOUBLE_EQ(ps[1].firstTokenShare, 0.25);
    EXPECT_DOUBLE_EQ(ps[1].maxActivation, 40.0);
}
