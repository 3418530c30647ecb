// sweep_command.h — `qklab-cli sweep`: a grid of runs on this machine (N worker processes,
// each a `qklab-cli sweep-point`) or as a Slurm job array, plus `sweeps`, `sweep-report`,
// `merge` and `import`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qklab/run_config.h"
#include "qklab/run_session.h"
#include "qklab/sweep.h"

namespace qklab::cli {

struct SweepOptions {
    std::string file;    // a sweep JSON file (a new sweep)
    std::string resume;  // or: the id or name of a stored sweep to continue
    std::string name;    // the new sweep's name (default: the file's stem)
    std::string dbPath;
    int jobs = 0;           // worker processes; 0 = cores / threads per run
    int threadsPerRun = 1;  // run.threads of every point
    bool retryFailed = false;
    // Slurm: write the job into this folder instead of running here.
    std::string slurmDir, partition, time;
    int gpusPerTask = 0, maxParallel = 0;
    bool submit = false;
    // --resume: how long to wait for points another process still runs (the workers of a
    // killed sweep stop at their next step) before running the rest without them.
    double waitRunning = 120;
};
constexpr double kMaxWaitRunning = 86400;  // a day: beyond it, a typo

int runSweep(const SweepOptions& o);

// A new sweep from o.file and o.name: the name checked (checkSweepName), every point built and
// validated. Reads the file only: nothing is stored or written.
struct NewSweep {
    SweepDefinition definition;
    std::vector<SweepPoint> points;
};
NewSweep newSweep(const SweepOptions& o);

// Single quotes for the shell: the whole string is one word, whatever it holds.
std::string shellQuoted(const std::string& s);

// What one `qklab-cli sweep-point` process trains: a new run of the grid point, or the
// resumption of its stopped or interrupted run. The sweep comes from the store (sweepRef, a
// local sweep) or from a Slurm folder's sweep.json (definitionFile; the shard database then
// gets the sweep record first, found again by its UUID when the shards are merged).
struct PointPlan {
    RunConfig config;
    SessionOptions session;
    std::optional<int64_t> resumeRunId;
};
PointPlan planSweepPoint(const std::string& dbPath, const std::string& sweepRef,
                         const std::string& definitionFile, int64_t index, int64_t threads);

struct ReportOptions {
    std::string sweepRef, dbPath;
    bool asJson = false, validationLoss = false;
    double margin = 0.1;
};
int listSweeps(const std::string& dbPath, bool asJson);
int sweepReportCommand(const ReportOptions& o);

// Copies every run of each source database into `into` (created when missing). Prints what
// was imported and skipped; re-running it changes nothing.
int importDatabases(const std::vector<std::string>& sources, const std::string& into);

}  // namespace qklab::cli
