// qklab/store/record_columns.h — one column table per stored record: step metrics, spikes, logit
// alarms, QK clips, custom scalars, change reports, probe statistics, histograms, attention
// maps, events, checkpoints, and the runs themselves (the run list's columns).
//
// A column is its name in the store, JSON and CSV, the title views and messages show, how it
// reads and sets the record's field, and the schema version it arrived in. The store's writer
// and reader, the JSON and CSV exports, compare, lesson metrics, the app's plots and run list
// and the CLI's `list` iterate these tables instead of naming fields, so a column is added in
// its record's table and, when it is stored, in one migration (core/store/src/schema.cpp).
// Probe statistics have the same in probeColumns() (qklab/store/records.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "qklab/store/records.h"
#include "qklab/store/run_store.h"

namespace qklab {

// The bytes of a blob column as stored (an array in its stored encoding).
using ColumnBytes = std::vector<unsigned char>;

// One value of a column: absent (SQL NULL, JSON null, an empty CSV cell), an integer, a number
// (NaN included), text or bytes.
using ColumnValue = std::variant<std::monostate, int64_t, double, std::string, ColumnBytes>;

// How a column is stored and exported.
enum class ColumnType {
    Integer,       // an integer, or absent
    Real,          // a number: NaN is stored as NULL and NULL reads as NaN
    OptionalReal,  // a number or absent: NaN is stored as the text 'NaN', apart from absent
    Text,          // text, or absent (NULL), which reads and exports as ""
    Blob,          // bytes (an empty blob, never NULL, when there are none); NULL reads as none
};

// What importing another qklab file makes of a column, beyond the type its schema declares:
// core/store/src/import_check.cpp checks every row of the file with it before anything is
// copied, import_identity.cpp and store_import.cpp merge a run continued elsewhere by it.
struct ImportRule {
    // What text holds: one line (it is printed in tables); paragraphs (line breaks and tabs);
    // a JSON object or "" (Python: a user's config, bare NaN and Infinity as Python writes
    // them); a name (any bytes: one the naming rule refuses is stored under it).
    enum class Text { Line, Paragraphs, Json, PythonJson, Name } text = Text::Line;
    std::string check;      // SQL over the row that the value meets too, "" none
    std::string meaning;    // what `check` asks, in words: "an integer from 0"
    int64_t maxBytes = 0;   // a blob's or text's limit, 0: the import's own
    bool required = false;  // never NULL, whatever the schema declares
    // A run continued elsewhere and merged back: the source's value is taken; ours is kept
    // (what the user wrote here); or it must be the same, else the source is another run.
    enum class OnContinue { Taken, Kept, Same } onContinue = OnContinue::Taken;
};

template <class Record>
struct RecordColumn {
    const char* name;   // in the store, JSON and CSV, e.g. "grad_norm"
    const char* title;  // what views and messages say, e.g. "grad norm"
    ColumnType type;
    std::function<ColumnValue(const Record&)> get;
    std::function<void(Record&, const ColumnValue&)> set;
    int since = 1;  // the schema version that added it: an older file reads it as absent
    ImportRule import = {};
};

// The rows of one record in the store: every row also holds the run's id (run_id).
template <class Record>
struct RecordTable {
    const char* table;  // e.g. "qk_clips"
    int since;          // the schema version that added the table: an older file has no rows
    const char* order;  // how a reader orders one run's rows (SQL), e.g. "step, layer, head"
    // What storing a row does when a row with its key is there already.
    enum class Insert { Append, KeepFirst, KeepLast } insert;
    std::vector<RecordColumn<Record>> columns;
    // Whether an import copies the rows as they are (checkpoints: their files are copied).
    bool importCopiesRows = true;
};

const RecordTable<StepMetrics>& stepMetricTable();
const RecordTable<Spike>& spikeTable();
const RecordTable<LogitAlarm>& logitAlarmTable();
const RecordTable<QkClip>& qkClipTable();
const RecordTable<CustomScalar>& customScalarTable();
const RecordTable<ChangeReport>& changeReportTable();
// The probe_stats rows: step, layer, head, then probeColumns() (qklab/store/records.h) in order.
const RecordTable<ProbeStats>& probeStatTable();
const RecordTable<LogitHistogram>& histogramTable();
const RecordTable<AttentionMap>& attentionMapTable();
const RecordTable<EventRecord>& eventTable();
const RecordTable<StoredCheckpoint>& checkpointTable();
const RecordTable<Forecast>& forecastTable();

// Calls f(table) for every per-run record table above, in the order declared.
template <class F>
void forEachRecordTable(F&& f) {
    f(stepMetricTable());
    f(spikeTable());
    f(logitAlarmTable());
    f(qkClipTable());
    f(customScalarTable());
    f(changeReportTable());
    f(probeStatTable());
    f(histogramTable());
    f(attentionMapTable());
    f(eventTable());
    f(checkpointTable());
    f(forecastTable());
}

// A column of RunInfo: what a reader selects from `runs r` (the stored column or a subquery,
// and what stands in for it in a file older than `since`), and where it shows.
struct RunColumn : RecordColumn<RunInfo> {
    std::string select, before;
    // RunInfo only; also the JSON summary (`show`, `list --json`, under its name); and also the
    // run list (`list` and the app's run list, under its title).
    enum class Shown { InfoOnly, Summary, List } shown;
};
// Run-list columns first, in the order the lists show them.
const std::vector<RunColumn>& runColumns();
// The run-list columns (Shown::List), in order.
std::vector<const RunColumn*> listedRunColumns();

// The import rule of column `column` of stored table `table` (a record table, `runs` or
// `sweeps`); the default rule (one line of text) for a column no table names (pid, host).
ImportRule importRuleOf(const std::string& table, const std::string& column);
// The stored per-run tables an import copies row for row (importCopiesRows).
std::vector<std::string> importedRunTables();

// The column named `name`, or nullptr.
template <class Column>
const Column* findColumn(const std::vector<Column>& columns, const std::string& name) {
    for (const Column& c : columns)
        if (name == c.name) return &c;
    return nullptr;
}

// The step-metric column named `name` (a view picking the columns it draws); throws
// Error{Internal} when there is none.
const RecordColumn<StepMetrics>& stepMetricColumn(const std::string& name);

// The step columns a lesson can watch and a plot can draw: the numbers.
bool isMeasurement(const RecordColumn<StepMetrics>& c);

// The value as a number (integers too); nullopt when it is absent or text.
std::optional<double> numberOf(const ColumnValue& v);
// The value as one CSV cell: "" when absent, numbers with 9 significant digits, text as is.
std::string csvText(const ColumnValue& v);

}  // namespace qklab
