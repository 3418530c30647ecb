// check_blas_command.h — `qklab-cli check-blas`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include "command.h"

namespace qklab::cli {

struct CheckBlasArgs {};
void addCheckBlasOptions(CLI::App& cmd, CheckBlasArgs& args, Database& db);
int cmdCheckBlas(const CheckBlasArgs& args);

}  // namespace qklab::cli
