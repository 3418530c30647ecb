// import_command.h — `qklab-cli import`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>
#include <vector>

#include "command.h"

namespace qklab::cli {

struct ImportArgs {
    std::vector<std::string> files;
    std::string dbPath;
};
void addImportOptions(CLI::App& cmd, ImportArgs& args, Database& db);
int cmdImport(const ImportArgs& args);
// Copies every run of each source database into `into` (created when missing). Prints what
// was imported and skipped; re-running it changes nothing. `merge` is the same into --into.
int importDatabases(const std::vector<std::string>& sources, const std::string& into);

}  // namespace qklab::cli
