// sweeps_command.h — `qklab-cli sweeps`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>

#include "command.h"

namespace qklab::cli {

struct SweepsArgs {
    bool asJson = false;
    std::string dbPath;
};
void addSweepsOptions(CLI::App& cmd, SweepsArgs& args, Database& db);
int cmdSweeps(const SweepsArgs& args);

}  // namespace qklab::cli
