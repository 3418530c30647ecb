// sweeps_command.cpp — `qklab-cli sweeps`: the stored sweeps and how far each got.
#include "sweeps_command.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "qklab/store/run_store.h"

using nlohmann::json;

namespace qklab::cli {

void addSweepsOptions(CLI::App& cmd, SweepsArgs& args, Database& db) {
    cmd.add_flag("--json", args.asJson, "machine-readable output");
    db.addOption(cmd, args.dbPath);
}

int cmdSweeps(const SweepsArgs& args) {
    RunStore store(args.dbPath, StoreAccess::ReadOnly);
    json out = json::array();
    if (!args.asJson)
        std::printf("%-5s %-28s %-12s %7s %8s %9s %7s  %s\n", "id", "name", "status", "points",
                    "finished", "diverged", "failed", "created");
    for (const SweepInfo& s : store.sweeps()) {
        int finished = 0, diverged = 0, failed = 0;
        std::map<int64_t, RunStatus> latest;
        for (const RunInfo& r : store.sweepRuns(s.id))
            if (r.sweep) latest[r.sweep->point] = r.status;
        for (const auto& [point, status] : latest) {
            finished += status == RunStatus::Finished;
            diverged += status == RunStatus::Diverged;
            failed += status == RunStatus::Failed;
        }
        if (args.asJson) {
            out.push_back({{"id", s.id},
                           {"name", s.name},
                           {"status", s.status},
                           {"points", s.points},
                           {"finished", finished},
                           {"diverged", diverged},
                           {"failed", failed},
                           {"created_at", s.createdAt},
                           {"uuid", s.uuid}});
            continue;
        }
        // Names, statuses and dates come from the file: escaped before they reach a terminal.
        std::printf("%-5lld %-28s %-12s %7lld %8d %9d %7d  %s\n", static_cast<long long>(s.id),
                    printableText(s.name).substr(0, 28).c_str(), printableText(s.status).c_str(),
                    static_cast<long long>(s.points), finished, diverged, failed,
                    printableText(s.createdAt).c_str());
    }
    if (args.asJson) std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
}

}  // namespace qklab::cli
