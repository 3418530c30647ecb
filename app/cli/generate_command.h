// generate_command.h — `qklab-cli generate`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <cstdint>
#include <string>

#include "command.h"

namespace qklab::cli {

struct GenerateArgs {
    std::string runRef;  // id, name, id:N or name:N
    std::string prompt;
    int64_t tokens = 200;
    double temperature = 0;      // 0 = greedy
    int64_t seed = 0;            // read signed so that -1 is refused, not wrapped around
    std::string cache = "auto";  // auto | none | materialised | absorbed
    int64_t threads = 0;         // 0 = all cores
    std::string dbPath;
};
void addGenerateOptions(CLI::App& cmd, GenerateArgs& args, Database& db);
int cmdGenerate(const GenerateArgs& args);

}  // namespace qklab::cli
