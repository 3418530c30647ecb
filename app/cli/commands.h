// commands.h — qklab-cli's command table (commands.cpp). Each command lives in its own pair of
// files, xxx_command.h (its arguments and its two functions) and xxx_command.cpp, so that a
// change to one command's arguments rebuilds that command and the table only; see command.h
// for the convention.
#pragma once

#include <vector>

#include "command.h"

namespace qklab::cli {

// The table, in the order `qklab-cli --help` lists the commands.
std::vector<Command> commandTable();

}  // namespace qklab::cli
