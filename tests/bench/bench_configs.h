// bench_configs.h — the benchmark configs the bench tools share: tiny, 10m, 300m or a preset.
#pragma once

#include <string>

#include "qklab/config/run_config.h"

namespace qklab {

inline RunConfig benchConfig(const std::string& name) {
    RunConfig c;
    if (name == "tiny") {  // the tiny config: d 128, 2 layers, 4 heads, T 128, batch 16
        return c;
    }
    if (name == "10m") {  // ~10.8M parameters: d 384, 6 layers, 6 heads (d_head 64)
        c.model.dModel = 384;
        c.model.nLayers = 6;
        c.model.nHeads = 6;
        c.model.seqLen = 256;
        c.data.batchSize = 8;
        return c;
    }
    if (name == "300m") {  // the guide's baseline: d 768, 12 layers, 12 heads (d_head 64), T 1024
        c.model.dModel = 768;
        c.model.nLayers = 12;
        c.model.nHeads = 12;
        c.model.seqLen = 1024;
        c.data.batchSize = 16;
        c.attention.qkNorm = QkNormVariant::Rms;
        c.attention.softcap = {SoftcapKind::Tanh, 50};
        c.probes.every = 50;
        return c;
    }
    return loadPreset(name);
}

}  // namespace qklab
