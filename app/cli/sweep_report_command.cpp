// sweep_report_command.cpp — `qklab-cli sweeps`, `sweep-report`, `merge` and `import`.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "qklab/error.h"
#include "qklab/run_store.h"
#include "qklab/sweep_report.h"
#include "sweep_command.h"

using nlohmann::json;

namespace qklab::cli {

namespace {

std::string number(double v, const char* format = "%.4g") {
    if (!std::isfinite(v)) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

// At most 44 bytes (a table column), never cutting a UTF-8 character in half.
std::string clipped44(const std::string& s) {
    if (s.size() <= 44) return s;
    size_t n = 44;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return s.substr(0, n);
}

void printPoints(const SweepReport& r) {
    std::printf("%-6s %-10s %-6s %-44s %10s %10s %10s\n", "point", "state", "run", "coordinates",
                "train loss", "val loss", "peak raw");
    for (const auto& p : r.points) {
        const auto opt = [](const std::optional<double>& v) { return v ? number(*v) : "-"; };
        std::printf("%-6lld %-10s %-6s %-44s %10s %10s %10s\n", static_cast<long long>(p.index),
                    p.state().c_str(), p.run ? std::to_string(p.run->id).c_str() : "-",
                    clipped44(printableText(coordsText(p.coords))).c_str(),
                    p.summary ? opt(p.summary->finalTrainLoss).c_str() : "-",
                    p.summary ? opt(p.summary->finalValLoss).c_str() : "-",
                    p.summary ? opt(p.summary->peakRawMax).c_str() : "-");
    }
}

void printCurves(const SweepReport& r, const ReportOptions& o) {
    std::printf(
        "\nLR sensitivity (%s loss; a diverged seed counts as the initial loss %.3f; "
        "stable = no divergence and within %.3g of the best)\n",
        o.validationLoss ? "final validation" : "final training", r.initialLoss, o.margin);
    for (const auto& c : r.configurations) {
        std::printf("\n%s: sensitivity %s, max stable LR %s, best loss %s\n",
                    printableText(c.label).c_str(),
                    c.curve.points.empty() ? "-" : number(c.curve.sensitivity).c_str(),
                    c.curve.maxStableLr ? number(*c.curve.maxStableLr).c_str() : "none",
                    c.curve.points.empty() ? "-" : number(c.curve.bestLoss).c_str());
        std::printf("  %-10s %-22s %-9s %-9s %s\n", "lr", "loss mean [min, max]", "diverged",
                    "pending", "peak raw max logit");
        for (const auto& p : c.curve.points) {
            const std::string range =
                number(p.mean) + " [" + number(p.min) + ", " + number(p.max) + "]";
            std::printf("  %-10s %-22s %d/%-7d %-9d %s%s\n", number(p.lr).c_str(), range.c_str(),
                        p.diverged, p.seeds, p.pending,
                        p.peakRawLogit ? number(*p.peakRawLogit).c_str() : "-",
                        p.stable     ? ""
                        : p.diverged ? "  (diverged)"
                                     : "  (above best + margin)");
        }
    }
}

}  // namespace

int listSweeps(const std::string& dbPath, bool asJson) {
    RunStore store(dbPath, StoreAccess::ReadOnly);
    json out = json::array();
    if (!asJson)
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
        if (asJson) {
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
    if (asJson) std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
}

int sweepReportCommand(const ReportOptions& o) {
    if (!(o.margin >= 0) || !std::isfinite(o.margin))
        throw Error(ErrorCode::InvalidRequest, "--margin: expected a number >= 0");
    RunStore store(o.dbPath, StoreAccess::ReadOnly);
    const SweepInfo s = store.findSweep(o.sweepRef);
    SweepReportOptions options;
    options.validationLoss = o.validationLoss;
    options.margin = o.margin;
    const SweepReport r = sweepReport(store, s.id, options);
    if (o.asJson) {
        std::cout << sweepReportJson(r).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
        return 0;
    }
    std::printf(
        "sweep %s (%lld), %s: %zu points: %d finished, %d diverged, %d failed, %d running, "
        "%d not run\n\n",
        printableText(s.name).c_str(), static_cast<long long>(s.id),
        printableText(r.sweep.status).c_str(), r.points.size(), r.finished, r.diverged, r.failed,
        r.running, r.pending);
    printPoints(r);
    if (r.hasLrAxis) printCurves(r, o);
    return 0;
}

// Every source is checked whole before the target is created or opened (a missing or bad
// file used to leave an empty target behind), then all are imported in one transaction.
int importDatabases(const std::vector<std::string>& sources, const std::string& into) {
    for (const std::string& src : sources) checkImportSource(src);
    RunStore store(into);
    const std::vector<ImportResult> results = store.importAll(sources);
    int64_t imported = 0, updated = 0, skipped = 0;
    std::set<int64_t> sweeps;
    for (size_t i = 0; i < sources.size(); ++i) {
        const ImportResult& r = results[i];
        imported += r.imported;
        updated += r.updated;
        skipped += r.skipped;
        sweeps.insert(r.sweepIds.begin(), r.sweepIds.end());
        for (const auto& rename : r.renamed)
            std::cerr << "renamed (name taken): " << rename << "\n";
        for (const auto& note : r.notes) std::cerr << "note: " << note << "\n";
        std::cerr << sources[i] << ": " << r.imported << " imported, "
                  << (r.updated ? std::to_string(r.updated) + " updated, " : "") << r.skipped
                  << " already present\n";
    }
    std::cerr << imported << " runs imported, "
              << (updated ? std::to_string(updated) + " updated, " : "") << skipped
              << " skipped (already in " << into << ")\n";
    for (int64_t id : sweeps) {
        const SweepInfo s = store.sweep(id);
        std::cerr << "sweep " << printableText(s.name) << " (" << s.id << "): " << s.status << ", "
                  << store.sweepRuns(id).size() << " of " << s.points << " points\n";
    }
    return 0;
}

}  // namespace qklab::cli
