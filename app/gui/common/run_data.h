// run_data.h — one run's recorded series, as the plots need them.
//
// A RunSnapshot is filled either from the store (a finished run, or the past of a running
// one) or grows from the worker's live batches. It is a plain value: the loader builds it on
// a pool thread and moves it to the GUI thread.
#pragma once

#include <QString>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "qklab/analysis/compare.h"  // configAsTrained
#include "qklab/config/run_config.h"
#include "qklab/store/records.h"
#include "qklab/store/run_store.h"

namespace qklab::gui {

struct RunSnapshot {
    int64_t runId = 0;
    RunInfo info;
    RunConfig config;  // parsed from info.configJson (defaults if unparsable)
    std::vector<StepMetrics> steps;
    std::vector<ProbeStats> probes;  // layer-level rows (head = -1) only: what plots show
    std::vector<Spike> spikes;
    std::vector<LogitAlarm> alarms;
    std::vector<QkClip> clips;  // by step, layer, head
    std::vector<EventRecord> events;
    std::vector<ChangeReport> changeReports;  // what each change did (its event's mark)
    std::vector<Forecast> forecasts;          // warnings before an onset, by step
    // Scalars a run trained outside qklab logged besides the step metrics, by name then step.
    std::vector<CustomScalar> customScalars;
    double loadSeconds = 0;  // how long the store read took (benchmarks)
};

// Reads everything the live view shows for one run. Throws qklab::Error.
RunSnapshot loadRunSnapshot(RunStore& store, int64_t runId);

// Best effort: the run's config, or defaults when the stored JSON does not parse (a run
// written by a newer version).
RunConfig configOfRun(const RunInfo& info);

// Short human summary of the settings that matter for stability ("qk_norm=rms, softcap
// tanh C=50, lr 3e-3"), then each event as the change it made ("qk_norm none→rms @50"), for
// the run list and window titles. For a run trained outside qklab (`external`) only what qklab
// found in the model (QK-norm, cap, shape, MLA) and did not leave `unknown`
// (unobservedConfigKeys): the rest was never recorded, and the user's own settings are its user
// config.
QString keySettings(const RunConfig& c, bool external = false,
                    const std::set<std::string>& unknown = {});

// Whether a run was trained outside qklab: qklab::trainedOutsideQklab (qklab/store/run_store.h).
// Why qklab cannot `action` such a run ("intervene in", "generate from"): "Run 3 was trained
// outside qklab (python: hf-llama): qklab cannot intervene in a model it does not have."
QString outsideQklabReason(const RunInfo& info, const QString& action);
// The user's own config of such a run (qklab.init(config=...)) as indented JSON; "" for
// qklab's own runs. Stored text that does not parse is shown as it is.
QString userConfigText(const RunInfo& info);
// The same on one line for a details row: "batch=16, lr=0.03, model=llama", cut with "…"
// past maxChars.
QString userConfigLine(const RunInfo& info, int maxChars = 160);

// "1.2e-03" style for small/large values, plain otherwise.
QString formatNumber(double v);

}  // namespace qklab::gui
