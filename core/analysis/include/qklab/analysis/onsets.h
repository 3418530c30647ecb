// qklab/analysis/onsets.h — THE onset of instability in a run, labelled from its stored rows
// (domain brief section 9): the first step where the raw max logit passes the intervention line
// (kInterveneMaxLogit, 30), a loss or grad-norm spike is detected (the run's own spike settings,
// the detector RunMonitor uses), or the loss is not finite, whichever comes first. Forecasts are
// scored against it (forecast-report) and runs are aligned at it.
//
// Torch-free and pure: the same rows give the same onsets, whoever reads them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "qklab/analysis/spikes.h"
#include "qklab/config/run_config.h"
#include "qklab/store/records.h"

namespace qklab {

struct Onset {
    int64_t step = 0;
    OnsetKind kind = OnsetKind::MaxLogit;
    int32_t layer = -1;  // max_logit: the layer (and head, -1 = no head rows) that passed
    int32_t head = -1;
    double value = 0;  // the raw max logit, the loss or the grad norm at the onset
};

// The first onset of each kind, in step order (ties in OnsetKind order). `steps` and `probes`
// in step order, as the store reads them. A spike needs `spikes.minHistory` finite steps before
// it; a non-finite loss or grad norm does not join the spike window.
std::vector<Onset> onsetsOf(const std::vector<StepMetrics>& steps,
                            const std::vector<ProbeStats>& probes, const SpikeConfig& spikes,
                            double line = kInterveneMaxLogit);

// The run's onset: the first of onsetsOf (none: a healthy run).
std::optional<Onset> runOnset(const std::vector<StepMetrics>& steps,
                              const std::vector<ProbeStats>& probes, const SpikeConfig& spikes,
                              double line = kInterveneMaxLogit);

}  // namespace qklab
