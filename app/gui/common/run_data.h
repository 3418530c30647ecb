// run_data.h — one run's recorded series, as the plots need them.
//
// A RunSnapshot is filled either from the store (a finished run, or the past of a running
// one) or grows from the worker's live batches. It is a plain value: the loader builds it on
// a pool thread and moves it to the GUI thread.
#pragma once

#include <QString>
#include <cstdint>
#include <optional>
#include <vector>

#include "qklab/compare.h"  // configAsTrained
#include "qklab/records.h"
#include "qklab/run_config.h"
#include "qklab/run_store.h"

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
    double loadSeconds = 0;  // how long the store read took (benchmarks)
};

// Reads everything the live view shows for one run. Throws qklab::Error.
RunSnapshot loadRunSnapshot(RunStore& store, int64_t runId);

// Best effort: the run's config, or defaults when the stored JSON does not parse (a run
// written by a newer version).
RunConfig configOfRun(const RunInfo& info);

// Short human summary of the settings that matter for stability ("qk_norm=rms, softcap
// tanh C=50, lr 3e-3"), then each event as the change it made ("qk_norm none→rms @50"), for
// the run list and window titles.
QString keySettings(const RunConfig& c);

// "1.2e-03" style for small/large values, plain otherwise.
QString formatNumber(double v);

}  // namespace qklab::gui
