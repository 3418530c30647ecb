// qklab/analysis/sweep_report.h — a stored sweep read back as results: one row per grid point (its
// latest run), and, for a learning-rate sweep, one LR curve per configuration with its
// sensitivity and max stable LR. `qklab-cli sweep-report` and the app's sweep view print and
// draw the same report. A reader: never writes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "qklab/analysis/compare.h"
#include "qklab/config/sweep.h"
#include "qklab/store/run_store.h"

namespace qklab {

struct SweepReportOptions {
    std::string xKey = "optim.lr";  // the swept LR axis; without it there are no curves
    bool validationLoss = false;    // final validation loss instead of final training loss
    double margin = 0.1;            // nats above the best loss that still count as stable
};

struct SweepPointResult {
    int64_t index = 0;
    nlohmann::json coords = nlohmann::json::object();
    std::optional<RunInfo> run;         // the point's latest run; none = not run yet
    std::optional<RunSummary> summary;  // the comparison summary of that run
    std::string state() const;          // "pending" or the run's status
};

// One configuration: the points that agree on every coordinate but the LR and the seed.
struct SweepConfiguration {
    std::string label;  // "attention.qk_norm=none" ("all points" when nothing else varies)
    nlohmann::json fixed = nlohmann::json::object();
    std::vector<int64_t> pointIndices;
    LrCurve curve;
};

struct SweepReport {
    SweepInfo sweep;
    SweepDefinition definition;
    std::vector<SweepPointResult> points;  // by index
    std::vector<SweepConfiguration> configurations;
    double initialLoss = 0;  // median first-step loss over the sweep's runs (ln 256 if none)
    int finished = 0, diverged = 0, failed = 0, pending = 0, running = 0;
    bool hasLrAxis = false;
};

SweepReport sweepReport(RunStore& store, int64_t sweepId, const SweepReportOptions& options = {});

// {"sweep": .., "status": .., "points": [...], "configurations": [{"label", "fixed", "lr",
//  "final_loss", "diverged", "sensitivity", "max_stable_lr", ...}]}
nlohmann::json sweepReportJson(const SweepReport& r);

// A run's name in a sweep: "<sweep>/p007 lr=0.003 qk_norm=none seed=2" (last key parts).
std::string sweepRunName(const std::string& sweepName, int64_t index, size_t pointCount,
                         const nlohmann::json& coords);

}  // namespace qklab
