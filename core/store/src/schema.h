// schema.h — qklab's database schema: the migrations, the features each version added, and
// how a file is opened as a qklab database (identity checked, WAL on, migrated) or for reading
// (nothing created, migrated or written). Shared by RunStore, RunWriter and the import code.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sqlite_db.h"

namespace qklab {

constexpr int64_t kQklabApplicationId = 0x514B4C42;  // "QKLB"

// What each schema version added that readers adapt to. Readers never migrate: a file of an
// older schema is read as it is, so a query asks whether the file has the feature instead of
// comparing bare version numbers. Adding a column or table: one migration in schema.cpp, the
// column in its record's table (qklab/store/record_columns.h) with the version it arrived in, and,
// when more than a record table's reader must tell the old files apart, one row here.
enum class SchemaFeature {
    AttentionPath,  // step_metrics.attention_path
    HistogramNaN,   // histograms.nan
    LogitAlarms,    // the logit_alarms table
    MapReasons,     // attention_maps.tokens and .reason
    Comparisons,    // the comparisons table
    Sweeps,         // the sweeps table, run UUIDs and sweep membership
    QkClips,        // the qk_clips table
    OutputLogits,   // step_metrics.logz_mean, logz_max, out_logit_max, z_loss_term, update_norm
    ExternalRuns,   // runs.source and .user_config, the custom_scalars table
    ChangeReports,  // the change_reports table
    Forecasts,      // the forecasts table
    SinkProbes,     // probe_stats.first_token_share and .max_activation
    OutputMean,     // step_metrics.mu_norm
};

struct SchemaFeatureVersion {
    SchemaFeature feature;
    int version;  // the first schema version that has it
};

inline constexpr SchemaFeatureVersion kSchemaFeatures[] = {
    {SchemaFeature::AttentionPath, 2}, {SchemaFeature::HistogramNaN, 4},
    {SchemaFeature::LogitAlarms, 5},   {SchemaFeature::MapReasons, 6},
    {SchemaFeature::Comparisons, 7},   {SchemaFeature::Sweeps, 8},
    {SchemaFeature::QkClips, 9},       {SchemaFeature::OutputLogits, 10},
    {SchemaFeature::ExternalRuns, 11}, {SchemaFeature::ChangeReports, 12},
    {SchemaFeature::Forecasts, 13},    {SchemaFeature::SinkProbes, 14},
    {SchemaFeature::OutputMean, 15},
};

constexpr int schemaVersionOf(SchemaFeature feature) {
    for (const auto& f : kSchemaFeatures)
        if (f.feature == feature) return f.version;
    return 1 << 30;
}

// Whether a file of schema `fileVersion` has the feature.
constexpr bool hasFeature(int fileVersion, SchemaFeature feature) {
    return fileVersion >= schemaVersionOf(feature);
}

// The UUID of a run written before schema 8 (column names of `runs`, alias r): the same
// expression backfills it at migration and stands in for it when an older file is read as it
// is, so one old run has one UUID however it is reached.
constexpr const char* kLegacyRunUuid =
    "('legacy:' || r.created_at || ':' || ifnull(r.host, '') || ':' || ifnull(r.pid, 0) || "
    "':' || r.id)";

// Opens path as a qklab database: creates the parent directory, rejects foreign files
// (NotQklabDatabase) and newer schemas (Unsupported), enables and checks WAL, turns foreign
// keys on and applies pending migrations in one transaction.
std::unique_ptr<Database> openRunDatabase(const std::string& path);
// A reader's connection: nothing is created, migrated or written. Throws MissingFile when the
// file does not exist and NotQklabDatabase for someone else's file.
std::unique_ptr<Database> openRunDatabaseForReading(const std::string& path);
// An empty in-memory database holding qklab's schema as of `version` (the migrations replayed):
// what a file of that version must have, table by table and column by column.
std::unique_ptr<Database> schemaOfVersion(int version);
// The schema this build writes (the number of migrations): a column a test build adds arrives
// in it (tests/core/store/record_columns_extra.h).
int latestSchemaVersion();

std::string thisHostName();
std::string utcNowIso8601();

}  // namespace qklab
