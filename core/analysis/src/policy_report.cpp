// policy_report.cpp — skip-step policies judged by their twins (qklab/analysis/policy_report.h).
#include "qklab/analysis/policy_report.h"

#include <algorithm>

#include "qklab/config/run_config.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

namespace qklab {
namespace {

using nlohmann::json;

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The factor of a stored lr_multiplier event (NaN when unreadable).
double factorOf(const EventRecord& e) {
    try {
        const json p = parseStoredJson(e.paramsJson, "event parameters");
        if (p.is_object() && p.contains("factor") && p["factor"].is_number())
            return p["factor"].get<double>();
    } catch (const Error&) {
    }
    return NAN;
}

// The sweep point's coordinates without `drop` keys (empty object outside a sweep).
json coordsWithout(const RunInfo& r, std::initializer_list<const char*> drop) {
    if (!r.sweep) return json::object();
    json c;
    try {
        c = parseStoredJson(r.sweep->coordsJson, "coords");
    } catch (const Error&) {
        return json::object();
    }
    if (!c.is_object()) return json::object();
    for (const char* k : drop) c.erase(k);
    return c;
}

void scoreActions(const TwinPair& p, PolicyScore& s, std::vector<double>& deltas) {
    const int64_t lastBoth = std::min(p.steps.empty() ? -1 : p.steps.back().step,
                                      p.twinSteps.empty() ? -1 : p.twinSteps.back().step);
    for (const PolicyAction& a : p.actions) {
        ++s.actions;
        s.stepsAffected += a.steps;
        const int64_t until = a.step + kPolicyAfterSteps;
        if (!p.twinOnset || p.twinOnset->step < a.step || p.twinOnset->step > until) ++s.harm;
        const int64_t at = std::min(until, lastBoth);
        if (at < a.step) continue;
        const double d = meanLossBefore(p.steps, at, kPolicyLossMeanSteps) -
                         meanLossBefore(p.twinSteps, at, kPolicyLossMeanSteps);
        if (std::isfinite(d)) deltas.push_back(d);
    }
}

}  // namespace

std::vector<PolicyAction> policyActions(const std::vector<EventRecord>& events, int64_t runSteps) {
    std::vector<PolicyAction> out;
    double factor = 1.0;       // the LR factor in effect (config, user and policy events)
    int64_t loweredFrom = -1;  // a policy lowering in progress
    for (const EventRecord& e : events) {
        const bool policy = e.source == "policy";
        if (policy && e.kind == "skip_step") out.push_back({e.step, 1});
        if (e.kind != "lr_multiplier") continue;
        const double f = factorOf(e);
        if (policy && loweredFrom >= 0 && !(f < factor)) {
            out.push_back({loweredFrom, e.step - loweredFrom});
            loweredFrom = -1;
        } else if (policy && f < factor && loweredFrom < 0) {
            loweredFrom = e.step;
        }
        if (std::isfinite(f)) factor = f;
    }
    if (loweredFrom >= 0)
        out.push_back({loweredFrom, std::max<int64_t>(runSteps - loweredFrom, 0)});
    std::sort(out.begin(), out.end(),
              [](const PolicyAction& a, const PolicyAction& b) { return a.step < b.step; });
    return out;
}

double meanLossBefore(const std::vector<StepMetrics>& steps, int64_t step, int64_t n) {
    double sum = 0;
    int count = 0;
    for (const StepMetrics& m : steps)
        if (m.step <= step && m.step > step - n && std::isfinite(m.loss)) {
            sum += m.loss;
            ++count;
        }
    return count ? sum / count : NAN;
}

std::map<SkipStepPolicy, PolicyScore> scorePolicies(const std::vector<TwinPair>& pairs) {
    std::map<SkipStepPolicy, PolicyScore> out;
    std::map<SkipStepPolicy, std::vector<double>> deltas, delays;
    for (const TwinPair& p : pairs) {
        PolicyScore& s = out[p.policy];
        ++s.pairs;
        s.steps += p.steps.empty() ? 0 : p.steps.back().step + 1;
        if (p.twinOnset) {
            ++s.twinOnsets;
            if (!p.onset) {
                ++s.prevented;
            } else if (p.onset->step > p.twinOnset->step) {
                ++s.delayed;
                delays[p.policy].push_back(double(p.onset->step - p.twinOnset->step));
            }
        }
        scoreActions(p, s, deltas[p.policy]);
    }
    for (auto& [policy, s] : out) {
        const auto& d = deltas[policy];
        s.lossDeltas = static_cast<int>(d.size());
        s.lossDeltaMedian = median(d);
        s.delayMedian = median(delays[policy]);
        if (!d.empty()) s.lossDeltaMax = *std::max_element(d.begin(), d.end());
    }
    return out;
}

SkipStepPolicy runPolicy(const RunInfo& run) {
    try {
        return configFromJsonText(run.configJson, "run " + std::to_string(run.id), false)
            .optim.skipStep;
    } catch (const Error&) {
        return SkipStepPolicy::Off;
    }
}

std::vector<TwinPair> twinPairs(RunStore& store, const std::vector<RunInfo>& runs,
                                const std::map<int64_t, std::string>& labels) {
    std::vector<TwinPair> out;
    auto spikesOf = [](const RunInfo& r) {
        try {
            return configFromJsonText(r.configJson, "run", false).spikes;
        } catch (const Error&) {
            return SpikeConfig{};
        }
    };
    // Each run's policy and point (its coordinates without the policy, with the seed) read once:
    // a sweep of 10,000 points would otherwise parse configs 10^8 times.
    std::vector<SkipStepPolicy> policies;
    std::vector<std::string> points;
    std::map<std::string, const RunInfo*> offRuns;  // point -> its run with the policy off
    for (const RunInfo& r : runs) {
        policies.push_back(runPolicy(r));
        points.push_back(r.sweep ? std::to_string(r.sweep->sweepId) + " " + std::to_string(r.seed) +
                                       " " + coordsWithout(r, {"optim.skip_step"}).dump()
                                 : std::string());
        if (r.sweep && policies.back() == SkipStepPolicy::Off) offRuns[points.back()] = &r;
    }
    for (size_t i = 0; i < runs.size(); ++i) {
        const RunInfo& r = runs[i];
        const SkipStepPolicy policy = policies[i];
        if (policy == SkipStepPolicy::Off || !r.sweep) continue;
        const auto found = offRuns.find(points[i]);
        if (found == offRuns.end()) continue;
        const RunInfo* twin = found->second;
        TwinPair p;
        p.runId = r.id;
        p.twinId = twin->id;
        p.seed = r.seed;
        p.policy = policy;
        const auto label = labels.find(r.id);
        p.label = label == labels.end() ? r.name : label->second;
        p.steps = store.stepMetrics(r.id);
        p.twinSteps = store.stepMetrics(twin->id);
        p.actions = policyActions(store.events(r.id), r.stepsDone);
        p.onset = runOnset(p.steps, store.probeStats(r.id), spikesOf(r));
        p.twinOnset = runOnset(p.twinSteps, store.probeStats(twin->id), spikesOf(*twin));
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace qklab
