// sweep_report_command.h — `qklab-cli sweep-report`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>

#include "command.h"

namespace qklab::cli {

struct SweepReportArgs {
    std::string sweepRef;
    bool asJson = false, validationLoss = false;
    double margin = 0.1;
    std::string dbPath;
};
void addSweepReportOptions(CLI::App& cmd, SweepReportArgs& args, Database& db);
int cmdSweepReport(const SweepReportArgs& args);

}  // namespace qklab::cli
