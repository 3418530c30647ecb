// compare_command.h — `qklab-cli compare`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>
#include <vector>

#include "command.h"

namespace qklab::cli {

struct CompareArgs {
    std::vector<std::string> runRefs;  // id, name, id:N or name:N; at least two
    bool asJson = false;
    bool allKeys = false;  // the whole config, not only the keys that differ
    std::string groupBy;   // a config key: runs with equal values listed as groups
    std::string align;     // an alignment rule (qklab/analysis/alignment.h): each run's anchor
    std::string dbPath;
};
void addCompareOptions(CLI::App& cmd, CompareArgs& args, Database& db);
int cmdCompare(const CompareArgs& args);

}  // namespace qklab::cli
