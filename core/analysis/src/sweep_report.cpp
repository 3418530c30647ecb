// sweep_report.cpp — a stored sweep's points and LR curves (qklab/analysis/sweep_report.h).
#include "qklab/analysis/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "qklab/util/error.h"

namespace qklab {

using nlohmann::json;

namespace {

// The loss a finished or diverged run contributes to its LR cell; nullopt = no result (yet):
// not ended, or a finished run that never validated (eval.every = 0) asked for its
// validation loss. A non-finite final loss of a finished run counts as diverged.
std::optional<double> resultLoss(const RunInfo& run, bool validation) {
    if (run.status == RunStatus::Diverged) return std::nan("");
    if (run.status != RunStatus::Finished) return std::nullopt;
    const std::optional<double> loss = validation ? run.finalValLoss : run.finalLoss;
    if (!loss) return validation ? std::nullopt : std::optional<double>(std::nan(""));
    return *loss;
}

double medianFirstLoss(RunStore& store, const std::vector<SweepPointResult>& points) {
    std::vector<double> losses;
    for (const auto& p : points)
        if (p.run)
            if (auto l = store.firstStepLoss(p.run->id); l && std::isfinite(*l))
                losses.push_back(*l);
    if (losses.empty()) return std::log(256.0);  // a uniform byte predictor
    std::sort(losses.begin(), losses.end());
    return losses[losses.size() / 2];
}

void countState(SweepReport& r, const SweepPointResult& p) {
    if (!p.run) {
        ++r.pending;
        return;
    }
    switch (p.run->status) {
        case RunStatus::Finished:
            ++r.finished;
            break;
        case RunStatus::Diverged:
            ++r.diverged;
            break;
        case RunStatus::Failed:
            ++r.failed;
            break;
        case RunStatus::Running:
            ++r.running;
            break;
        case RunStatus::Stopped:
        case RunStatus::Interrupted:  // resume runs them again
        case RunStatus::Unknown:
            ++r.pending;
            break;
    }
}

void buildCurves(SweepReport& r, const SweepReportOptions& o) {
    std::map<std::string, size_t> byLabel;
    std::vector<std::map<double, LrCell>> cells;
    for (const auto& p : r.points) {
        json fixed = p.coords;
        fixed.erase(o.xKey);
        fixed.erase("run.seed");
        const std::string label = fixed.empty() ? "all points" : coordsText(fixed);
        auto [it, added] = byLabel.emplace(label, r.configurations.size());
        if (added) {
            r.configurations.push_back(SweepConfiguration{label, fixed, {}, {}});
            cells.emplace_back();
        }
        r.configurations[it->second].pointIndices.push_back(p.index);
        if (!p.coords.contains(o.xKey) || !p.coords[o.xKey].is_number()) continue;
        const double lr = p.coords[o.xKey].get<double>();
        LrCell& cell = cells[it->second][lr];
        cell.lr = lr;
        const std::optional<double> loss =
            p.run ? resultLoss(*p.run, o.validationLoss) : std::nullopt;
        if (!loss) {
            ++cell.pending;
            continue;
        }
        cell.losses.push_back(*loss);
        if (p.run->maxLogitRaw) cell.peakRawLogits.push_back(*p.run->maxLogitRaw);
    }
    for (size_t k = 0; k < r.configurations.size(); ++k) {
        std::vector<LrCell> list;
        for (auto& [lr, cell] : cells[k]) list.push_back(cell);
        r.configurations[k].curve = lrCurve(list, r.initialLoss, o.margin);
    }
}

std::string shortKey(const std::string& key) {
    const auto dot = key.rfind('.');
    return dot == std::string::npos ? key : key.substr(dot + 1);
}

json optionalJson(const std::optional<double>& v) {
    return v && std::isfinite(*v) ? json(*v) : json();
}

}  // namespace

std::string SweepPointResult::state() const {
    return run ? toString(run->status) : "pending";
}

SweepReport sweepReport(RunStore& store, int64_t sweepId, const SweepReportOptions& o) {
    SweepReport r;
    r.sweep = store.sweep(sweepId);
    r.definition =
        parseStoredSweep(r.sweep.definitionJson, "sweep '" + printableText(r.sweep.name) + "'");
    r.definition.name = r.sweep.name;
    for (const SweepAxis& a : r.definition.axes) r.hasLrAxis |= a.key == o.xKey;
    std::vector<SweepPoint> grid = expandSweep(r.definition);
    std::map<int64_t, RunInfo> latest;  // sweepRuns is by point, then id: the last one wins
    for (RunInfo& run : store.sweepRuns(sweepId))
        if (run.sweep) latest[run.sweep->point] = std::move(run);
    for (SweepPoint& g : grid) {
        SweepPointResult p;
        p.index = g.index;
        p.coords = std::move(g.coords);
        if (auto it = latest.find(g.index); it != latest.end()) {
            p.run = it->second;
            p.summary = summarizeRun(store, it->second.id);
        }
        countState(r, p);
        r.points.push_back(std::move(p));
    }
    r.initialLoss = medianFirstLoss(store, r.points);
    buildCurves(r, o);
    return r;
}

json sweepReportJson(const SweepReport& r) {
    json points = json::array();
    for (const auto& p : r.points) {
        json row = {{"point", p.index}, {"coords", p.coords}, {"state", p.state()}};
        row["run_id"] = p.run ? json(p.run->id) : json();
        row["summary"] = p.summary ? summaryToJson(*p.summary) : json();
        points.push_back(row);
    }
    json configs = json::array();
    for (const auto& c : r.configurations) {
        json lr = json::array(), loss = json::array(), lossMin = json::array(),
             lossMax = json::array(), diverged = json::array(), peak = json::array();
        for (const auto& p : c.curve.points) {
            lr.push_back(p.lr);
            loss.push_back(p.mean);
            lossMin.push_back(p.min);
            lossMax.push_back(p.max);
            diverged.push_back(p.diverged);
            peak.push_back(optionalJson(p.peakRawLogit));
        }
        configs.push_back(
            {{"label", c.label},
             {"fixed", c.fixed},
             {"lr", lr},
             {"final_loss", loss},
             {"final_loss_min", lossMin},
             {"final_loss_max", lossMax},
             {"diverged", diverged},
             {"peak_raw_max_logit", peak},
             {"best_loss", c.curve.points.empty() ? json() : json(c.curve.bestLoss)},
             {"sensitivity", c.curve.points.empty() ? json() : json(c.curve.sensitivity)},
             {"max_stable_lr", optionalJson(c.curve.maxStableLr)},
             {"max_stable_lr_is_lower_bound", c.curve.maxStableLrIsLowerBound}});
    }
    return {{"sweep", r.sweep.name},    {"id", r.sweep.id},
            {"status", r.sweep.status}, {"points_total", r.points.size()},
            {"finished", r.finished},   {"diverged", r.diverged},
            {"failed", r.failed},       {"pending", r.pending},
            {"running", r.running},     {"initial_loss", r.initialLoss},
            {"points", points},         {"configurations", configs}};
}

std::string sweepRunName(const std::string& sweepName, int64_t index, size_t pointCount,
                         const json& coords) {
    const int width = static_cast<int>(std::to_string(pointCount > 0 ? pointCount - 1 : 0).size());
    std::string num = std::to_string(index);
    num.insert(0, static_cast<size_t>(std::max(0, width - static_cast<int>(num.size()))), '0');
    std::string name = sweepName.substr(0, 80) + "/p" + num;
    for (const auto& [key, value] : coords.items())
        name += " " + shortKey(key) + "=" +
                (value.is_string() ? value.get<std::string>() : value.dump());
    if (name.size() > 200) name.resize(200);
    return name;
}

}  // namespace qklab
