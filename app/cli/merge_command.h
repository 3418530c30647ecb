// merge_command.h — `qklab-cli merge`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>
#include <vector>

#include "command.h"

namespace qklab::cli {

struct MergeArgs {
    std::vector<std::string> shards;
    std::string into;
};
void addMergeOptions(CLI::App& cmd, MergeArgs& args, Database& db);
int cmdMerge(const MergeArgs& args);

}  // namespace qklab::cli
