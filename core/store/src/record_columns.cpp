// record_columns.cpp — the column tables of qklab/store/record_columns.h and probeColumns(): every
// stored column of a record is named here and nowhere else.
//
// The makers of a column (column, blobColumn, their import rules) are column_makers.h.
//
// A test build compiles this file and schema.cpp again with QKLAB_EXTRA_COLUMNS naming a header
// that adds a column to every table and their migration (tests/core/store/record_columns_extra.h):
// the test then finds each column in the store and in every export.
#include "qklab/store/record_columns.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "column_makers.h"
#include "qklab/config/sweep.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"
#include "schema.h"
#include "sqlite_db.h"

#ifdef QKLAB_EXTRA_COLUMNS
#include QKLAB_EXTRA_COLUMNS  // a test build's addExtraColumns(columns) for every table
#endif

namespace qklab {

using namespace column_makers;

namespace {

constexpr int64_t kMaxMapSize = 8192;  // an attention map's side (T) an import accepts

// A map's weights: size x size float32, up to the largest value SQLite holds.
RecordColumn<AttentionMap> weightsColumn() {
    auto c = checked(blobColumn("weights", "weights", &AttentionMap::weights, floatBytes, floatsOf),
                     "length(weights) = size * size * 4", "a blob of size x size float32 weights");
    c.import.maxBytes = Database::kMaxValueBytes;
    return c;
}

// A map's reason by its name; a name this build does not know reads as periodic.
RecordColumn<AttentionMap> mapReasonColumn(int since) {
    return {
        "reason",
        "why",
        ColumnType::Text,
        [](const AttentionMap& m) { return ColumnValue(std::string(toString(m.reason))); },
        [](AttentionMap& m, const ColumnValue& v) { m.reason = mapReasonFromString(textOf(v)); },
        since};
}

using RunShown = RunColumn::Shown;

// `select` empty: the stored column of the same name.
RunColumn runColumn(RecordColumn<RunInfo> c, RunShown shown, std::string select = {},
                    std::string before = "NULL") {
    RunColumn out{std::move(c), std::move(select), std::move(before), shown};
    if (out.select.empty()) out.select = std::string("r.") + out.name;
    return out;
}

// The user's interventions (events of source "user") as [[step, kind, params, id], ...].
constexpr const char* kInterventionsSql =
    "(SELECT json_group_array(json_array(e.step, e.kind, e.params_json, e.id)) FROM events e "
    "WHERE e.run_id = r.id AND e.source = 'user')";

// Unreadable JSON leaves the list empty: the run still lists.
std::vector<EventRecord> interventionsFromJson(const std::string& text) {
    std::vector<std::pair<int64_t, EventRecord>> rows;
    nlohmann::json j;
    try {
        j = parseStoredJson(text, "the interventions");  // depth and size limits: a file's text
    } catch (const Error&) {
        return {};
    }
    if (!j.is_array()) return {};
    for (const auto& row : j) {
        if (!row.is_array() || row.size() != 4 || !row[0].is_number_integer() ||
            !row[1].is_string() || !row[2].is_string() || !row[3].is_number_integer())
            continue;
        rows.emplace_back(row[3].get<int64_t>(),
                          EventRecord{row[0].get<int64_t>(), row[1].get<std::string>(),
                                      row[2].get<std::string>(), "user"});
    }
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
        return std::tie(a.second.step, a.first) < std::tie(b.second.step, b.first);
    });
    std::vector<EventRecord> out;
    for (auto& row : rows) out.push_back(std::move(row.second));
    return out;
}

RecordColumn<RunInfo> interventionsColumn() {
    auto get = [](const RunInfo& r) {
        nlohmann::json rows = nlohmann::json::array();
        for (size_t i = 0; i < r.interventions.size(); ++i) {
            const EventRecord& e = r.interventions[i];
            rows.push_back({e.step, e.kind, e.paramsJson, i});
        }
        return ColumnValue(rows.dump());
    };
    auto set = [](RunInfo& r, const ColumnValue& v) {
        r.interventions = interventionsFromJson(textOf(v));
    };
    return {"interventions", "interventions", ColumnType::Text, get, set};
}

// Sweep membership (schema 8): a run with a sweep_id belongs to that sweep.
std::vector<RunColumn> sweepColumns() {
    auto member = [](const char* name, const char* title, auto get, auto set, ColumnType type) {
        return runColumn({name, title, type, get, set, schemaVersionOf(SchemaFeature::Sweeps)},
                         RunShown::InfoOnly);
    };
    // A continued run has its grid point (its sweep is the sweep here with its sweep's UUID).
    auto same = [](RunColumn c) {
        c.import.onContinue = ImportRule::OnContinue::Same;
        return c;
    };
    return {
        member(
            "sweep_id", "sweep",
            [](const RunInfo& r) {
                return r.sweep ? ColumnValue(r.sweep->sweepId) : ColumnValue();
            },
            [](RunInfo& r, const ColumnValue& x) {
                if (std::holds_alternative<int64_t>(x)) r.sweep = SweepMembership{integerOf(x)};
            },
            ColumnType::Integer),
        same(counted(member(
            "sweep_point", "sweep point",
            [](const RunInfo& r) { return r.sweep ? ColumnValue(r.sweep->point) : ColumnValue(); },
            [](RunInfo& r, const ColumnValue& x) {
                if (r.sweep)
                    r.sweep->point = std::holds_alternative<int64_t>(x) ? integerOf(x) : -1;
            },
            ColumnType::Integer))),
        // Its JSON is checked with the sweep it names (import_check.cpp).
        same(importedAs(member(
                            "sweep_coords", "sweep coordinates",
                            [](const RunInfo& r) {
                                return r.sweep ? ColumnValue(r.sweep->coordsJson) : ColumnValue();
                            },
                            [](RunInfo& r, const ColumnValue& x) {
                                if (r.sweep) r.sweep->coordsJson = textOf(x);
                            },
                            ColumnType::Text),
                        ImportRule::Text::Paragraphs)),
    };
}

// A table's columns as this build has them.
template <class Column>
std::vector<Column> built(std::vector<Column> columns) {
#ifdef QKLAB_EXTRA_COLUMNS
    addExtraColumns(columns);
#endif
    return columns;
}

std::vector<RunColumn> makeRunColumns() {
    const auto list = RunShown::List, summary = RunShown::Summary, info = RunShown::InfoOnly;
    using Text = ImportRule::Text;
    const auto kept = ImportRule::OnContinue::Kept, same = ImportRule::OnContinue::Same;
    constexpr int external = schemaVersionOf(SchemaFeature::ExternalRuns);
    std::vector<RunColumn> c{
        runColumn(column("id", "id", &RunInfo::id), list),
        runColumn(importedAs(column("name", "name", &RunInfo::name), Text::Name), list),
        runColumn(column("status", "status", &RunInfo::status), list),
        runColumn(counted(column("steps_done", "steps", &RunInfo::stepsDone)), list),
        // What runs are compared on: the latest validation, found by a backwards walk of the
        // (run_id, step) key (at most eval.every rows).
        runColumn(column("final_val_loss", "val loss", &RunInfo::finalValLoss), list,
                  "(SELECT m.val_loss FROM step_metrics m WHERE m.run_id = r.id AND m.val_loss "
                  "IS NOT NULL ORDER BY m.step DESC LIMIT 1)"),
        // The last training step's loss (one batch: noisy).
        runColumn(column("final_loss", "train loss", &RunInfo::finalLoss), list),
        runColumn(column("max_logit_raw", "max logit", &RunInfo::maxLogitRaw), list),
        runColumn(column("spikes", "spikes", &RunInfo::spikes), list,
                  "(SELECT count(*) FROM spikes s WHERE s.run_id = r.id)"),
        // A range scan of the (run_id, step, layer, head) key.
        runColumn(column("qk_clips", "qk clips", &RunInfo::qkClips,
                         schemaVersionOf(SchemaFeature::QkClips)),
                  list, "(SELECT count(*) FROM qk_clips c WHERE c.run_id = r.id)", "0"),
        runColumn(column("created_at", "created", &RunInfo::createdAt), list),
        // Where the run was trained: "qklab", or "python: <model kind>" for a run logged from
        // the user's own training loop through the Python package.
        runColumn(column("source", "source", &RunInfo::source, external), list, {}, "'qklab'"),
        runColumn(importedAs(column("tags", "tags", &RunInfo::tags), Text::Line, kept), list),
        runColumn(importedAs(column("status_message", "status message", &RunInfo::statusMessage),
                             Text::Paragraphs),
                  summary),
        runColumn(column("max_logit_capped", "max capped logit", &RunInfo::maxLogitCapped),
                  summary),
        runColumn(column("logit_alarms", "logit alarms", &RunInfo::logitAlarms,
                         schemaVersionOf(SchemaFeature::LogitAlarms)),
                  summary, "(SELECT count(*) FROM logit_alarms a WHERE a.run_id = r.id)", "0"),
        runColumn(column("seed", "seed", &RunInfo::seed), summary),
        runColumn(column("device", "device", &RunInfo::device), summary),
        runColumn(column("torch_version", "LibTorch", &RunInfo::torchVersion), summary),
        runColumn(column("app_version", "qklab", &RunInfo::appVersion), summary),
        runColumn(column("finished_at", "finished", &RunInfo::finishedAt), summary),
        runColumn(importedAs(column("notes", "notes", &RunInfo::notes), Text::Paragraphs, kept),
                  summary),
        runColumn(
            importedAs(column("config_json", "config", &RunInfo::configJson), Text::Json, same),
            info),
        // The user's own config of an external run (qklab.init(config=...)), as JSON.
        runColumn(
            importedAs(column("user_config", "user config", &RunInfo::userConfigJson, external),
                       Text::PythonJson, same),
            info, {}, "''"),
        runColumn(interventionsColumn(), info, kInterventionsSql),
        // An older file read as it is: the UUID its runs get when it is migrated.
        runColumn(required(column("uuid", "UUID", &RunInfo::uuid,
                                  schemaVersionOf(SchemaFeature::Sweeps))),
                  info, {}, kLegacyRunUuid),
    };
    for (RunColumn& s : sweepColumns()) c.push_back(std::move(s));
    return built(std::move(c));
}

}  // namespace

// KeepLast: a step written twice (validation reported separately) updates its row rather than
// abort a long run on a constraint error.
const RecordTable<StepMetrics>& stepMetricTable() {
    using M = StepMetrics;
    constexpr int outputLogits = schemaVersionOf(SchemaFeature::OutputLogits);
    static const RecordTable<M> table{
        "step_metrics", 1, "step", RecordTable<M>::Insert::KeepLast,
        built<RecordColumn<M>>({
            stepColumn(&M::step),
            column("loss", "training loss", &M::loss),  // NULL: a diverged step (NaN)
            // Absent: not validated at this step; NaN: validated, and it diverged.
            column("val_loss", "validation loss", &M::valLoss),
            column("grad_norm", "grad norm", &M::gradNorm),
            column("lr", "learning rate", &M::lr),
            column("alpha", "QK-norm alpha", &M::alpha),
            column("softcap_c", "softcap C", &M::softcapC),
            column("seq_len", "context length", &M::seqLen),
            column("tokens_per_s", "tokens/s", &M::tokensPerSec),
            nullWhenEmpty(column("attention_path", "attention kernel", &M::attentionPath,
                                 schemaVersionOf(SchemaFeature::AttentionPath))),
            // Output-logit divergence: the loss adds optim.z_loss x z_loss_term.
            column("logz_mean", "mean log Z", &M::logZMean, outputLogits),
            column("logz_max", "max log Z", &M::logZMax, outputLogits),
            column("out_logit_max", "max output logit", &M::outLogitMax, outputLogits),
            column("z_loss_term", "z-loss term", &M::zLossTerm, outputLogits),
            column("update_norm", "update norm", &M::updateNorm, outputLogits),
            // Output embedding centring: mu-loss adds optim.mu_loss x mu_norm^2.
            column("mu_norm", "output embedding mean norm", &M::muNorm,
                   schemaVersionOf(SchemaFeature::OutputMean)),
        })};
    return table;
}

const RecordTable<Spike>& spikeTable() {
    using S = Spike;
    static const RecordTable<S> table{
        "spikes", 1, "step, id", RecordTable<S>::Insert::Append,
        built<RecordColumn<S>>({
            stepColumn(&S::step),
            column("metric", "metric", &S::metric),
            column("value", "value", &S::value),
            column("z_score", "z-score", &S::zScore),
            column("kind", "kind", &S::kind),
            column("tier", "tier", &S::tier),
            column("probe_step", "probe step", &S::probeStep),
            column("probe_max_logit", "probe max logit", &S::probeMaxLogit),
            column("baseline_max_logit", "baseline max logit", &S::baselineMaxLogit),
            column("probe_qk_norm", "probe q/k norm", &S::probeQkNorm),
            column("baseline_qk_norm", "baseline q/k norm", &S::baselineQkNorm),
            importedAs(column("diagnosis", "diagnosis", &S::diagnosis),
                       ImportRule::Text::Paragraphs),
        })};
    return table;
}

// KeepFirst: the first crossing per layer and rule is the alarm (a resumed run may raise it
// again).
const RecordTable<LogitAlarm>& logitAlarmTable() {
    using A = LogitAlarm;
    static const RecordTable<A> table{
        "logit_alarms", schemaVersionOf(SchemaFeature::LogitAlarms), "step, layer, metric",
        RecordTable<A>::Insert::KeepFirst,
        built<RecordColumn<A>>({
            stepColumn(&A::step),
            column("layer", "layer", &A::layer),
            column("metric", "metric", &A::metric),
            column("value", "value", &A::value),
            column("threshold", "threshold", &A::threshold),
            column("kind", "kind", &A::kind),
            column("tier", "tier", &A::tier),
            importedAs(column("text", "text", &A::text), ImportRule::Text::Paragraphs),
        })};
    return table;
}

// KeepLast: a step reported again (the same head clipped twice) keeps the last word.
const RecordTable<QkClip>& qkClipTable() {
    using C = QkClip;
    static const RecordTable<C> table{"qk_clips", schemaVersionOf(SchemaFeature::QkClips),
                                      "step, layer, head", RecordTable<C>::Insert::KeepLast,
                                      built<RecordColumn<C>>({
                                          stepColumn(&C::step),
                                          column("layer", "layer", &C::layer),
                                          column("head", "head", &C::head),
                                          // NULL: NaN
                                          column("s_max", "s_max", &C::sMax),
                                          column("factor", "factor", &C::factor),
                                      })};
    return table;
}

// KeepLast: a name logged twice at one step keeps the last value, as a tracker's log does.
const RecordTable<CustomScalar>& customScalarTable() {
    using C = CustomScalar;
    static const RecordTable<C> table{
        "custom_scalars", schemaVersionOf(SchemaFeature::ExternalRuns), "name, step",
        RecordTable<C>::Insert::KeepLast,
        built<RecordColumn<C>>({
            importedAs(column("name", "name", &C::name), ImportRule::Text::Name),
            stepColumn(&C::step), column("value", "value", &C::value),  // NULL: NaN
        })};
    return table;
}

// KeepLast: a change reported again (a resumed run) keeps the last word. NULL measures: NaN
// (a window without a probe).
const RecordTable<ChangeReport>& changeReportTable() {
    using R = ChangeReport;
    static const RecordTable<R> table{
        "change_reports", schemaVersionOf(SchemaFeature::ChangeReports), "step, kind",
        RecordTable<R>::Insert::KeepLast,
        built<RecordColumn<R>>({
            stepColumn(&R::step),
            column("kind", "kind", &R::kind),
            column("report_step", "measured to step", &R::reportStep),
            column("loss_before", "loss before", &R::lossBefore),
            column("loss_after", "loss after", &R::lossAfter),
            column("loss_expected", "loss expected", &R::lossExpected),
            column("loss_z", "loss z-score", &R::lossZ),
            column("entropy_before", "entropy before", &R::entropyBefore),
            column("entropy_after", "entropy after", &R::entropyAfter),
            column("max_logit_before", "max logit before", &R::maxLogitBefore),
            column("max_logit_after", "max logit after", &R::maxLogitAfter),
            column("moved", "moved the run", &R::moved),
            importedAs(column("text", "report", &R::text), ImportRule::Text::Paragraphs),
        })};
    return table;
}

// KeepLast: a step probed again (a resumed run) keeps the last statistics. The statistics are
// probeColumns() (their help text is there); NULL reads as NaN.
const RecordTable<ProbeStats>& probeStatTable() {
    using P = ProbeStats;
    static const RecordTable<P> table = [] {
        std::vector<RecordColumn<P>> columns{
            stepColumn(&P::step),
            column("layer", "layer", &P::layer),
            column("head", "head", &P::head),
        };
        for (const ProbeColumn& c : probeColumns())
            columns.push_back(column(c.name, c.title, c.field, c.since));
        return RecordTable<P>{"probe_stats", 1, "step, layer, head",
                              RecordTable<P>::Insert::KeepLast, built(std::move(columns))};
    }();
    return table;
}

// KeepLast: a step probed again (a resumed run) keeps the last histogram. A file older than
// schema 4 has no NaN count: none.
const RecordTable<LogitHistogram>& histogramTable() {
    using H = LogitHistogram;
    static const RecordTable<H> table{
        "histograms", 1, "step", RecordTable<H>::Insert::KeepLast,
        built<RecordColumn<H>>({
            stepColumn(&H::step),
            column("layer", "layer", &H::layer),
            column("head", "head", &H::head),
            checked(blobColumn("counts", "counts", &H::counts, int64Bytes, int64sOf),
                    "length(counts) % 8 = 0", "a blob of whole int64 counts"),
            column("underflow", "underflow", &H::underflow),
            column("overflow", "overflow", &H::overflow),
            column("nan", "NaN logits", &H::nan, schemaVersionOf(SchemaFeature::HistogramNaN)),
        })};
    return table;
}

// KeepLast, as histograms. A file older than schema 6 has no bytes (empty) and no reasons
// (absent: periodic).
const RecordTable<AttentionMap>& attentionMapTable() {
    using M = AttentionMap;
    constexpr int reasons = schemaVersionOf(SchemaFeature::MapReasons);
    auto bytesOfText = [](const std::string& t) { return ColumnBytes(t.begin(), t.end()); };
    auto textOfBytes = [](const ColumnBytes& b) { return std::string(b.begin(), b.end()); };
    static const RecordTable<M> table{
        "attention_maps", 1, "layer, head", RecordTable<M>::Insert::KeepLast,
        built<RecordColumn<M>>({
            stepColumn(&M::step),
            column("layer", "layer", &M::layer),
            column("head", "head", &M::head),
            counted(column("size", "size", &M::size), kMaxMapSize),
            weightsColumn(),
            blobColumn("tokens", "tokens", &M::tokens, bytesOfText, textOfBytes, reasons),
            mapReasonColumn(reasons),
        })};
    return table;
}

// Append, in the order they happened: the rowid orders one step's events.
const RecordTable<EventRecord>& eventTable() {
    using E = EventRecord;
    static const RecordTable<E> table{
        "events", 1, "step, id", RecordTable<E>::Insert::Append,
        built<RecordColumn<E>>({
            stepColumn(&E::step),
            column("kind", "kind", &E::kind),
            importedAs(column("params_json", "parameters", &E::paramsJson), ImportRule::Text::Json),
            checked(column("source", "source", &E::source), "source IN ('config', 'user')",
                    "'config' or 'user'"),
        })};
    return table;
}

// KeepLast: a step checkpointed again (a resumed run) names the newer file.
const RecordTable<StoredCheckpoint>& checkpointTable() {
    using C = StoredCheckpoint;
    static const RecordTable<C> table{"checkpoints",
                                      1,
                                      "step",
                                      RecordTable<C>::Insert::KeepLast,
                                      built<RecordColumn<C>>({
                                          stepColumn(&C::step),
                                          column("path", "file", &C::path),
                                          column("created_at", "written", &C::createdAt),
                                      }),
                                      false};  // an import copies the files (store_import.cpp)
    return table;
}

// KeepFirst: a forecast made again by a resumed run keeps the first word.
const RecordTable<Forecast>& forecastTable() {
    using F = Forecast;
    static const RecordTable<F> table{
        "forecasts", schemaVersionOf(SchemaFeature::Forecasts), "step, layer, head",
        RecordTable<F>::Insert::KeepFirst,
        built<RecordColumn<F>>({
            column("step", "step", &F::step),
            column("kind", "onset kind", &F::kind),
            column("layer", "layer", &F::layer),
            column("head", "head", &F::head),
            column("metric", "metric", &F::metric),
            column("value", "value", &F::value),
            column("threshold", "threshold", &F::threshold),
            column("rate", "growth per step", &F::rate),
            column("predicted_step", "predicted step", &F::predictedStep),
            column("text", "forecast", &F::text),
        })};
    return table;
}

const std::vector<RunColumn>& runColumns() {
    static const std::vector<RunColumn> columns = makeRunColumns();
    return columns;
}

std::vector<const RunColumn*> listedRunColumns() {
    std::vector<const RunColumn*> out;
    for (const RunColumn& c : runColumns())
        if (c.shown == RunColumn::Shown::List) out.push_back(&c);
    return out;
}

const std::vector<ProbeColumn>& probeColumns() {
    using P = ProbeStats;
    static const std::vector<ProbeColumn> columns{
        {"logit_max_raw", "raw max logit", "max attention logit before the softcap",
         &P::logitMaxRaw},
        {"logit_p99_raw", "raw p99 logit", "99th percentile of the logits before the softcap",
         &P::logitP99Raw},
        {"logit_mean_raw", "raw mean logit", "mean logit before the softcap", &P::logitMeanRaw},
        {"logit_max_capped", "capped max logit", "max logit after the softcap (what softmax sees)",
         &P::logitMaxCapped},
        {"logit_p99_capped", "capped p99 logit", "99th percentile after the softcap",
         &P::logitP99Capped},
        {"logit_mean_capped", "capped mean logit", "mean logit after the softcap",
         &P::logitMeanCapped},
        {"q_norm_p90", "q norm p90", "90th percentile of |q| as it enters the dot product",
         &P::qNormP90},
        {"k_norm_p90", "k norm p90", "90th percentile of |k| as it enters the dot product",
         &P::kNormP90},
        {"q_raw_norm_p90", "raw q norm p90",
         "90th percentile of |q| straight out of the projection", &P::qRawNormP90},
        {"k_raw_norm_p90", "raw k norm p90",
         "90th percentile of |k| straight out of the projection", &P::kRawNormP90},
        {"entropy", "entropy", "mean attention entropy per query row (nats)", &P::entropy},
        {"frac_at_cap", "share at the cap", "share of raw logits with |logit| >= C", &P::fracAtCap},
        {"first_token_share", "first-token share",
         "mean attention weight on position 0 over query rows 1..T-1 (the attention sink)",
         &P::firstTokenShare, schemaVersionOf(SchemaFeature::SinkProbes)},
        {"max_activation", "max activation",
         "largest |value| of the layer's output, the residual stream after the block (layer rows "
         "only)",
         &P::maxActivation, schemaVersionOf(SchemaFeature::SinkProbes)},
    };
    return columns;
}

namespace {

// The sweeps table has no record (sweeps are read by store_sweeps.cpp): only what an import
// makes of its columns.
struct SweepImportColumn {
    const char* name;
    ImportRule import;
};

const std::vector<SweepImportColumn>& sweepImportColumns() {
    using Text = ImportRule::Text;
    const auto rule = [](Text text, std::string check = {}, std::string meaning = {}) {
        ImportRule r;
        r.text = text;
        r.check = std::move(check);
        r.meaning = std::move(meaning);
        return r;
    };
    const std::string most = std::to_string(kMaxSweepPoints);
    static const std::vector<SweepImportColumn> columns{
        {"name", rule(Text::Name)},
        {"definition_json", rule(Text::Paragraphs)},  // read as a sweep (import_check.cpp)
        {"points",
         rule(Text::Line, "points BETWEEN 0 AND " + most, "an integer from 0 to " + most)},
    };
    return columns;
}

}  // namespace

ImportRule importRuleOf(const std::string& table, const std::string& column) {
    std::optional<ImportRule> found;
    const auto look = [&](const auto& columns) {
        if (const auto* c = findColumn(columns, column)) found = c->import;
    };
    if (table == "runs") look(runColumns());
    if (table == "sweeps") look(sweepImportColumns());
    forEachRecordTable([&](const auto& t) {
        if (table == t.table) look(t.columns);
    });
    return found.value_or(ImportRule{});
}

std::vector<std::string> importedRunTables() {
    std::vector<std::string> out;
    forEachRecordTable([&](const auto& t) {
        if (t.importCopiesRows) out.emplace_back(t.table);
    });
    return out;
}

const RecordColumn<StepMetrics>& stepMetricColumn(const std::string& name) {
    if (const auto* c = findColumn(stepMetricTable().columns, name)) return *c;
    throw Error(ErrorCode::Internal, "there is no step-metric column '" + name + "'");
}

bool isMeasurement(const RecordColumn<StepMetrics>& c) {
    return c.type == ColumnType::Real || c.type == ColumnType::OptionalReal;
}

std::optional<double> numberOf(const ColumnValue& v) {
    if (const double* d = std::get_if<double>(&v)) return *d;
    if (const int64_t* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
    return std::nullopt;
}

std::string csvText(const ColumnValue& v) {
    if (const double* d = std::get_if<double>(&v)) {
        std::ostringstream os;
        os.precision(9);
        os << *d;
        return os.str();
    }
    if (const int64_t* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
    return textOf(v);
}

}  // namespace qklab
