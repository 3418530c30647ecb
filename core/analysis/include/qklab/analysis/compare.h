// compare.h — what comparing stored runs needs, shared by `qklab-cli compare` and the app's
// comparison view: the config diff, seed groups, groups by any key and one summary row per run.
//
// The summary's columns are one table (summaryColumns()): the CLI's text and JSON, the app's
// sortable table, its best-per-column highlight and the CSV export all iterate it, so a new
// column is added once.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "qklab/config/run_config.h"
#include "qklab/store/run_store.h"

namespace qklab {

// The run's stored config with its user interventions added as config events, in step order:
// what the run actually trained with. strict: an unreadable config or intervention throws
// Error; otherwise the config falls back to defaults and bad interventions are skipped.
RunConfig configAsTrained(const RunInfo& info, bool strict = false);

// A run's whole config as compared: qklab's config as trained and the user's own config (a
// run logged from Python: qklab.init(config={...})). Both are what the run ran with, so a
// comparison diffs and groups by both and calls runs seed replicates only when both are equal
// but for run.seed (issue 38: two Python runs at LR 6e-4 and 3e-3 were called replicates).
struct ComparedConfig {
    RunConfig qklab;
    nlohmann::json user;  // a JSON object, or null for qklab's own runs
    // Keys of `qklab` the run did not record (unobservedConfigKeys, qklab/store/run_export.h):
    // their values are qklab's defaults, which it never trained with, so the diff leaves them out
    // and a run that lacks a key differs from one that has it (issue 38).
    std::set<std::string> unknown;
    // Implicit from a RunConfig: a run without a user config (qklab's own runs).
    ComparedConfig(RunConfig config = {}, nlohmann::json userConfig = nullptr,  // NOLINT
                   std::set<std::string> unknownKeys = {})
        : qklab(std::move(config)), user(std::move(userConfig)), unknown(std::move(unknownKeys)) {}
};

// The user config's keys in a diff or group-by are this prefix and the user's own keys joined
// by dots: {"lr": 3e-3, "opt": {"beta2": 0.95}} is user.lr and user.opt.beta2.
inline constexpr const char* kUserConfigPrefix = "user.";

// configAsTrained(info, strict), the run's user config (parseUserConfig) and the keys it did
// not record. strict: an
// unreadable user config throws Error{NotQklabDatabase} naming the run; otherwise it is null.
ComparedConfig comparedConfig(const RunInfo& info, bool strict = false);
// The user config alone, as comparedConfig reads it (for a caller holding the RunConfig).
nlohmann::json comparedUserConfig(const RunInfo& info, bool strict = false);

// One config key across runs. key: the dotted key as `qklab-cli keys` lists it, a user config
// key (user.lr), or "events" (the run's events, interventions included, as JSON). values: each
// run's value as compact JSON text, in the order of the configs given. A string is shown bare
// (rms, not "rms"); a key a config lacks is "" (the row differs; equality is decided on the
// JSON values, not the text). jsonValues: the same values as JSON, null where one is missing.
struct ConfigDiffRow {
    std::string key;
    std::vector<std::string> values;
    bool differs = false;  // not all values equal
    std::vector<nlohmann::json> jsonValues = {};
};

// Every key of configToJson() flattened to dotted keys (registry order), then the user
// config's keys (user.*, in the user's order), then "events".
std::vector<ConfigDiffRow> configDiff(const std::vector<ComparedConfig>& configs);

// Runs whose configs are equal in everything but run.seed (events and the user config
// included; the user config's top-level "seed" is a seed too) form a group. Returns groups of
// indices into `configs`, each in input order, groups ordered by their first member; a run with no
// twin is a group of one.
std::vector<std::vector<size_t>> seedGroups(const std::vector<ComparedConfig>& configs);

// Runs with equal values of one config key form a group: the comparison's "Group by", as
// TensorBoard and W&B group runs. key: a dotted key as configDiff() names it (user.lr for the
// user config's lr), or "events"; values are equal as JSON (1 and "1" differ), a key a config
// lacks is a value of its own.
struct RunGroup {
    std::vector<size_t> members;  // indices into the configs, ascending
    std::string value;            // the key's value as configDiff() shows it; "" when missing
    std::string label;            // "optim.lr=0.003 (2 runs)"; a long value ends in "..."
};
// Groups ordered by their first member; every config in exactly one. Throws
// Error{InvalidConfig} naming `key` when no config has it (and user.KEY when that is a key).
std::vector<RunGroup> groupByKey(const std::vector<ComparedConfig>& configs,
                                 const std::string& key);

struct RunSummary {
    int64_t runId = 0;
    std::string name;
    RunStatus status = RunStatus::Running;
    int64_t steps = 0;  // stored steps
    int layers = 0, heads = 0;
    std::optional<double> finalTrainLoss, bestTrainLoss;  // finite steps only
    std::optional<double> finalValLoss, bestValLoss;
    int64_t spikes = 0;
    int worstTier = 0;    // highest tier among the spikes; 0 = no spike
    int64_t qkClips = 0;  // heads QK-Clip scaled, summed over steps (RunInfo::qkClips)
    // First probed step at which any layer's raw max logit passed 30 / 100.
    std::optional<int64_t> firstStepPast30, firstStepPast100;
    std::optional<double> peakRawMax, peakCappedMax;  // over all layer-level probes
    std::optional<double> finalEntropy;  // mean over layers at the last probed step (nats)
    std::optional<double> tokensPerSec;  // median over steps with a rate
    std::optional<double> trainSeconds;  // sum of each step's tokens / tokens/s
};

// Reads one run's summary (a reader: never writes). Throws Error{NotFound} for an unknown id.
// For the CLI; a caller that has read the rows already passes them to the overload below.
RunSummary summarizeRun(RunStore& store, int64_t runId);

// The same summary from rows already read: `config` as configAsTrained(info) returns it,
// `steps` as store.stepMetrics(), `layerProbes` as store.probeStats(id, -1) (layer-level rows
// in step order) and `spikes` as store.spikes(); the QK-Clip count is info's. The comparison
// view reads these rows for its plots anyway; reading them a second time was ~45 % of opening
// 10 x 20k-step runs.
RunSummary summarizeRun(const RunInfo& info, const RunConfig& config,
                        const std::vector<StepMetrics>& steps,
                        const std::vector<ProbeStats>& layerProbes,
                        const std::vector<Spike>& spikes);

// One column of the summary table.
struct SummaryColumn {
    const char* key;    // JSON key and CSV header, e.g. "best_val_loss"
    const char* title;  // table header, e.g. "best val loss"
    // -1: lower is better, +1: higher is better, 0: no "best" (ids, counts of steps, status).
    int better;
    // The number, when the column is numeric and the run has one.
    std::function<std::optional<double>(const RunSummary&)> number;
    // The cell as text (numbers formatted; "-" when missing).
    std::function<std::string(const RunSummary&)> text;
};
const std::vector<SummaryColumn>& summaryColumns();

// {"run_id": .., "name": .., "status": .., <every column key>: number or null}.
nlohmann::json summaryToJson(const RunSummary& s);
// Header of column keys, one row per run; missing values are empty cells.
std::string summaryCsv(const std::vector<RunSummary>& summaries);

}  // namespace qklab
