// checkpoint_paths.h — what the checkpoints table stores for a checkpoint file, and how a stored
// path is made usable again (checkpoint_paths.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "qklab/store/records.h"

namespace qklab {

// What the checkpoints table stores for `file`, a checkpoint of run `runId` of the database at
// dbPath: "run-<id>/<name>", relative to checkpointFolder(dbPath), when the file is directly in
// the run's folder. Any other path is returned as given (and reads back refused).
std::string storedCheckpointPath(const std::string& dbPath, int64_t runId, const std::string& file);
// A stored checkpoint path of run `runId` made usable: `path` is the absolute file, directly in
// the run's own folder of the database at dbPath after symlinks and ".." are resolved, or ""
// with `refused` saying why. Reads the current relative form and the cwd-relative or absolute
// paths that older builds stored.
CheckpointInfo resolveCheckpoint(const std::string& dbPath, int64_t runId, int64_t step,
                                 const std::string& stored);

}  // namespace qklab
