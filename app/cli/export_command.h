// export_command.h — `qklab-cli export`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>

#include "command.h"

namespace qklab::cli {

struct ExportArgs {
    std::string runRef, format = "csv", output;
    bool force = false;
    std::string dbPath;
};
void addExportOptions(CLI::App& cmd, ExportArgs& args, Database& db);
int cmdExport(const ExportArgs& args);

}  // namespace qklab::cli
