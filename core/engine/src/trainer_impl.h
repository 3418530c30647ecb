// trainer_impl.h — Trainer::Impl, the state of one training run, shared by trainer.cpp (the
// run loop carrying out each step's plan, readback, checkpoints, controls), trainer_steps.cpp
// (one step, eager or through a CUDA graph) and trainer_setup.cpp (optimizer and graphs).
// Private to core.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "captured_step.h"
#include "data_loader.h"
#include "device_optim.h"
#include "model.h"
#include "probes.h"
#include "qklab/analysis/run_monitor.h"
#include "qklab/analysis/skip_step.h"
#include "qklab/config/schedules.h"
#include "qklab/config/step_plan.h"
#include "qklab/engine/trainer.h"
#include "qklab/util/error.h"

namespace qklab {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// One trained step as the host will report it. Its loss and grad norm stay on the device
// until the next readback; everything else the observer hears about that step waits with it,
// so that deferred and every-step readback report the same calls in the same order.
struct PendingStep {
    StepMetrics metrics;           // loss, gradNorm and the output-logit statistics: at readback
    torch::Tensor loss, gradNorm;  // 0-dim, on the device
    torch::Tensor outputLogits;    // ForwardResult::outputLogitStats, on the device
    torch::Tensor updateNorm;      // 0-dim, on the device; undefined before the update
    std::optional<std::pair<double, double>> hostValues;  // loss, grad norm, when read already
    double hostSeconds = 0;  // host time of the step, forward to optimizer update
    bool qkNormActive = false;
    std::vector<EventRecord> events;
    bool probed = false;
    bool graphed = false;  // forward to update ran as one CUDA graph replay
    std::vector<ProbeStats> probeStats;
    std::vector<LogitHistogram> histograms;
    std::vector<AttentionMap> maps;
    std::vector<QkClip> clips;  // heads QK-Clip scaled after this step's update
};

// What the run loop carries from step to step.
struct LoopState {
    RunMonitor monitor;  // spikes, their diagnosis and the logit alarms
    std::vector<PendingStep> pending;
    Clock::time_point lastFlush = Clock::now(), lastReadback = Clock::now();
    double untimedSeconds = 0;  // since the last readback: validation, checkpoints, pauses

    // Runs f and keeps its time out of the steps' tokens/s.
    template <class F>
    void untimed(F&& f) {
        const auto t0 = Clock::now();
        f();
        untimedSeconds += seconds(t0, Clock::now());
    }
    explicit LoopState(const RunConfig& config) : monitor(config) {}
};

struct Trainer::Impl {
    RunConfig config;  // events grow with interventions
    TrainerOptions options;
    std::string checkpointDir;  // empty = no checkpoints
    torch::Device device{torch::kCPU};
    bool bf16 = false;
    bool deferredReadback = false;
    Transformer model{nullptr};
    std::unique_ptr<DeviceAdamW> optimizer;
    std::unique_ptr<GraphStepper> graphs;  // run.cuda_graphs; null = every step eager
    bool graphFailureReported = false;
    std::unique_ptr<TokenDataLoader> data;
    int64_t startStep = 0;
    int64_t paramCount = 0;
    std::vector<torch::Tensor> params, gains;
    ProbeSettings probeSettings;

    std::atomic<bool> pauseRequested{false}, stopRequested{false}, paused{false};
    std::mutex controlMutex;
    std::condition_variable controlCv;
    std::deque<Event> pendingInterventions;
    std::atomic<int64_t> currentStep{0};  // read by other threads (interventions, progress)
    std::string lastCheckpoint;
    Clock::time_point lastCheckpointTime = Clock::now();
    MapMoments mapMoments{0, 0};                   // set from the config in the constructor
    std::optional<SkipStepDetector> skipDetector;  // optim.skip_step = sigma

    // The parameter groups (decay on matrices only) in a fixed order: checkpoints store the
    // optimizer state in this order. optim.kind = muon splits the decayed group in two: the
    // blocks' hidden matrices (Muon) first, then the embeddings and the LM head (AdamW).
    std::vector<AdamWGroup> parameterGroups() {
        const double wd = config.optim.weightDecay;
        if (config.optim.kind == OptimKind::Muon) {
            auto split = model->muonSplit();
            return {{split.hidden, wd, /*muon=*/true, split.rowBlocks},
                    {split.adamw, wd},
                    {model->undecayedParameters(), 0.0}};
        }
        return {{model->decayedParameters(), wd}, {model->undecayedParameters(), 0.0}};
    }
    void buildOptimizer();
    void buildGraphs();
    // optim.skip_step (trainer_policy.cpp).
    void buildPolicy();
    bool policySkips(const StepPlan& plan, PendingStep& p);
    void actOnForecasts(int64_t step, const std::vector<Forecast>& forecasts);
    std::string policyState() const;
    void restorePolicyState(const std::string& text, const std::string& where);

    void saveCheckpoint(int64_t nextStep, TrainingObserver& observer);
    void loadCheckpoint(const std::string& path);
    void checkSameTokenizer(torch::serialize::InputArchive& archive, const std::string& path) const;
    double validationLoss(const StepPlan& plan);
    std::vector<Event> takeInterventions(int64_t step);
    bool waitWhilePaused();

    std::vector<EventRecord> eventsAt(int64_t step);
    LoopFacts loopFacts(bool events) const;
    Batch drawBatch(const StepSettings& s);
    PendingStep trainStep(const StepPlan& plan, const Batch& batch);
    std::optional<PendingStep> graphStep(const StepPlan& plan, const Batch& batch);
    PendingStep trainOrReplay(const StepPlan& plan, const Batch& batch);
    std::vector<AttentionMap> mapsBeforeEvents(const StepPlan& plan, const Batch& batch);
    bool readBeforeUpdate(PendingStep& p);
    void update(const StepPlan& plan, PendingStep& p);
    void stepOptimizer();  // optimizer->step() and the output centring after it
    bool finishStep(const StepPlan& plan, LoopState& st, TrainingObserver& observer,
                    RunOutcome& outcome);
    bool readBack(LoopState& st, TrainingObserver& observer, RunOutcome& outcome);
    bool runStep(int64_t step, LoopState& st, TrainingObserver& observer, RunOutcome& outcome);
    void trainSteps(LoopState& st, TrainingObserver& observer, RunOutcome& outcome);
    void runLoop(TrainingObserver& observer, RunOutcome& outcome);
    void reportStep(PendingStep& p, LoopState& st, TrainingObserver& observer);
};

}  // namespace qklab
