// recommend_command.h — `qklab-cli recommend`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <cstdint>
#include <string>

#include "command.h"

namespace qklab::cli {

struct RecommendArgs {
    std::string params;               // or: dModel and nLayers
    int64_t dModel = 0, nLayers = 0;  // 0: from params
    int64_t dHead = 0;                // 0: the guide's
    std::string precision = "bf16";
    bool shipWithoutQkNorm = false;
    std::string output;
    std::string dbPath;  // not written over
};
void addRecommendOptions(CLI::App& cmd, RecommendArgs& args, Database& db);
int cmdRecommend(const RecommendArgs& args);

}  // namespace qklab::cli
