// value_command.h — `qklab-cli value`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>
#include <vector>

#include "command.h"

namespace qklab::cli {

struct ValueArgs {
    std::string runRef;
    std::vector<std::string> expressions;  // lesson placeholders without braces
    bool asJson = false;
    std::string dbPath;
};
void addValueOptions(CLI::App& cmd, ValueArgs& args, Database& db);
int cmdValue(const ValueArgs& args);

}  // namespace qklab::cli
