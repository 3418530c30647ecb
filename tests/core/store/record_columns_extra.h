// record_columns_extra.h — a column added to every record, the way a developer adds one: an
// entry in the record's column table and one migration, nothing else.
// tests/core/store/CMakeLists.txt compiles core's record_columns.cpp and schema.cpp again with
// -DQKLAB_EXTRA_COLUMNS="record_columns_extra.h" into record_columns_test and
// qklab-cli-extra-columns; those objects come before qklab_base on the link line, so they are
// the tables and the migrations of both binaries.
//
// A test build cannot give StepMetrics or RunInfo a field of its own (the engine would have to
// be rebuilt), so each extra column is a second representation of an existing field: reading
// `twice_loss` sets the loss to half of it. What the exports show is then the value that was
// read back from the extra column. Two carry an import rule (ImportRule): `twice_overflow`
// holds an even integer, `extra_note` paragraphs that a merged continuation keeps.
#pragma once

#include <string>
#include <vector>

#include "qklab/store/record_columns.h"
#include "store/src/schema.h"

namespace qklab {

inline constexpr const char* kExtraColumnsMigration = R"sql(
ALTER TABLE step_metrics ADD COLUMN twice_loss REAL;
ALTER TABLE spikes ADD COLUMN twice_z_score REAL;
ALTER TABLE logit_alarms ADD COLUMN twice_threshold REAL;
ALTER TABLE qk_clips ADD COLUMN twice_factor REAL;
ALTER TABLE custom_scalars ADD COLUMN twice_value REAL;
ALTER TABLE change_reports ADD COLUMN twice_loss_z REAL;
ALTER TABLE forecasts ADD COLUMN twice_rate REAL;
ALTER TABLE probe_stats ADD COLUMN twice_entropy REAL;
ALTER TABLE histograms ADD COLUMN twice_overflow INTEGER;
ALTER TABLE attention_maps ADD COLUMN tokens_copy BLOB;
ALTER TABLE events ADD COLUMN kind_copy TEXT;
ALTER TABLE checkpoints ADD COLUMN path_copy TEXT;
ALTER TABLE runs ADD COLUMN extra_note TEXT;
)sql";

// Twice `field`; reading it sets the field to half the stored value.
template <class Record>
RecordColumn<Record> twice(const char* name, const char* title, double Record::*field) {
    return {name,
            title,
            ColumnType::Real,
            [field](const Record& r) { return ColumnValue(2 * (r.*field)); },
            [field](Record& r, const ColumnValue& v) {
                if (const auto d = numberOf(v)) r.*field = *d / 2;
            },
            latestSchemaVersion()};
}

inline void addExtraColumns(std::vector<RecordColumn<StepMetrics>>& columns) {
    columns.push_back(twice("twice_loss", "twice the loss", &StepMetrics::loss));
}

inline void addExtraColumns(std::vector<RecordColumn<Spike>>& columns) {
    columns.push_back(twice("twice_z_score", "twice z", &Spike::zScore));
}

inline void addExtraColumns(std::vector<RecordColumn<LogitAlarm>>& columns) {
    columns.push_back(twice("twice_threshold", "twice the line", &LogitAlarm::threshold));
}

inline void addExtraColumns(std::vector<RecordColumn<QkClip>>& columns) {
    columns.push_back(twice("twice_factor", "twice the factor", &QkClip::factor));
}

inline void addExtraColumns(std::vector<RecordColumn<ChangeReport>>& columns) {
    columns.push_back(twice("twice_loss_z", "twice the loss z", &ChangeReport::lossZ));
}

inline void addExtraColumns(std::vector<RecordColumn<Forecast>>& columns) {
    columns.push_back(twice("twice_rate", "twice the rate", &Forecast::rate));
}

inline void addExtraColumns(std::vector<RecordColumn<CustomScalar>>& columns) {
    columns.push_back(twice("twice_value", "twice the value", &CustomScalar::value));
}

inline void addExtraColumns(std::vector<RecordColumn<ProbeStats>>& columns) {
    columns.push_back(twice("twice_entropy", "twice the entropy", &ProbeStats::entropy));
}

// Twice the overflow count; reading it sets the overflow to half the stored value. An import
// takes even integers only.
inline void addExtraColumns(std::vector<RecordColumn<LogitHistogram>>& columns) {
    RecordColumn<LogitHistogram> c{
        "twice_overflow",
        "twice the overflow",
        ColumnType::Integer,
        [](const LogitHistogram& h) { return ColumnValue(2 * h.overflow); },
        [](LogitHistogram& h, const ColumnValue& v) {
            if (const auto* i = std::get_if<int64_t>(&v)) h.overflow = *i / 2;
        },
        latestSchemaVersion()};
    c.import.check = "twice_overflow % 2 = 0";
    c.import.meaning = "an even integer";
    columns.push_back(std::move(c));
}

// The map's bytes again, as a blob; reading it replaces the bytes (when it holds any).
inline void addExtraColumns(std::vector<RecordColumn<AttentionMap>>& columns) {
    columns.push_back({"tokens_copy", "the bytes again", ColumnType::Blob,
                       [](const AttentionMap& m) {
                           return ColumnValue(ColumnBytes(m.tokens.begin(), m.tokens.end()));
                       },
                       [](AttentionMap& m, const ColumnValue& v) {
                           if (const auto* b = std::get_if<ColumnBytes>(&v))
                               m.tokens.assign(b->begin(), b->end());
                       },
                       latestSchemaVersion()});
}

// The event's kind again; reading it replaces the kind (when it holds text).
inline void addExtraColumns(std::vector<RecordColumn<EventRecord>>& columns) {
    columns.push_back({"kind_copy", "the kind again", ColumnType::Text,
                       [](const EventRecord& e) { return ColumnValue(e.kind); },
                       [](EventRecord& e, const ColumnValue& v) {
                           if (const auto* s = std::get_if<std::string>(&v)) e.kind = *s;
                       },
                       latestSchemaVersion()});
}

// The stored path again; reading it replaces the path (when it holds text).
inline void addExtraColumns(std::vector<RecordColumn<StoredCheckpoint>>& columns) {
    columns.push_back({"path_copy", "the file again", ColumnType::Text,
                       [](const StoredCheckpoint& c) { return ColumnValue(c.path); },
                       [](StoredCheckpoint& c, const ColumnValue& v) {
                           if (const auto* s = std::get_if<std::string>(&v)) c.path = *s;
                       },
                       latestSchemaVersion()});
}

// A run-list column stored in `runs`; reading it replaces the notes (when it holds text). An
// import takes paragraphs, and a merged continuation keeps ours.
inline void addExtraColumns(std::vector<RunColumn>& columns) {
    RecordColumn<RunInfo> note{"extra_note",
                               "extra note",
                               ColumnType::Text,
                               [](const RunInfo& r) { return ColumnValue(r.notes); },
                               [](RunInfo& r, const ColumnValue& v) {
                                   if (const auto* s = std::get_if<std::string>(&v)) r.notes = *s;
                               },
                               latestSchemaVersion()};
    note.import.text = ImportRule::Text::Paragraphs;
    note.import.onContinue = ImportRule::OnContinue::Kept;
    columns.push_back({std::move(note), "r.extra_note", "NULL", RunColumn::Shown::List});
}

}  // namespace qklab
