// sweep_point_command.h — `qklab-cli sweep-point`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <cstdint>
#include <string>

#include "command.h"

namespace qklab::cli {

// One grid point of a sweep, in its own process: started by `sweep` or a Slurm array task.
struct SweepPointArgs {
    std::string sweepRef;    // a stored sweep (a local sweep)
    std::string definition;  // or: a Slurm folder's sweep.json
    int64_t point = -1, threads = 0;
    std::string dbPath;
};
void addSweepPointOptions(CLI::App& cmd, SweepPointArgs& args, Database& db);
int cmdSweepPoint(const SweepPointArgs& args);

}  // namespace qklab::cli
