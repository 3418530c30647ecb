// forecast_report.cpp — the score of a set of runs' forecasts (qklab/analysis/forecast_report.h).
#include "qklab/analysis/forecast_report.h"

#include <algorithm>
#include <cmath>

#include "qklab/analysis/forecast.h"
#include "qklab/config/run_config.h"
#include "qklab/util/error.h"

namespace qklab {
namespace {

// The q-quantile by nearest rank; the median of an even count averages the middle two.
double quantile(std::vector<double> v, double q) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    if (q == 0.5 && v.size() % 2 == 0) return 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    const auto k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::max<size_t>(k, 1) - 1];
}

void addLead(LeadStats& s, std::vector<double>& leads, const RunVerdict& v) {
    ++s.onsets;
    if (v.lead < 0) return;
    ++s.caught;
    leads.push_back(static_cast<double>(v.lead));
}

}  // namespace

RunVerdict judgeRun(const ScoredRun& r) {
    RunVerdict v;
    const int64_t end = r.onset ? r.onset->step : r.steps;
    v.scoredSteps = end;
    int64_t closest = -1;  // the smallest lead of a forecast inside its window, for `why`
    for (const Forecast& f : r.forecasts) {
        if (f.step >= end) continue;
        const bool inside = r.onset && r.onset->step <= f.step + kForecastHorizonSteps;
        if (!inside) {
            ++v.falseAlarms;
            continue;
        }
        const int64_t lead = r.onset->step - f.step;
        if (lead >= kMinLeadSteps && v.lead < 0) {
            v.lead = lead;
            v.etaError = f.predictedStep - r.onset->step;
        }
        closest = lead;
    }
    if (r.onset && v.lead < 0)
        v.why = closest >= 0 ? "forecast only " + std::to_string(closest) + " steps ahead"
                             : "no forecast within " + std::to_string(kForecastHorizonSteps) +
                                   " steps before the onset";
    return v;
}

ForecastScore scoreForecasts(const std::vector<ScoredRun>& runs) {
    ForecastScore s;
    std::map<OnsetKind, std::vector<double>> kindLeads;
    std::map<std::string, std::vector<double>> labelLeads;
    std::vector<double> etaErrors, etaRel;
    for (const ScoredRun& r : runs) {
        const RunVerdict v = judgeRun(r);
        ++s.runs;
        s.falseAlarms += v.falseAlarms;
        s.scoredSteps += v.scoredSteps;
        if (!r.onset) {
            ++s.healthyRuns;
            s.healthyFalseAlarms += v.falseAlarms;
            s.healthySteps += v.scoredSteps;
            continue;
        }
        ++s.onsets;
        addLead(s.byKind[r.onset->kind], kindLeads[r.onset->kind], v);
        addLead(s.byLabel[r.label], labelLeads[r.label], v);
        if (v.lead < 0) {
            s.misses.push_back({r.runId, r.seed, r.label, v.why});
            continue;
        }
        ++s.caught;
        etaErrors.push_back(std::fabs(static_cast<double>(v.etaError)));
        etaRel.push_back(std::fabs(static_cast<double>(v.etaError)) / static_cast<double>(v.lead));
    }
    for (auto& [kind, stats] : s.byKind) {
        stats.median = quantile(kindLeads[kind], 0.5);
        stats.p10 = quantile(kindLeads[kind], 0.1);
    }
    for (auto& [label, stats] : s.byLabel) {
        stats.median = quantile(labelLeads[label], 0.5);
        stats.p10 = quantile(labelLeads[label], 0.1);
    }
    if (s.onsets > 0) s.recall = static_cast<double>(s.caught) / s.onsets;
    if (s.scoredSteps > 0) s.falseAlarmsPer10k = 1e4 * s.falseAlarms / s.scoredSteps;
    if (s.healthySteps > 0)
        s.healthyFalseAlarmsPer10k = 1e4 * s.healthyFalseAlarms / s.healthySteps;
    s.etaErrorMedian = quantile(etaErrors, 0.5);
    s.etaRelErrorMedian = quantile(etaRel, 0.5);
    return s;
}

std::vector<Forecast> replayForecasts(const std::vector<ProbeStats>& probes) {
    Forecaster forecaster;
    std::vector<Forecast> out;
    std::vector<ProbeStats> rows;
    for (size_t i = 0; i < probes.size(); ++i) {
        rows.push_back(probes[i]);
        if (i + 1 < probes.size() && probes[i + 1].step == rows[0].step) continue;
        for (const Forecast& f : forecaster.addProbes(rows[0].step, rows)) out.push_back(f);
        rows.clear();
    }
    return out;
}

ScoredRun scoredRun(RunStore& store, const RunInfo& run, const std::string& label, bool replay) {
    ScoredRun r;
    r.runId = run.id;
    r.seed = run.seed;
    r.label = label;
    r.steps = run.stepsDone;
    SpikeConfig spikes;  // a config that does not read: the defaults
    try {
        spikes = configFromJsonText(run.configJson, "run " + std::to_string(run.id), false).spikes;
    } catch (const Error&) {
    }
    const std::vector<ProbeStats> probes = store.probeStats(run.id);
    r.onset = runOnset(store.stepMetrics(run.id), probes, spikes);
    r.forecasts = replay ? replayForecasts(probes) : store.forecasts(run.id);
    return r;
}

}  // namespace qklab
