// list_command.cpp — `qklab-cli list`: the stored runs, as a table or JSON.
#include <cstdio>
#include <iostream>
#include <optional>

#include "commands.h"
#include "qklab/run_export.h"
#include "stored_runs.h"

namespace qklab::cli {
namespace {

void printRunTable(const std::vector<RunInfo>& runs) {
    std::printf("%-5s %-24s %-12s %8s %10s %10s %12s %6s %8s  %s\n", "id", "name", "status",
                "steps", "val loss", "train loss", "max logit", "spikes", "qk clips", "created");
    for (const auto& r : runs) {
        auto num = [](const std::optional<double>& v, const char* f) {
            char b[32] = "-";
            if (v) std::snprintf(b, sizeof b, f, *v);
            return std::string(b);
        };
        // Names and dates come from the file: escaped, so that ESC[2J cannot clear the screen.
        std::printf("%-5lld %-24s %-12s %8lld %10s %10s %12s %6lld %8lld  %s\n",
                    static_cast<long long>(r.id), printableText(r.name).c_str(), toString(r.status),
                    static_cast<long long>(r.stepsDone), num(r.finalValLoss, "%.4f").c_str(),
                    num(r.finalLoss, "%.4f").c_str(), num(r.maxLogitRaw, "%.4g").c_str(),
                    static_cast<long long>(r.spikes), static_cast<long long>(r.qkClips),
                    printableText(r.createdAt).c_str());
    }
}

}  // namespace

void addListOptions(CLI::App& cmd, ListArgs& args, Database& db) {
    cmd.add_flag("--json", args.asJson, "machine-readable output");
    db.addOption(cmd, args.dbPath);
}

int cmdList(const ListArgs& args) {
    const std::unique_ptr<RunStore> store = openStoreToRead(args.dbPath, "");
    const auto runs = store->listRuns();
    if (!args.asJson) {
        printRunTable(runs);
        return 0;
    }
    auto arr = nlohmann::json::array();
    for (const auto& r : runs) arr.push_back(runSummaryJson(*store, r.id));
    std::cout << jsonText(arr, 2) << "\n";
    return 0;
}

}  // namespace qklab::cli
