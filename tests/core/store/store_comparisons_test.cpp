// store_comparisons_test.cpp — saved comparisons (schema 7): round trip, listing, refusal of
// invalid ones, deleted runs, read-only stores and older files.
#include <gtest/gtest.h>

#include "support/store_fixture.h"

using namespace qklab;
using namespace qklab::testsupport;

namespace {

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
        if (!c.name.empty() && c.name.size() <= 200 && c.name.find('\n') == std::string::npos) {
            EXPECT_NE(msg.find("'" + c.name + "'"), std::string::npos) << msg;
        }
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
