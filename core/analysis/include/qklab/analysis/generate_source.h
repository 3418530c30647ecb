// qklab/analysis/generate_source.h — what text generation decodes from: a stored run's config as it
// trained and its newest checkpoint whose file exists. Shared by `qklab-cli generate` and the
// app's Sample box and `resume`. Read-only, like RunStore::newestUsableCheckpoint (no row is
// ever deleted for a missing file); it also says why there is none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "qklab/config/run_config.h"
#include "qklab/store/run_store.h"

namespace qklab {

struct GenerationSource {
    RunInfo run;
    RunConfig config;  // configAsTrained: the stored config plus the user's interventions
    CheckpointInfo checkpoint;
};

// The newest of the run's checkpoints whose file exists in the database's checkpoint folder;
// nullopt with *why (when given) saying what is missing: "none was saved ...", "its N
// checkpoint files are gone (PATH)", or that a stored path points outside the folder.
std::optional<CheckpointInfo> newestExistingCheckpoint(RunStore& store, int64_t runId,
                                                       std::string* why = nullptr);

// Throws Error{NotFound} "run 12 has no checkpoint: ..." when there is none to decode from,
// and Error{InvalidConfig} when the stored config cannot be read.
GenerationSource generationSource(RunStore& store, int64_t runId);

}  // namespace qklab
