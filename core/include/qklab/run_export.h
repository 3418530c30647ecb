// qklab/run_export.h — a stored run as CSV or JSON (for `qklab-cli export/show` and the GUI).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "qklab/run_store.h"

namespace qklab {

// Summary of one run: status, steps_done, final_loss, final_val_loss, max_logit_raw,
// max_logit_capped, spikes, and identification (id, name, seed, device, versions).
nlohmann::json runSummaryJson(RunStore& store, int64_t runId);

// {"run": summary, "config": ..., "steps": [...], "probes": [...], "spikes": [...],
//  "events": [...]} — probes are the layer rows (head = -1) unless allHeads.
nlohmann::json runExportJson(RunStore& store, int64_t runId, bool allHeads = false);

// One row per step: the step metrics, then per layer every probe column (probeColumns(),
// "layer<L>_<name>", percentile columns "..._sampled" unless the run's percentiles were
// exact; empty on steps without a probe). The GUI and the CLI both write this.
std::string runCsv(const std::vector<StepMetrics>& steps, const std::vector<ProbeStats>& probes,
                   bool exactPercentiles);
std::string runExportCsv(RunStore& store, int64_t runId);

}  // namespace qklab
