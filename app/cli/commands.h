// commands.h — every qklab-cli command's arguments and its two functions, in the order of the
// command table (commands.cpp). Each command lives in its own file, xxx_command.cpp; see
// command.h for the convention.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "command.h"

namespace qklab::cli {

// The table, in the order `qklab-cli --help` lists the commands.
std::vector<Command> commandTable();

struct RunArgs {
    std::string preset;  // a preset file, or inline JSON such as '{}'
    std::vector<std::string> overrides;
    std::string name, dbPath;
};
void addRunOptions(CLI::App& cmd, RunArgs& args, Database& db);
int cmdRun(const RunArgs& args);

struct ResumeArgs {
    std::string runRef, dbPath;
};
void addResumeOptions(CLI::App& cmd, ResumeArgs& args, Database& db);
int cmdResume(const ResumeArgs& args);

struct ListArgs {
    bool asJson = false;
    std::string dbPath;
};
void addListOptions(CLI::App& cmd, ListArgs& args, Database& db);
int cmdList(const ListArgs& args);

struct ShowArgs {
    std::string runRef;
    bool asJson = false;
    std::string dbPath;
};
void addShowOptions(CLI::App& cmd, ShowArgs& args, Database& db);
int cmdShow(const ShowArgs& args);

struct ExportArgs {
    std::string runRef, format = "csv", output;
    bool force = false;
    std::string dbPath;
};
void addExportOptions(CLI::App& cmd, ExportArgs& args, Database& db);
int cmdExport(const ExportArgs& args);

struct CompareArgs {
    std::vector<std::string> runRefs;  // id, name, id:N or name:N; at least two
    bool asJson = false;
    bool allKeys = false;  // the whole config, not only the keys that differ
    std::string groupBy;   // a config key: runs with equal values listed as groups
    std::string dbPath;
};
void addCompareOptions(CLI::App& cmd, CompareArgs& args, Database& db);
int cmdCompare(const CompareArgs& args);

struct GenerateArgs {
    std::string runRef;  // id, name, id:N or name:N
    std::string prompt;
    int64_t tokens = 200;
    double temperature = 0;      // 0 = greedy
    int64_t seed = 0;            // read signed so that -1 is refused, not wrapped around
    std::string cache = "auto";  // auto | none | materialised | absorbed
    int64_t threads = 0;         // 0 = all cores
    std::string dbPath;
};
void addGenerateOptions(CLI::App& cmd, GenerateArgs& args, Database& db);
int cmdGenerate(const GenerateArgs& args);

struct SweepArgs {
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
    int pointsPerTask = 1;  // grid points each array task runs, one after another
    bool submit = false;
    // --resume: how long to wait for points another process still runs (the workers of a
    // killed sweep stop at their next step) before running the rest without them.
    double waitRunning = 120;
};
void addSweepOptions(CLI::App& cmd, SweepArgs& args, Database& db);
int cmdSweep(const SweepArgs& args);

// One grid point of a sweep, in its own process: started by `sweep` or a Slurm array task.
struct SweepPointArgs {
    std::string sweepRef;    // a stored sweep (a local sweep)
    std::string definition;  // or: a Slurm folder's sweep.json
    int64_t point = -1, threads = 0;
    std::string dbPath;
};
void addSweepPointOptions(CLI::App& cmd, SweepPointArgs& args, Database& db);
int cmdSweepPoint(const SweepPointArgs& args);

struct SweepsArgs {
    bool asJson = false;
    std::string dbPath;
};
void addSweepsOptions(CLI::App& cmd, SweepsArgs& args, Database& db);
int cmdSweeps(const SweepsArgs& args);

struct SweepReportArgs {
    std::string sweepRef;
    bool asJson = false, validationLoss = false;
    double margin = 0.1;
    std::string dbPath;
};
void addSweepReportOptions(CLI::App& cmd, SweepReportArgs& args, Database& db);
int cmdSweepReport(const SweepReportArgs& args);

struct MergeArgs {
    std::vector<std::string> shards;
    std::string into;
};
void addMergeOptions(CLI::App& cmd, MergeArgs& args, Database& db);
int cmdMerge(const MergeArgs& args);

struct ImportArgs {
    std::vector<std::string> files;
    std::string dbPath;
};
void addImportOptions(CLI::App& cmd, ImportArgs& args, Database& db);
int cmdImport(const ImportArgs& args);
// Copies every run of each source database into `into` (created when missing). Prints what
// was imported and skipped; re-running it changes nothing. `merge` is the same into --into.
int importDatabases(const std::vector<std::string>& sources, const std::string& into);

struct RecommendArgs {
    std::string params;               // or: dModel and nLayers
    int64_t dModel = 0, nLayers = 0;  // 0: from params
    int64_t dHead = 0;                // 0: the guide's
    std::string precision = "bf16";
    bool shipWithoutQkNorm = false;
    std::string output;
    std::string dbPath;  // not written over
};
void addRecommendOptions(CLI::App& cmd, RecommendArgs& args, Database& db);
int cmdRecommend(const RecommendArgs& args);

struct LessonArgs {
    std::vector<std::string> files, presetDirs;
    bool reference = false;
    bool record = false;  // train each lesson's runs into dbPath
    std::string dbPath;
};
void addLessonOptions(CLI::App& cmd, LessonArgs& args, Database& db);
int cmdLesson(const LessonArgs& args);

struct ValueArgs {
    std::string runRef;
    std::vector<std::string> expressions;  // lesson placeholders without braces
    bool asJson = false;
    std::string dbPath;
};
void addValueOptions(CLI::App& cmd, ValueArgs& args, Database& db);
int cmdValue(const ValueArgs& args);

struct CheckBlasArgs {};
void addCheckBlasOptions(CLI::App& cmd, CheckBlasArgs& args, Database& db);
int cmdCheckBlas(const CheckBlasArgs& args);

struct KeysArgs {
    bool markdown = false;
};
void addKeysOptions(CLI::App& cmd, KeysArgs& args, Database& db);
int cmdKeys(const KeysArgs& args);

}  // namespace qklab::cli
