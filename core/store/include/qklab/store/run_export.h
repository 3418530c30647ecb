// qklab/store/run_export.h — a stored run as CSV or JSON (for `qklab-cli export/show` and the GUI).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "qklab/config/run_config.h"
#include "qklab/store/run_store.h"

namespace qklab {

// Summary of one run: a key per summary column of runColumns() (qklab/store/record_columns.h):
// status, steps_done, final_loss, final_val_loss, max_logit_raw, max_logit_capped, spikes,
// logit_alarms, qk_clips (counts), and identification (id, name, seed, device, versions).
nlohmann::json runSummaryJson(RunStore& store, int64_t runId);

// The run's logit alarms, a key per column of logitAlarmTable(): [{"step", "layer", "metric",
// "value", "threshold", "kind", "tier", "text"}], first crossing per layer and rule, by step.
nlohmann::json logitAlarmsJson(RunStore& store, int64_t runId);
// The run's forecasts, a key per column of forecastTable(), by step, layer and head.
nlohmann::json forecastsJson(RunStore& store, int64_t runId);

// The heads QK-Clip scaled, a key per column of qkClipTable(): [{"step", "layer", "head",
// "s_max", "factor"}], by step, layer, head. factor scaled each of W_q and W_k (the head's logits
// by factor^2 = tau / s_max).
nlohmann::json qkClipsJson(RunStore& store, int64_t runId);

// The run's stored config as JSON (null when none was stored), without unobservedConfigKeys(). The
// text is someone else's file as far as qklab knows: read within the JSON limits, and an unreadable
// one throws Error{NotQklabDatabase} naming the run, the column and the file (bad input, exit 2).
nlohmann::json runConfigJson(RunStore& store, int64_t runId);

// Whether a run trained outside qklab can record `dottedKey` of qklab's config: what the
// Python package observes in the model (layers, heads, width, QK-norm, attention softcap,
// MLA), the probe and spike settings it applies itself, and the step count and seed when the
// user gives them. The rest (LR, schedule, data, ...) the run trained with its user config.
bool observableOutsideQklab(const std::string& dottedKey);
// The config keys (configFields()) a run did not record: none for qklab's own runs; for a run
// trained outside qklab every key its stored config lacks or the package cannot observe (rows
// stored before issue 38 held qklab's defaults there) and every key of an unreadable config.
// Such a key is unknown, not a default: show, export and compare leave it out.
std::set<std::string> unobservedConfigKeys(const RunInfo& r);
// `config` without the keys in `unknown` (objects left empty are removed).
nlohmann::json withoutKeys(nlohmann::json config, const std::set<std::string>& unknown);

// The user's own config of a run logged from Python (qklab.init(config=...)); null for
// qklab's own runs. Read within the JSON limits, as runConfigJson.
nlohmann::json userConfigJson(RunStore& store, int64_t runId);
// The same from a run's row (the app's views): throws Error{NotQklabDatabase} on text that is
// not JSON within the limits.
nlohmann::json parseUserConfig(const RunInfo& r);

// {"run": summary, "config": ..., "user_config": ..., "steps": [...], "probes": [...],
//  "spikes": [...], "alarms": [...], "qk_clips": [...], "custom_scalars": [...], "forecasts":
//  [...], "events": [...]} — probes are the layer rows (head = -1) unless allHeads.
nlohmann::json runExportJson(RunStore& store, int64_t runId, bool allHeads = false);

// One row per step: the step metrics (stepMetricTable()), then one column per custom scalar
// the run logged (its name, sorted; quoted as CSV needs; empty on steps without a value, "nan"
// where it logged NaN), then per layer every probe column (probeColumns(), "layer<L>_<name>";
// empty on steps without a probe). A step with custom scalars but no step row (a run killed
// between log() and its step's end) has a row with only its step and those values. The GUI and
// the CLI both write this.
std::string runCsv(const std::vector<StepMetrics>& steps, const std::vector<ProbeStats>& probes,
                   const std::vector<CustomScalar>& customScalars = {});
std::string runExportCsv(RunStore& store, int64_t runId);

}  // namespace qklab
