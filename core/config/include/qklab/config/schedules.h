// qklab/config/schedules.h — everything that changes with the step, as pure functions of
// (config, step). Events in the config (and interventions recorded as events) are part of
// the input, so a run is reproducible from its stored config and event list alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qklab/config/run_config.h"

namespace qklab {

// Base LR schedule (no event multipliers): warm-up, then constant/linear/cosine/wsd decay to
// optim.lr * schedule.min_lr_ratio at the last step.
double scheduledLr(const RunConfig& c, int64_t step);

// Window fractions map to steps: f -> round(f * steps), the end clamped to the last step.

// QK-norm anneal weight alpha in [0, 1] from the config window: 1 before the start step,
// exactly 0 at and after the end step (so a window ending at 1.0 finishes at the last step).
double annealAlpha(const QkNormAnneal& a, int64_t step, int64_t totalSteps);

// True from the QK-norm anneal window's start step on (learnable QK gains freeze there).
bool inQkNormAnnealWindow(const QkNormAnneal& a, int64_t step, int64_t totalSteps);

// Softcap width from the config window: c before the start step, exactly c_to at and after
// the end step, linear between.
double annealSoftcapC(const SoftcapConfig& s, const SoftcapAnneal& a, int64_t step,
                      int64_t totalSteps);

// The settings in effect at one step: schedules with every event at or before it applied.
struct StepSettings {
    double lr = 0;
    double lrFactor = 1;          // the latest lr_multiplier event's factor
    double alpha = 1;             // 1 = normed path, 0 = raw path
    bool annealing = false;       // inside an anneal window (alpha may still be 1): freeze QK gains
    bool inAnnealWindow = false;  // (while events apply) an anneal window or event is on
    QkNormVariant qkNorm = QkNormVariant::None;  // variant in effect
    SoftcapKind softcap = SoftcapKind::None;
    double softcapC = 0;   // 0 without a softcap
    double qkClipTau = 0;  // QK-Clip threshold in effect (0 = off)
    int64_t seqLen = 0;
    bool dirtyBatch = false;
    std::string dirtyText;
    bool skipUpdate = false;  // a skip_step event at this step: no update
};
StepSettings settingsAt(const RunConfig& c, int64_t step);
// Each event of c (sorted by step) as the change it made, "qk_norm none→rms @50", in order.
std::vector<std::string> settingChanges(const RunConfig& c);

// alpha at progress t in [0, 1] of an anneal of this shape (1 -> 0).
double annealAlphaAt(double t, AnnealShape shape);

// What an attention forward pass runs with at one step. Everything a stability lesson needs is
// switchable per step here (QK-norm variant and anneal weight alpha, softcap kind and width),
// so interventions and anneals need no model rebuild. One equality for every comparison: a
// CUDA graph replays only for equal switches, and a before-event map is taken only for unequal
// ones, so a field added here is compared by both.
struct AttentionSwitches {
    QkNormVariant qkNorm = QkNormVariant::None;
    QkNormTarget normOn = QkNormTarget::QK;
    bool normAfterRope = false;
    double alpha = 1.0;  // q = alpha * norm(q) + (1 - alpha) * q_raw (same for k)
    double scale = 0.0;  // s, fixed during an anneal
    SoftcapKind softcap = SoftcapKind::None;
    double softcapC = 0;  // 0 without a softcap
    bool fused = false;   // fused kernel (only where fusedAttentionAllowed says so)
    bool operator==(const AttentionSwitches& o) const;  // every field (schedules.cpp)
    bool operator!=(const AttentionSwitches& o) const { return !(*this == o); }
};

// The attention switches of a step's settings (explicit attention): what the trainer, the
// decoder and the tests run with.
AttentionSwitches attentionSwitches(const RunConfig& c, const StepSettings& s);

// True when a step's attention needs no explicit logits: nothing probes it and no softcap acts
// on the logits. The QK-norm anneal mixes q/k vectors before the dot product, so an annealing
// step can be fused too. (Whether the build has the kernel is the engine's part.)
bool fusedAttentionAllowed(const AttentionSwitches& sw, bool probing);

}  // namespace qklab
