// forecast_report_command.h — `qklab-cli forecast-report`: its arguments and its two functions,
// as command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>
#include <vector>

#include "command.h"

namespace qklab::cli {

struct ForecastReportArgs {
    std::vector<std::string> sweepRefs;
    std::string seeds;  // "1-3" or "4,5,6": only runs of these seeds; empty: every run
    bool asJson = false, replay = false;
    std::string dbPath;
};
void addForecastReportOptions(CLI::App& cmd, ForecastReportArgs& args, Database& db);
int cmdForecastReport(const ForecastReportArgs& args);

}  // namespace qklab::cli
