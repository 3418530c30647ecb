// store_fixture.h — what the store's test suites share (tests/store_*_test.cpp): a fresh
// database path per test, a raw SQLite connection to check the file itself, small records, the
// SQL that turns a file back into an older schema, and errorCodeOf.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <limits>
#include <string>

#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"

// Turns a file back into what a schema-14 build wrote (prefix of every older downgrade).
#define QKLAB_UNDO_SCHEMA_15 "ALTER TABLE step_metrics DROP COLUMN mu_norm; "
// Turns a file back into what a schema-13 build wrote (prefix of every older downgrade).
#define QKLAB_UNDO_SCHEMA_14                                                                      \
    QKLAB_UNDO_SCHEMA_15                                                                          \
    "ALTER TABLE probe_stats DROP COLUMN first_token_share; ALTER TABLE probe_stats DROP COLUMN " \
    "max_activation; "
// Turns a file back into what a schema-12 build wrote (prefix of every older downgrade).
#define QKLAB_UNDO_SCHEMA_13 QKLAB_UNDO_SCHEMA_14 "DROP TABLE forecasts; "
// Turns a file back into what a schema-11 build wrote (prefix of every older downgrade).
#define QKLAB_UNDO_SCHEMA_12 QKLAB_UNDO_SCHEMA_13 "DROP TABLE change_reports; "
// Turns a file back into what a schema-10 build wrote (prefix of every older downgrade).
#define QKLAB_UNDO_SCHEMA_11                                                                 \
    QKLAB_UNDO_SCHEMA_12                                                                     \
    "DROP TABLE custom_scalars; ALTER TABLE runs DROP COLUMN user_config; ALTER TABLE runs " \
    "DROP COLUMN source; "
// Turns a file back into what a schema-9 build wrote (prefix of every older downgrade).
#define QKLAB_UNDO_SCHEMA_10                                                                  \
    QKLAB_UNDO_SCHEMA_11                                                                      \
    "ALTER TABLE step_metrics DROP COLUMN logz_mean; ALTER TABLE step_metrics DROP COLUMN "   \
    "logz_max; ALTER TABLE step_metrics DROP COLUMN out_logit_max; ALTER TABLE step_metrics " \
    "DROP COLUMN z_loss_term; ALTER TABLE step_metrics DROP COLUMN update_norm; "
// Turns a file back into what a schema-8 build wrote (prefix of every older downgrade).
#define QKLAB_UNDO_SCHEMA_9 QKLAB_UNDO_SCHEMA_10 "DROP TABLE qk_clips; "
// Turns a file back into what a schema-7 build wrote (prefix of every older downgrade).
#define QKLAB_UNDO_SCHEMA_8                                                                 \
    QKLAB_UNDO_SCHEMA_9                                                                     \
    "DROP INDEX runs_by_sweep; DROP INDEX runs_by_uuid; ALTER TABLE runs DROP COLUMN "      \
    "sweep_coords; ALTER TABLE runs DROP COLUMN sweep_point; ALTER TABLE runs DROP COLUMN " \
    "sweep_id; ALTER TABLE runs DROP COLUMN uuid; DROP TABLE sweeps; "

namespace qklab::testsupport {

namespace fs = std::filesystem;

constexpr int kLatestSchema = 15;  // 4: histograms.nan, 5: logit_alarms, 6: map bytes,
                                   // 7: comparisons, 8: sweeps and run UUIDs, 9: qk_clips,
                                   // 10: output-logit statistics and update norm,
                                   // 11: external runs (source, user_config, custom_scalars),
                                   // 12: change reports, 13: forecasts,
                                   // 14: the sink probes (first_token_share, max_activation),
                                   // 15: step_metrics.mu_norm (output embedding centring)

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

// n finished runs named run-a, run-b, ...; their ids are 1..n.
inline void writeRuns(const std::string& path, int n) {
    for (int i = 0; i < n; ++i) {
        NewRun nr;
        nr.name = std::string("run-") + static_cast<char>('a' + i);
        RunWriter w(path, nr);
        w.finish(RunStatus::Finished);
    }
}

}  // namespace qklab::testsupport
