// show_command.h — `qklab-cli show`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>

#include "command.h"

namespace qklab::cli {

struct ShowArgs {
    std::string runRef;
    bool asJson = false;
    std::string dbPath;
};
void addShowOptions(CLI::App& cmd, ShowArgs& args, Database& db);
int cmdShow(const ShowArgs& args);

}  // namespace qklab::cli
