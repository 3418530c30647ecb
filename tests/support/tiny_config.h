// tiny_config.h — a config small enough to train tens of steps in a second or two on a laptop
// CPU (one layer, d_model 32, T 32), yet every probe, histogram and attention map is produced.
#pragma once

#include <cstdint>

#include "qklab/config/run_config.h"

namespace qklab::testsupport {

inline RunConfig tinyRunConfig(int64_t steps = 40) {
    RunConfig c;
    c.model.dModel = 32;
    c.model.nLayers = 1;
    c.model.nHeads = 2;
    c.model.seqLen = 32;
    c.data.batchSize = 4;
    c.schedule.steps = steps;
    c.schedule.warmupSteps = 2;
    c.eval.every = 10;
    c.eval.batches = 1;
    c.probes.every = 5;
    c.probes.histBins = 32;
    c.probes.attnMapEvery = 10;
    c.run.threads = 1;
    return c;
}

}  // namespace qklab::testsupport
