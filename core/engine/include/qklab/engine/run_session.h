// qklab/engine/run_session.h — one training run recorded in the store: the glue that the CLI and
// the GUI worker share. It creates (or re-opens, to resume) the run row, forwards everything the
// trainer reports to a RunWriter (and to an optional extra observer), saves checkpoints next
// to the database, and writes the final status. A diverged run is an outcome, not an error.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "qklab/config/run_config.h"
#include "qklab/engine/trainer.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"

namespace qklab {

struct SessionOptions {
    std::string dbPath;                    // the SQLite store
    std::string name;                      // run name; empty = "run-<id>"
    std::optional<SweepMembership> sweep;  // the grid point this run is, in a sweep
};

class RunSession {
  public:
    // New run. Validates the config and builds the model; throws Error on bad input (nothing
    // is written to the store in that case).
    RunSession(const RunConfig& config, const SessionOptions& options);
    // Continue a stopped/interrupted run from its newest usable checkpoint. The run is
    // claimed atomically first: a second resume of it exits with "already being resumed".
    static std::unique_ptr<RunSession> resume(const std::string& dbPath, int64_t runId);
    ~RunSession();

    // Blocks until the run ends. `extra` (may be null) sees everything too, from this thread.
    RunOutcome run(TrainingObserver* extra = nullptr);

    int64_t runId() const;
    Trainer& trainer();

  private:
    RunSession() = default;
    static std::unique_ptr<RunSession> resumeClaimed(RunStore& store, const std::string& dbPath,
                                                     const RunInfo& info);
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// checkpointFolder(dbPath) (qklab/store/run_store.h): a run's checkpoints are always kept there.
std::string defaultCheckpointRoot(const std::string& dbPath);

}  // namespace qklab
