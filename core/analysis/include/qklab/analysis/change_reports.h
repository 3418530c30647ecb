// qklab/analysis/change_reports.h — what a change to a run did, measured on the run itself.
//
// A removed softcap can lift the max logit softmax sees from 30 to 606 and collapse attention
// entropy from 2.44 to 0.055 nats, costing 0.32 of loss for good, with no loss spike (the
// detector's 64-step window still held the run's noisy first steps) and no alarm (they fire
// once per layer, and had fired at step 10). So every change after step 0 is followed by a
// report: the mean training loss and the medians of the probes' attention entropy and capped
// max logit over the kChangeReportSteps steps from the change on, against as many steps before
// it. The trainer stores it (the change_reports table), the app shows it on the event's mark,
// and a later spike's diagnosis quotes it while the change is still in force and moved the run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "qklab/analysis/spikes.h"
#include "qklab/config/events.h"
#include "qklab/config/run_config.h"
#include "qklab/store/records.h"

namespace qklab {

// Steps measured after a change (the change's own step first), and before it.
constexpr int64_t kChangeReportSteps = 20;
// Fewer measured steps after a change than this: no report (a spike right after a change is
// named by the cause window instead).
constexpr int64_t kMinChangeReportSteps = 3;

// The run's recent series a report reads: (step, training loss) and probe summaries, in step
// order.
struct RunSeries {
    std::vector<std::pair<int64_t, double>> losses;
    std::vector<ProbeSummary> probes;
};

// The report of `e` (a change of `config`, whose text says what it changed) measured over
// [e.step, lastStep] against [e.step - kChangeReportSteps, e.step): the mean loss after against
// what the least-squares line of the steps before leads to expect there, the medians of the
// probes' entropy and capped max logit on either side. A measure moved when the loss is
// kJumpZ spreads (of the steps before, around their line) or more off what was expected, or the
// entropy or the max logit changed by kJumpRatio x or more (either way). nullopt when fewer than
// kMinChangeReportSteps steps after it or none before it are in `series`.
std::optional<ChangeReport> reportChange(const RunConfig& config, const Event& e,
                                         const RunSeries& series, int64_t lastStep);

// Whether a change of `config` at `e` is still in force at `step`: no later event of its kind
// replaced it by then (a dirty batch is one step: only its report's window).
bool changeInForce(const RunConfig& config, const Event& e, int64_t step);

}  // namespace qklab
