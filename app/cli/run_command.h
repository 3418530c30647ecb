// run_command.h — `qklab-cli run`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>
#include <vector>

#include "command.h"

namespace qklab::cli {

struct RunArgs {
    std::string preset;  // a preset file, or inline JSON such as '{}'
    std::vector<std::string> overrides;
    std::string name, dbPath;
};
void addRunOptions(CLI::App& cmd, RunArgs& args, Database& db);
int cmdRun(const RunArgs& args);

}  // namespace qklab::cli
