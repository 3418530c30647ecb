// keys_command.h — `qklab-cli keys`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include "command.h"

namespace qklab::cli {

struct KeysArgs {
    bool markdown = false;
};
void addKeysOptions(CLI::App& cmd, KeysArgs& args, Database& db);
int cmdKeys(const KeysArgs& args);

}  // namespace qklab::cli
