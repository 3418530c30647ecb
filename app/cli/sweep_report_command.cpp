// sweep_report_command.cpp — `qklab-cli sweep-report`: a sweep's points and, for an LR sweep,
// each configuration's LR sensitivity and max stable LR.
#include "sweep_report_command.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "qklab/analysis/sweep_report.h"
#include "qklab/store/run_store.h"
#include "qklab/util/error.h"

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

void printCurves(const SweepReport& r, const SweepReportArgs& o) {
    std::printf(
        "\nLR sensitivity (%s loss; a diverged seed counts as the initial loss %.3f; "
        "stable = no divergence and within %.3g of the best)\n",
        o.validationLoss ? "final validation" : "final training", r.initialLoss, o.margin);
    for (const auto& c : r.configurations) {
        std::printf("\n%s: sensitivity %s, max stable LR %s, best loss %s\n",
                    printableText(c.label).c_str(),
                    c.curve.points.empty() ? "-" : number(c.curve.sensitivity).c_str(),
                    maxStableLrText(c.curve, 4).c_str(),
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

void addSweepReportOptions(CLI::App& cmd, SweepReportArgs& args, Database& db) {
    cmd.add_option("sweep", args.sweepRef, "sweep id or name")->required();
    cmd.add_flag("--json", args.asJson, "machine-readable output");
    cmd.add_flag("--val", args.validationLoss, "use the final validation loss");
    cmd.add_option("--margin", args.margin,
                   "nats above the best loss that still count as stable (default 0.1)");
    db.addOption(cmd, args.dbPath);
}

int cmdSweepReport(const SweepReportArgs& o) {
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

}  // namespace qklab::cli
