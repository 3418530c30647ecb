// sweep_slurm.h — `qklab-cli sweep SWEEP.json --slurm OUT_DIR`: the sweep as a Slurm job array.
//
// OUT_DIR gets sweep.json (the normalised definition, with the sweep's UUID), configs/ (each
// point's config, to read), sweep.sbatch (one array task per point) and, once tasks run,
// shards/point-<index>.db and logs/. Each task writes only its own shard: SQLite over a
// network file system is unsafe, so no database file is shared across nodes. `qklab-cli
// merge OUT_DIR/shards/*.db --into FILE.db` assembles the results.
#pragma once

#include <string>

#include "sweep_command.h"  // SweepArgs

namespace qklab::cli {

// The sbatch script for a sweep of `points` points written to outDir (absolute); memoryMiB
// per task (0 = no --mem line).
std::string slurmScriptText(const SweepArgs& o, const std::string& sweepName,
                            const std::string& outDir, const std::string& cliPath, size_t points,
                            int64_t memoryMiB);

// Validates the sweep, writes the folder and, with --submit, runs sbatch. Returns the exit code.
int writeSlurmJob(const SweepArgs& o);

}  // namespace qklab::cli
