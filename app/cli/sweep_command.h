// sweep_command.h — `qklab-cli sweep`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>

#include "command.h"

namespace qklab::cli {

struct SweepArgs {
    std::string file;    // a sweep JSON file (a new sweep)
    std::string resume;  // or: the id or name of a stored sweep to continue
    std::string name;    // the new sweep's name (default: the file's stem)
    std::string dbPath;
    int jobs = 0;           // worker processes; 0 = cores / threads per run
    int threadsPerRun = 1;  // run.threads of every point
    bool retryFailed = false;
    // Slurm: write the job into this folder instead of running here.
    std::string slurmDir, partition, time;
    int gpusPerTask = 0, maxParallel = 0;
    int pointsPerTask = 1;  // grid points each array task runs, one after another
    bool submit = false;
    bool twins = false;  // every point with and without the sweep's skip-step policy
    // --resume: how long to wait for points another process still runs (the workers of a
    // killed sweep stop at their next step) before running the rest without them.
    double waitRunning = 120;
};
void addSweepOptions(CLI::App& cmd, SweepArgs& args, Database& db);
int cmdSweep(const SweepArgs& args);

}  // namespace qklab::cli
