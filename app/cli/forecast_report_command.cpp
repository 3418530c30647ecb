// forecast_report_command.cpp — `qklab-cli forecast-report`: over the runs of one or more
// sweeps, their onsets and how early and how often the forecasts saw them coming
// (qklab/analysis/forecast_report.h).
#include "forecast_report_command.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "qklab/analysis/forecast_report.h"
#include "qklab/analysis/policy_report.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

using nlohmann::json;

namespace qklab::cli {

namespace {

// "1-3" or "4,5,6" (ranges and single seeds, comma-separated).
std::set<int64_t> parseSeeds(const std::string& text) {
    std::set<int64_t> out;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        const std::string part = text.substr(at, comma - at);
        try {
            size_t used = 0;
            const int64_t a = std::stoll(part, &used);
            int64_t b = a;
            if (used < part.size()) {
                if (part[used] != '-') throw std::invalid_argument(part);
                size_t usedB = 0;
                b = std::stoll(part.substr(used + 1), &usedB);
                if (used + 1 + usedB != part.size() || b < a || b - a > 100000)
                    throw std::invalid_argument(part);
            }
            for (int64_t s = a; s <= b; ++s) out.insert(s);
        } catch (const std::exception&) {
            throw Error(
                ErrorCode::InvalidRequest,
                "--seeds: expected seeds like 1-3 or 4,5,6, got '" + printableText(text) + "'");
        }
        at = comma + 1;
    }
    return out;
}

std::string num(double v, const char* format = "%.3g") {
    if (!std::isfinite(v)) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

json numJson(double v) {
    return std::isfinite(v) ? json(v) : json(nullptr);
}

json leadJson(const LeadStats& l) {
    return {{"onsets", l.onsets},
            {"caught", l.caught},
            {"lead_median", numJson(l.median)},
            {"lead_p10", numJson(l.p10)}};
}

json scoreJson(const ForecastScore& s) {
    json kinds = json::object(), labels = json::object(), misses = json::array();
    for (const auto& [k, l] : s.byKind) kinds[nameOrUnknown(k)] = leadJson(l);
    for (const auto& [label, l] : s.byLabel) labels[label] = leadJson(l);
    for (const auto& m : s.misses)
        misses.push_back({{"run", m.runId}, {"seed", m.seed}, {"label", m.label}, {"why", m.why}});
    return {{"runs", s.runs},
            {"healthy_runs", s.healthyRuns},
            {"onsets", s.onsets},
            {"caught", s.caught},
            {"recall", numJson(s.recall)},
            {"by_kind", kinds},
            {"by_label", labels},
            {"false_alarms", s.falseAlarms},
            {"scored_steps", s.scoredSteps},
            {"false_alarms_per_10k_steps", numJson(s.falseAlarmsPer10k)},
            {"healthy_false_alarms", s.healthyFalseAlarms},
            {"healthy_steps", s.healthySteps},
            {"healthy_false_alarms_per_10k_steps", numJson(s.healthyFalseAlarmsPer10k)},
            {"eta_error_median", numJson(s.etaErrorMedian)},
            {"eta_relative_error_median", numJson(s.etaRelErrorMedian)},
            {"misses", misses}};
}

json policiesJson(const std::map<SkipStepPolicy, PolicyScore>& scores) {
    json out = json::object();
    for (const auto& [policy, s] : scores)
        out[nameOf(policy)] = {{"pairs", s.pairs},
                               {"twin_onsets", s.twinOnsets},
                               {"prevented", s.prevented},
                               {"delayed", s.delayed},
                               {"delay_median", numJson(s.delayMedian)},
                               {"actions", s.actions},
                               {"steps_affected", s.stepsAffected},
                               {"steps", s.steps},
                               {"harm", s.harm},
                               {"loss_deltas", s.lossDeltas},
                               {"loss_delta_median", numJson(s.lossDeltaMedian)},
                               {"loss_delta_max", numJson(s.lossDeltaMax)}};
    return out;
}

void printPolicies(const std::map<SkipStepPolicy, PolicyScore>& scores) {
    if (scores.empty()) return;
    std::printf(
        "\nskip-step policies against their twins (optim.skip_step = off, same seed); loss "
        "after: mean loss of the %lld steps at +%lld steps, policy run minus twin\n",
        static_cast<long long>(kPolicyLossMeanSteps), static_cast<long long>(kPolicyAfterSteps));
    std::printf("  %-9s %5s %11s %9s %7s %9s %7s %14s %5s %12s %10s\n", "policy", "pairs",
                "twin onsets", "prevented", "delayed", "delay med", "actions", "steps affected",
                "harm", "loss after", "worst");
    for (const auto& [policy, s] : scores)
        std::printf("  %-9s %5d %11d %9d %7d %9s %7d %14lld %5d %12s %10s\n", nameOf(policy),
                    s.pairs, s.twinOnsets, s.prevented, s.delayed, num(s.delayMedian).c_str(),
                    s.actions, static_cast<long long>(s.stepsAffected), s.harm,
                    num(s.lossDeltaMedian, "%+.3f").c_str(), num(s.lossDeltaMax, "%+.3f").c_str());
    std::printf(
        "  (actions: skipped updates or LR lowerings; harm: actions with no onset in the twin "
        "within %lld steps)\n",
        static_cast<long long>(kPolicyAfterSteps));
}

// A point's coordinates without its seed: the seeds of one configuration share a row.
std::string pointLabel(const RunInfo& r) {
    if (!r.sweep) return "";
    json coords;
    try {  // a file's text: within the JSON limits
        coords = parseStoredJson(r.sweep->coordsJson, "run " + std::to_string(r.id) + "'s coords");
    } catch (const Error&) {
    }
    if (!coords.is_object()) return r.sweep->coordsJson;  // printed through printableText
    coords.erase("run.seed");
    coords.erase("optim.skip_step");  // twins share a label
    std::string out;
    for (const auto& [key, value] : coords.items())
        out += (out.empty() ? "" : " ") + key + "=" + value.dump();
    return out;
}

void printLeads(const char* title, const std::string& name, const LeadStats& l) {
    std::printf("  %-6s %-60s %4d/%-4d %8s %8s\n", title, printableText(name).c_str(), l.caught,
                l.onsets, num(l.median).c_str(), num(l.p10).c_str());
}

void printScore(const ForecastScore& s) {
    std::printf("%d runs (%d healthy), %d onsets, recall %s (%d caught >= %lld steps ahead)\n",
                s.runs, s.healthyRuns, s.onsets, num(s.recall, "%.2f").c_str(), s.caught,
                static_cast<long long>(kMinLeadSteps));
    std::printf(
        "false alarms: %d in %lld steps before onsets (%s per 10,000); healthy runs: %d "
        "in %lld steps (%s per 10,000)\n",
        s.falseAlarms, static_cast<long long>(s.scoredSteps), num(s.falseAlarmsPer10k).c_str(),
        s.healthyFalseAlarms, static_cast<long long>(s.healthySteps),
        num(s.healthyFalseAlarmsPer10k).c_str());
    std::printf("ETA error: median %s steps (%s of the lead)\n\n", num(s.etaErrorMedian).c_str(),
                num(s.etaRelErrorMedian, "%.2f").c_str());
    std::printf("  %-6s %-60s %9s %8s %8s\n", "", "onsets", "caught", "lead med", "lead p10");
    for (const auto& [k, l] : s.byKind) printLeads("kind", nameOrUnknown(k), l);
    for (const auto& [label, l] : s.byLabel) printLeads("runs", label, l);
    if (!s.misses.empty()) std::printf("\nmisses:\n");
    for (const auto& m : s.misses)
        std::printf("  run %lld (seed %lld, %s): %s\n", static_cast<long long>(m.runId),
                    static_cast<long long>(m.seed), printableText(m.label).c_str(), m.why.c_str());
}

}  // namespace

void addForecastReportOptions(CLI::App& cmd, ForecastReportArgs& args, Database& db) {
    cmd.add_option("sweeps", args.sweepRefs, "sweep ids or names")->required();
    cmd.add_option("--seeds", args.seeds, "only runs of these seeds, e.g. 1-3 or 4,5,6");
    cmd.add_flag("--replay", args.replay,
                 "score the forecasts this build makes of the stored probes, not the stored ones");
    cmd.add_flag("--json", args.asJson, "machine-readable output");
    db.addOption(cmd, args.dbPath);
}

int cmdForecastReport(const ForecastReportArgs& o) {
    const std::set<int64_t> seeds = o.seeds.empty() ? std::set<int64_t>{} : parseSeeds(o.seeds);
    RunStore store(o.dbPath, StoreAccess::ReadOnly);
    // The forecaster is scored on the runs without a skip-step policy (a policy changes what
    // the forecasts are about); the policy runs are judged against those twins.
    std::vector<ScoredRun> runs;
    std::vector<RunInfo> all;
    std::map<int64_t, std::string> labels;
    for (const std::string& ref : o.sweepRefs) {
        const SweepInfo s = store.findSweep(ref);
        for (const RunInfo& r : store.sweepRuns(s.id)) {
            if (!seeds.empty() && !seeds.count(r.seed)) continue;
            labels[r.id] = s.name + " " + pointLabel(r);
            all.push_back(r);
            if (runPolicy(r) == SkipStepPolicy::Off)
                runs.push_back(scoredRun(store, r, labels[r.id], o.replay));
        }
    }
    const ForecastScore score = scoreForecasts(runs);
    const auto policies = scorePolicies(twinPairs(store, all, labels));
    if (o.asJson) {
        json j = scoreJson(score);
        j["policies"] = policiesJson(policies);
        std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
        return 0;
    }
    printScore(score);
    printPolicies(policies);
    return 0;
}

}  // namespace qklab::cli
