// qklab/config/step_plan.h — everything decided about one training step before it runs, as a pure
// function of the config, the step and a few facts of the run loop (torch-free, next to
// settingsAt): its settings and attention switches, whether it probes, maps before its events,
// may replay a CUDA graph, clips, evaluates, checkpoints, reads back and flushes. The trainer
// only carries a plan out, so these cadence rules are tested without a model.
#pragma once

#include <cstddef>
#include <cstdint>

#include "qklab/config/run_config.h"
#include "qklab/config/schedules.h"

namespace qklab {

// Deferred readback: at least this many steps per readback, and about this often, so that live
// views follow the run. Rows are committed (a flush point) about as often; the Python
// extension's runs flush on the same clock.
constexpr size_t kMaxPendingSteps = 256;
constexpr double kReadbackSeconds = 0.5;
constexpr double kFlushSeconds = 0.5;

// What the run loop knows at the start of a step that the config does not say.
struct LoopFacts {
    bool events = false;            // events take effect at this step (config or interventions)
    int64_t lastMapStep = -1;       // the latest step that has attention maps (-1: none)
    bool graphs = false;            // the run has a CUDA graph stepper (run.cuda_graphs)
    bool deferredReadback = false;  // losses stay on the device until a readback
    bool fusedKernel = false;       // the build's LibTorch has fused attention
    bool checkpointFolder = false;  // checkpoints are written (a folder is set)
};

struct StepPlan {
    int64_t step = 0;
    StepSettings settings;           // settingsAt(config, step)
    AttentionSwitches switches;      // the training forward's (fused where allowed)
    AttentionSwitches evalSwitches;  // validation's: never probed, so fused unless capped
    bool events = false;             // the step's events are reported with it
    bool probe = false;              // probes (and maybe maps): an eager, explicit forward
    // A forward under the settings without the step's events, on the same weights and batch,
    // with beforeSwitches (explicit): only where those switches differ from the step's own.
    bool mapsBeforeEvents = false;
    AttentionSwitches beforeSwitches;
    bool tryGraph = false;          // may replay a CUDA graph (never probe or event steps)
    bool freezeGains = false;       // an anneal's learnable QK gains get no update
    bool readBeforeUpdate = false;  // every-step readback: loss and grad norm before the update
    bool qkClip = false;            // QK-Clip after the update
    bool lastStep = false;
    bool evaluate = false;         // validation loss after the update
    bool checkpointEvery = false;  // run.checkpoint_every's cadence (never the last step)
    bool readBack = false;         // the pending steps are read back whatever the clock says
    bool flush = false;            // and flushed after that readback
};

StepPlan planStep(const RunConfig& c, int64_t step, const LoopFacts& facts);

// The clock's part of a step's end, measured once after its update and validation.
struct StepClock {
    size_t pendingSteps = 0;                                        // this step included
    double sinceReadback = 0, sinceFlush = 0, sinceCheckpoint = 0;  // seconds
};

// What the step's end does: a checkpoint (every N steps, or a rolling one every
// run.checkpoint_seconds of wall time so that a crash costs at most that much training; none
// at the last step, which the run's end saves), a readback and a flush after it.
struct StepEnd {
    bool checkpoint = false, readBack = false, flush = false;
};
StepEnd stepEnd(const RunConfig& c, const StepPlan& plan, const LoopFacts& facts,
                const StepClock& clock);

}  // namespace qklab
