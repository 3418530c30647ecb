// list_command.h — `qklab-cli list`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>

#include "command.h"

namespace qklab::cli {

struct ListArgs {
    bool asJson = false;
    std::string dbPath;
};
void addListOptions(CLI::App& cmd, ListArgs& args, Database& db);
int cmdList(const ListArgs& args);

}  // namespace qklab::cli
