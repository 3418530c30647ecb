// store_forecasts_test.cpp — forecasts (schema 13, qklab/analysis/forecast.h): stored one per
// step, layer and head, a forecast made again keeps the first word, exported, gone from a
// resumed run's steps, copied by an import, absent from older files, which a reader does not
// migrate.
#include <gtest/gtest.h>

#include "qklab/store/run_export.h"
#include "support/store_fixture.h"

using namespace qklab;
using namespace qklab::testsupport;

namespace {

Forecast forecastOf(int64_t step, int32_t layer, int64_t predicted) {
    Forecast f;
    f.step = step;
    f.kind = OnsetKind::MaxLogit;
    f.layer = layer;
    f.head = -1;
    f.metric = "logit_max_raw";
    f.value = 12.5;
    f.threshold = 30;
    f.rate = 0.02;
    f.predictedStep = predicted;
    f.text = "at this rate ...";
    return f;
}

}  // namespace

TEST_F(StoreTest, ForecastsRoundTripAndExport) {
    int64_t id = 0;
    {
        RunWriter w(m_path, NewRun{});
        id = w.runId();
        w.addForecast(forecastOf(70, 1, 136));
        w.addForecast(forecastOf(40, 0, 180));  // written out of order
        w.flush();
        w.addForecast(forecastOf(70, 1, 999));  // made again: the first stays
        w.finish(RunStatus::Finished);
    }
    RunStore store(m_path, StoreAccess::ReadOnly);
    const auto fs = store.forecasts(id);
    ASSERT_EQ(fs.size(), 2u);
    EXPECT_EQ(fs[0].step, 40);
    EXPECT_EQ(fs[1].step, 70);
    EXPECT_EQ(fs[1].layer, 1);
    EXPECT_EQ(fs[1].head, -1);
    EXPECT_EQ(fs[1].kind, OnsetKind::MaxLogit);
    EXPECT_EQ(fs[1].predictedStep, 136);
    EXPECT_DOUBLE_EQ(fs[1].rate, 0.02);
    EXPECT_EQ(fs[1].text, "at this rate ...");
    const auto j = runExportJson(store, id);
    ASSERT_EQ(j.at("forecasts").size(), 2u);
    EXPECT_EQ(j.at("forecasts")[1].at("kind"), "max_logit");
    EXPECT_EQ(j.at("forecasts")[1].at("predicted_step"), 136);
}

TEST_F(StoreTest, ForecastsResumedAndOlderFiles) {
    int64_t id = 0;
    {
        RunWriter w(m_path, NewRun{});
        id = w.runId();
        w.addForecast(forecastOf(40, 0, 180));
        w.addForecast(forecastOf(90, 0, 150));
        w.finish(RunStatus::Finished);
    }
    {
        RunWriter resumed(m_path, id, 60);  // the resumed run makes its forecasts again
        resumed.finish(RunStatus::Finished);
    }
    {
        RunStore store(m_path, StoreAccess::ReadOnly);
        ASSERT_EQ(store.forecasts(id).size(), 1u);
        EXPECT_EQ(store.forecasts(id)[0].step, 40);
    }
    rawExec(QKLAB_UNDO_SCHEMA_13 "PRAGMA user_version = 12; PRAGMA wal_checkpoint(TRUNCATE)",
            m_path);
    RunStore reader(m_path, StoreAccess::ReadOnly);
    EXPECT_EQ(reader.schemaVersion(), 12);
    EXPECT_TRUE(reader.forecasts(id).empty());
    EXPECT_EQ(rawInt("PRAGMA user_version"), 12);
}

TEST_F(StoreTest, ForecastsAreImported) {
    const std::string src = (m_dir / "shard.db").string();
    {
        RunWriter w(src, NewRun{});
        w.addForecast(forecastOf(40, 0, 180));
        w.finish(RunStatus::Finished);
    }
    {
        RunWriter taken(m_path, NewRun{});  // id 1 is taken here: the import gets id 2
        taken.finish(RunStatus::Finished);
    }
    RunStore store(m_path);
    ASSERT_EQ(store.importRuns(src).imported, 1);
    ASSERT_EQ(store.forecasts(2).size(), 1u);
    EXPECT_EQ(store.forecasts(2)[0].predictedStep, 180);
    EXPECT_TRUE(store.forecasts(1).empty());
}
