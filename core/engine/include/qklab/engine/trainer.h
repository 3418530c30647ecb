// qklab/engine/trainer.h — trains one model described by a RunConfig and reports what happens.
//
// The training loop runs on the caller's thread (Trainer::run blocks). Control comes from
// other threads through requestPause/Resume/Stop and postIntervention, which are checked once
// per step. Progress leaves through a TrainingObserver; core knows nothing of any GUI. Torch
// types stay behind the pimpl so that this header is cheap to include (and Qt-safe).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "qklab/config/run_config.h"
#include "qklab/store/records.h"
#include "qklab/util/version.h"

namespace qklab {

class TrainingObserver {
  public:
    virtual ~TrainingObserver() = default;
    virtual void onStep(const StepMetrics&) {}
    virtual void onProbes(int64_t /*step*/, const std::vector<ProbeStats>&,
                          const std::vector<LogitHistogram>&) {}
    virtual void onAttentionMaps(const std::vector<AttentionMap>&) {}
    virtual void onSpike(const Spike&) {}
    virtual void onLogitAlarm(const LogitAlarm&) {}
    // A warning that an onset is coming (qklab/analysis/forecast.h), before that probe's rows.
    virtual void onForecast(const Forecast&) {}
    // The heads QK-Clip scaled after one step's update (never called with an empty list).
    virtual void onQkClips(int64_t /*step*/, const std::vector<QkClip>&) {}
    virtual void onEvent(const EventRecord&) {}
    // What a change (an event or intervention after step 0) did, once its report window closed
    // (or the run ended first; qklab/analysis/change_reports.h).
    virtual void onChangeReport(const ChangeReport&) {}
    virtual void onCheckpoint(const CheckpointInfo&) {}
    // Called about every 0.5 s and at probe steps: a good moment to commit buffered rows.
    virtual void onFlushPoint() {}
};

struct RunOutcome {
    RunStatus status = RunStatus::Finished;  // Finished, Diverged or Stopped
    int64_t stepsDone = 0;                   // steps completed (last good step + 1)
    double finalLoss = 0;                    // last finite training loss
    std::string message;                     // e.g. "loss became nan at step 143"
};

class StepGraph;  // engine/step_graph.h: a recorded step, replayed

struct TrainerOptions {
    std::string resumeFrom;  // a checkpoint file to continue from
    // A resumed run's probe rows and logit alarms stored before the checkpoint's step: the
    // alarms' history (RunMonitor::restore), so that they compare against the run's first
    // probe and are not raised twice.
    std::vector<ProbeStats> storedProbes;
    std::vector<LogitAlarm> storedAlarms;
    // Where run.cuda_graphs gets its graphs: empty = the CUDA plugin. Tests set a stand-in
    // that replays on the CPU, which also turns graphs on for a CPU run.
    std::function<std::unique_ptr<StepGraph>()> stepGraphFactory;
};

class Trainer {
  public:
    // Validates the config, loads data, builds the model. Throws Error on bad input.
    Trainer(const RunConfig& config, TrainerOptions options = {});
    ~Trainer();
    Trainer(const Trainer&) = delete;
    Trainer& operator=(const Trainer&) = delete;

    RunOutcome run(TrainingObserver& observer);

    // Thread-safe controls.
    void requestPause();
    void requestResume();
    void requestStop();
    bool isPaused() const;
    // Applied at the start of the next step (its step field is overwritten with that step);
    // reported through onEvent with source "user" so a store can replay the run.
    void postIntervention(const Event& event);

    // Where checkpoints go (set before run(); none until set). A setter rather than an
    // option: a new run's folder is named after its store id, known only once the config has
    // passed the trainer's checks.
    void setCheckpointDir(const std::string& dir);

    const RunConfig& config() const;
    int64_t parameterCount() const;
    int64_t startStep() const;    // > 0 when resumed from a checkpoint
    int64_t currentStep() const;  // the step being trained or about to be (thread-safe)
    std::string deviceDescription() const;
    // "" for bytes; with a BPE, its merges (a text with fewer distinct pairs than
    // data.vocab_size asks for leaves ids unused) and the tokens of each split.
    std::string tokenizerDescription() const;
    // True when this run steps through CUDA graphs where it can (run.cuda_graphs on CUDA with
    // deferred readback, or a test's stand-in graph).
    bool cudaGraphs() const;
    // Steps that ran as one CUDA graph replay (run.cuda_graphs); 0 when graphs are off or
    // every capture failed, whatever deviceDescription() says was asked for.
    int64_t replayedSteps() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace qklab
