// qklab/analysis/policy_report.h — what a skip-step policy (optim.skip_step) did, judged by its
// twin: the same sweep point from the same seed with optim.skip_step = off (`sweep --twins`).
// `qklab-cli forecast-report` prints it per policy (domain brief section 9).
//
// An action is one thing the policy did: a skipped update (sigma: a skip_step event of source
// "policy") or a lowered LR (forecast: a policy lr_multiplier event that lowers the factor, for
// the steps until the one that restores it). Per action at step a, over the twin:
// - the loss after it: the mean training loss of the kPolicyLossMeanSteps steps ending at
//   a + kPolicyAfterSteps (or the last step both runs have), policy run minus twin;
// - harm: the twin has no onset in a .. a + kPolicyAfterSteps, so there was nothing to prevent.
// Per pair: the twin's onset is prevented when the policy run has none, delayed when its onset
// comes later.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "qklab/analysis/onsets.h"
#include "qklab/store/run_store.h"

namespace qklab {

constexpr int64_t kPolicyAfterSteps = 200;
constexpr int64_t kPolicyLossMeanSteps = 10;

struct PolicyAction {
    int64_t step = 0;
    int64_t steps = 1;  // steps it lasted: 1 for a skip, the lowered steps for a lower LR
};

// The policy's actions among a run's stored events; `runSteps`: the steps the run did.
std::vector<PolicyAction> policyActions(const std::vector<EventRecord>& events, int64_t runSteps);

// The mean finite training loss of the n steps ending at `step` (NaN: none).
double meanLossBefore(const std::vector<StepMetrics>& steps, int64_t step, int64_t n);

struct TwinPair {
    int64_t runId = 0, twinId = 0, seed = 0;
    std::string label;  // the point without its seed and policy
    SkipStepPolicy policy = SkipStepPolicy::Sigma;
    std::vector<PolicyAction> actions;
    std::vector<StepMetrics> steps, twinSteps;
    std::optional<Onset> onset, twinOnset;
};

struct PolicyScore {
    int pairs = 0, twinOnsets = 0, prevented = 0, delayed = 0;
    int actions = 0, harm = 0;
    int64_t stepsAffected = 0;  // updates skipped, or steps at a lowered LR
    int64_t steps = 0;          // the policy runs' steps
    int lossDeltas = 0;         // actions whose loss after could be measured
    double lossDeltaMedian = NAN, lossDeltaMax = NAN;
    double delayMedian = NAN;  // steps the delayed onsets came later than their twins'
};

std::map<SkipStepPolicy, PolicyScore> scorePolicies(const std::vector<TwinPair>& pairs);

// Each run of `runs` with a policy on, paired with its twin among them: the run whose sweep
// point has the same coordinates and seed with optim.skip_step = "off". Runs without a twin
// are left out. `labels`: the label of each run by id.
std::vector<TwinPair> twinPairs(RunStore& store, const std::vector<RunInfo>& runs,
                                const std::map<int64_t, std::string>& labels);

// A run's optim.skip_step as its sweep point gives it ("off" outside a policy axis or set).
SkipStepPolicy runPolicy(const RunInfo& run);

}  // namespace qklab
