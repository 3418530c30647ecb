// qklab/analysis/spike_causes.h — what changed in the run just before a spike or a logit alarm.
//
// The diagnosis reads the run's own timeline before its probes. A config event or an
// intervention, or a QK-norm / softcap anneal, that took effect in the few steps before a spike
// explains it better than any probe signature: switching QK-norm off makes the logits jump with
// flat q/k norms, which the probes alone read as a token spike (docs/EXPERIMENTS.md, "Spike
// diagnosis, staged"). Everything here is a pure function of the run's config, so a spike
// diagnosed live and the same config read back later name the same changes.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "qklab/config/events.h"
#include "qklab/config/run_config.h"
#include "qklab/store/records.h"

namespace qklab {

// The steps before a spike (and the spike's own) whose changes the diagnosis names. It equals
// the spike detector's refractory window: one report per episode, and the episode's cause.
constexpr int64_t kCauseWindowSteps = 10;
// A QK-norm alpha that moves less than this across the window is not a change worth naming.
constexpr double kAlphaChange = 0.05;

// What a change does to the run, in the order the diagnosis prefers it as the likeliest cause.
enum class ChangeEffect {
    FuseWeakened,   // QK-norm alpha fell or the norm went off, softcap loosened or removed,
                    // QK-Clip loosened or off: the logits lose their bound
    LrRaised,       // an LR multiplier above 1
    Data,           // a dirty batch or a context switch: the batch the model sees changed
    FuseTightened,  // a fuse switched on or tightened at once: the logits the model relied on
                    // are reshaped in one step
    Neutral,        // listed, never named as a cause (the LR lowered, a no-op event)
};

// Which fuse a FuseWeakened/FuseTightened change is about (its prescription's tier).
enum class ChangedFuse { None, QkNorm, Softcap, QkClip };

struct RunChange {
    int64_t step = 0;  // when it took effect (a trajectory: the window's first step)
    ChangeEffect effect = ChangeEffect::Neutral;
    ChangedFuse fuse = ChangedFuse::None;
    std::optional<EventKind> event;  // the event that made it; none for an anneal's trajectory
    // One clause with its numbers, e.g. "step 150, QK-norm: qk_norm rms→none" or "QK-norm alpha
    // fell from 0.4 to 0.1 over steps 180-190 (the anneal of steps 184-199)".
    std::string text;
    // The fuse's bound before and after the change: softcap C or QK-Clip tau (infinite when
    // off), or QK-norm's strength (alpha while a variant is on, else 0). 0 for other kinds.
    double boundBefore = 0, boundAfter = 0;
    // A weakened fuse that the probes showed was not bounding anything (judgeFuse): listed with
    // why, never named as the cause.
    bool notActing = false;
    bool isCause() const { return effect != ChangeEffect::Neutral; }
};

// What event `e` of `config` changed, as the cause window names it (its step's settings against
// the step before).
RunChange describeChange(const RunConfig& config, const Event& e);

// The changes that took effect in [step - kCauseWindowSteps, step], events first (in step
// order), then the QK-norm alpha and softcap C trajectories across the window when an anneal,
// not an event, moved them.
std::vector<RunChange> changesBefore(const RunConfig& config, int64_t step);

// What the probes around a change showed of the fuse it weakened (spikes.cpp and
// logit_alarms.cpp read it from their probes). NaN: not measured.
struct FuseReading {
    // The largest raw max logit from the last probe before the change to the one read.
    double maxRawLogit = std::numeric_limits<double>::quiet_NaN();
    // Under the old fuse (the last probe before the change): the share of raw logits at the
    // softcap's C, and |q_raw| |k_raw| / (|q| |k|), the q/k p90 lengths out of the
    // projections against those entering the dot product: > 1 when QK-norm shortened them.
    double fracAtCap = std::numeric_limits<double>::quiet_NaN();
    double qkShrink = std::numeric_limits<double>::quiet_NaN();
};

// A weakened fuse is acting when the raw logits came within this share of its old bound
// (softcap C, QK-Clip tau): tanh(0.5) / 0.5 = 0.92, so a softcap takes 8 % off such a logit,
// while a max of 14 under C = 50 (0.28 C) loses 2.6 %.
constexpr double kFuseNearBound = 0.5;

// Whether weakening `c`'s fuse could have mattered, by `r`: a softcap when the raw max came
// within kFuseNearBound of its old C or a share of logits was at the cap; QK-Clip when the raw
// max came within kFuseNearBound of its old tau; QK-norm when it shortened q and k (qkShrink
// > 1). A weakened fuse that was not acting by what `r` measured becomes Neutral, notActing,
// with the numbers in its text; one `r` cannot judge (NaN) stays a cause.
void judgeFuse(RunChange& c, const FuseReading& r);

// The change the diagnosis names as the likeliest cause (by ChangeEffect order, then the
// latest), or nullptr when none of `changes` is a cause.
const RunChange* likeliestCause(const std::vector<RunChange>& changes);

// The verdict for a spike or alarm caused by `cause`: its kind (data_or_accumulation for a
// data change, else run_change), its tier (the domain brief's 1..4, read for the fuse or knob
// that changed) and one "Tier N: ..." paragraph naming the change.
struct CauseAdvice {
    int tier = 1;
    std::string text;
    SpikeKind kind = SpikeKind::RunChange;
};
CauseAdvice adviceFor(const RunChange& cause);

}  // namespace qklab
