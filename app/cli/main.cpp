// qklab-cli — train, list, show, export and resume runs without the GUI.
//
//   qklab-cli run PRESET.json [--set k=v]... [--db FILE] [--name NAME]
//   qklab-cli resume RUN [--db FILE]
//   qklab-cli list [--json] [--db FILE]
//   qklab-cli show RUN [--json] [--db FILE]
//   qklab-cli export RUN --format csv|json [--output FILE] [--db FILE]
//   qklab-cli compare RUN RUN... [--json] [--all] [--db FILE]
//   qklab-cli generate RUN [--prompt TEXT] [--tokens N] [--temperature T] [--seed S]
//                      [--cache auto|none|materialised|absorbed] [--threads N] [--db FILE]
//   qklab-cli sweep SWEEP.json [--jobs N] [--threads-per-run T] [--name NAME] [--db FILE]
//   qklab-cli sweep --resume SWEEP [--retry-failed] [--db FILE]
//   qklab-cli sweep SWEEP.json --slurm OUT_DIR [--partition P] [--time T] [--gpus-per-task G]
//                  [--max-parallel K] [--submit]
//   qklab-cli sweeps [--json] [--db FILE]
//   qklab-cli sweep-report SWEEP [--json] [--val] [--margin M] [--db FILE]
//   qklab-cli merge SHARD.db... --into FILE.db
//   qklab-cli import FILE.db [--db FILE]
//   qklab-cli recommend --params 300M | --d-model D --layers L [--d-head H] [--precision P]
//                      [--ship-without-qk-norm] [--output FILE]
//   qklab-cli lesson FILE... | --reference
//   qklab-cli check-blas
//   qklab-cli keys [--markdown]
//   qklab-cli --version
//
// Exit status: 0 when a run finished or diverged (divergence is a result), 2 for bad input
// (message names the problem), 3 when stopped by Ctrl-C (resumable), 1 for other failures.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "compare_command.h"
#include "generate_command.h"
#include "progress_bar.h"
#include "qklab/config_docs.h"
#include "qklab/environment.h"
#include "qklab/error.h"
#include "qklab/input_file.h"
#include "qklab/lesson.h"
#include "qklab/recommend.h"
#include "qklab/record_columns.h"
#include "qklab/resources.h"
#include "qklab/run_export.h"
#include "qklab/run_session.h"
#include "qklab/run_store.h"
#include "qklab/trainer.h"
#include "sweep_command.h"

using namespace qklab;

namespace {

std::atomic<Trainer*> g_activeTrainer{nullptr};

void onInterrupt(int) {
    if (Trainer* t = g_activeTrainer.load()) t->requestStop();  // atomic flag: signal-safe
}

class CliObserver : public TrainingObserver {
  public:
    explicit CliObserver(cli::ProgressBar& bar) : m_bar(bar) {}
    void onStep(const StepMetrics& m) override {
        m_bar.update(m.step, m.loss, m.tokensPerSec, m_maxLogit);
    }
    void onProbes(int64_t, const std::vector<ProbeStats>& stats,
                  const std::vector<LogitHistogram>&) override {
        m_maxLogit = 0;
        for (const auto& s : stats)
            if (s.head == -1) m_maxLogit = std::max(m_maxLogit, s.logitMaxRaw);
    }

  private:
    cli::ProgressBar& m_bar;
    double m_maxLogit = 0;
};

// Everything the subcommands' options fill in.
struct Options {
    std::string dbPath, presetPath, name, runRef, format = "csv", output;
    std::vector<std::string> overrides;
    bool asJson = false, markdown = false, force = false;
    cli::CompareOptions compare;  // its own runs and flags; dbPath is filled in before use
    cli::GenerateCommandOptions generate;
    cli::SweepOptions sweep;
    cli::ReportOptions report;
    std::vector<std::string> sources;  // merge / import
    std::string into, definition;
    int64_t point = -1, threads = 0;
    std::string params, precision = "bf16";
    RecommendRequest recommend;
    std::vector<std::string> lessons, presetDirs;
    bool reference = false;
};

// JSON for the terminal or a file: text from a database that is not UTF-8 (someone else's
// file) becomes U+FFFD instead of an exception halfway through the output.
std::string jsonText(const nlohmann::json& j, int indent) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// An error message quotes names and values from files: each line's control characters are
// escaped (the line breaks between lines stay).
std::string printableMessage(const std::string& message) {
    std::string out, line;
    for (char c : message + "\n") {
        if (c != '\n') {
            line += c;
            continue;
        }
        out += (out.empty() ? "" : "\n") + printableText(line);
        line.clear();
    }
    return out;
}

int exitCodeFor(RunStatus s) {
    switch (s) {
        case RunStatus::Finished:
        case RunStatus::Diverged:
            return 0;
        case RunStatus::Stopped:
            return 3;
        default:
            return 1;
    }
}

int trainSession(RunSession& session, const std::string& dbPath) {
    const auto& cfg = session.trainer().config();
    const BlasCheck blas = checkBlasSpeed();
    if (!blas.message.empty())
        std::cerr << (blas.slow ? "warning: " : "note: ") << blas.message << "\n";
    for (const auto& w : configWarnings(cfg)) std::cerr << "warning: " << w << "\n";
    std::string threadsWarning;
    cappedThreads(cfg.run.threads, &threadsWarning);
    if (!threadsWarning.empty()) std::cerr << "warning: " << threadsWarning << "\n";
    std::cerr << "run " << session.runId() << " in " << dbPath << ": "
              << session.trainer().parameterCount() << " parameters, "
              << session.trainer().deviceDescription() << "\n";
    cli::ProgressBar bar(session.trainer().startStep(), cfg.schedule.steps, isatty(STDERR_FILENO));
    CliObserver observer(bar);
    g_activeTrainer = &session.trainer();
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    const RunOutcome outcome = session.run(&observer);
    g_activeTrainer = nullptr;
    bar.finish();
    std::cerr << "run " << session.runId() << " " << toString(outcome.status) << " after "
              << outcome.stepsDone << " steps";
    if (!outcome.message.empty()) std::cerr << " (" << outcome.message << ")";
    std::cerr << "\n";
    std::cout << session.runId() << "\n";  // scripts read the run id from stdout
    return exitCodeFor(outcome.status);
}

// A column per run-list column (qklab/record_columns.h), as wide as its widest cell: text on
// the left, numbers on the right.
void printRunTable(const std::vector<RunInfo>& runs) {
    const std::vector<const RunColumn*> columns = listedRunColumns();
    std::vector<std::vector<std::string>> rows(1);
    for (const RunColumn* c : columns) rows[0].push_back(c->title);
    for (const RunInfo& r : runs) {
        rows.emplace_back();
        for (const RunColumn* c : columns) rows.back().push_back(runListText(*c, r));
    }
    std::vector<size_t> width(columns.size());
    for (const auto& row : rows)
        for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    for (const auto& row : rows) {
        std::string line;
        for (size_t i = 0; i < row.size(); ++i) {
            const std::string pad(width[i] - row[i].size(), ' ');
            const bool left = columns[i]->type == ColumnType::Text;
            line += (i ? "  " : "") + (left ? row[i] + pad : pad + row[i]);
        }
        std::printf("%s\n", line.substr(0, line.find_last_not_of(' ') + 1).c_str());
    }
}

// A zero-byte file is taken over only when it is truly empty (its WAL holds nothing
// either), and the user is told.
void noteEmptyDatabaseFile(const std::string& dbPath) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(dbPath, ec) ||
        std::filesystem::file_size(dbPath, ec) != 0)
        return;
    const std::string wal = dbPath + "-wal";
    if (std::filesystem::exists(wal, ec) && std::filesystem::file_size(wal, ec) > 0)
        throw Error(ErrorCode::InvalidRequest,
                    dbPath + " is empty but " + wal +
                        " is not: its data may still be in the WAL; refusing to take it over");
    std::cerr << "note: " << dbPath << " is an empty file; it becomes a qklab database\n";
}

int cmdRun(const Options& o) {
    // A preset file, or inline JSON such as '{}' (all defaults) when no such file exists. Only
    // a stat: opening a FIFO to see whether it is there would block.
    std::error_code ec;
    const bool inlineJson =
        !o.presetPath.empty() && o.presetPath.front() == '{' &&
        !std::filesystem::exists(std::filesystem::symlink_status(o.presetPath, ec));
    RunConfig config = inlineJson ? configFromJsonText(o.presetPath, "inline preset", false)
                                  : loadPreset(o.presetPath, /*checkValues=*/false);
    for (const auto& assignment : o.overrides) applyOverride(config, assignment);
    try {
        validate(config);
    } catch (const Error& e) {
        throw Error(
            e.code(),
            o.presetPath + (o.overrides.empty() ? ": " : " with --set overrides: ") + e.what());
    }
    noteEmptyDatabaseFile(o.dbPath);
    RunSession session(config, SessionOptions{o.dbPath, o.name, {}});
    return trainSession(session, o.dbPath);
}

int cmdResume(const Options& o) {
    int64_t id = 0;
    {
        RunStore store(o.dbPath, StoreAccess::ReadOnly);
        id = store.findRun(o.runRef).id;
    }
    auto session = RunSession::resume(o.dbPath, id);
    return trainSession(*session, o.dbPath);
}

// One grid point of a sweep, in its own process (started by `sweep` or a Slurm array task).
int cmdSweepPoint(const Options& o) {
    cli::PointPlan plan = cli::planSweepPoint(o.dbPath, o.runRef, o.definition, o.point, o.threads);
    if (plan.resumeRunId) {
        auto session = RunSession::resume(o.dbPath, *plan.resumeRunId);
        return trainSession(*session, o.dbPath);
    }
    RunSession session(plan.config, plan.session);
    return trainSession(session, o.dbPath);
}

// Where a lesson's presets are looked for, in the app's order: the --presets folders (else
// $QKLAB_EXPERIMENTS_DIR, as the app, else the shipped experiments/ of this build), then the
// folder the app saves the user's presets in.
std::vector<std::string> lessonPresetDirs(const std::vector<std::string>& given) {
    std::vector<std::string> dirs = given;
    if (dirs.empty()) {
        const char* env = std::getenv("QKLAB_EXPERIMENTS_DIR");
        dirs.push_back(env && env[0] ? env : QKLAB_SHIPPED_PRESETS);
    }
    dirs.push_back(
        (std::filesystem::path(defaultDatabasePath()).parent_path() / "presets").string());
    return dirs;
}

// Checks lesson files as the app plays them (the same checks, in core): exit 2 with the step
// and field of the first error.
int cmdLesson(const Options& o) {
    if (o.reference) {
        std::cout << lessonReferenceMarkdown();
        return 0;
    }
    if (o.lessons.empty()) throw Error(ErrorCode::InvalidRequest, "give lesson files to check");
    const std::vector<std::string> dirs = lessonPresetDirs(o.presetDirs);
    const LessonPresetLookup presets = [&dirs](const std::string& name) {
        const std::string path = resolveLessonPreset(name, dirs, [](const std::string& p) {
            std::error_code ec;
            return std::filesystem::exists(p, ec);
        });
        return path.empty() ? std::nullopt
                            : std::optional<std::string>(readInputFile(path, kPresetFile));
    };
    for (const std::string& path : o.lessons) {
        const Lesson l = parsePlayableLesson(readInputFile(path, kLessonFile), path, presets);
        std::cout << path << ": \"" << l.title << "\", " << l.steps.size() << " steps, ok\n";
    }
    return 0;
}

int cmdCheckBlas() {
    const BlasCheck r = checkBlasSpeed();
    const CudaBackend cuda = cudaBackend();
    std::printf("matmul: %.1f GFLOP/s%s on %d thread%s\nblas: %s\ncuda: %s, %d GPU(s)\n", r.gflops,
                r.slow ? " (slow)" : "", r.threads, r.threads == 1 ? "" : "s", r.blas.c_str(),
                cuda.detail.c_str(), cuda.devices);
    if (!r.message.empty())
        std::fprintf(stderr, "%s: %s\n", r.slow ? "warning" : "note", r.message.c_str());
    return 0;
}

// True when `path` names the file itself or its WAL / shared-memory companions.
bool isDatabaseOrCompanion(const std::string& path, const std::string& dbPath) {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        const std::string p = dbPath + suffix;
        if (fs::exists(p, ec) && fs::exists(path, ec) && fs::equivalent(path, p, ec)) return true;
    }
    return false;
}

bool looksLikeSqlite(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char header[16] = {};
    return in.read(header, sizeof header) && std::memcmp(header, "SQLite format 3", 16) == 0;
}

// Writes an export next to its target and renames it over the target, so that a failed or
// interrupted export never leaves half a file, and refuses targets whose loss would hurt.
void writeExport(const std::string& text, const std::string& path, const std::string& dbPath,
                 bool force) {
    if (isDatabaseOrCompanion(path, dbPath))
        throw Error(ErrorCode::InvalidRequest,
                    "refusing to export over " + path + ": it is the database being read");
    // A FIFO would block the SQLite-header check below, and the rename would replace it.
    if (std::string problem = specialFileProblem(path, "--output"); !problem.empty())
        throw Error(ErrorCode::InvalidRequest,
                    problem + " (leave --output out to write to standard output)");
    if (!force && looksLikeSqlite(path))
        throw Error(ErrorCode::InvalidRequest,
                    "refusing to overwrite " + path + ": it is a SQLite database (use --force)");
    const std::string tmp = path + ".qklab-tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out || !(out << text) || !out.flush()) {
            std::remove(tmp.c_str());
            throw Error(ErrorCode::Io, "cannot write " + path);
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw Error(ErrorCode::Io, "cannot write " + path + ": " + std::strerror(errno));
    }
}

// The guide's size table as a preset: the config on stdout (or --output), reasons on stderr.
int cmdRecommend(Options& o) {
    if (!o.params.empty()) o.recommend.parameters = parseParameterCount(o.params);
    o.recommend.precision = o.precision == "fp32" ? Precision::Fp32 : Precision::Bf16;
    const Recommendation r = recommendSettings(o.recommend);
    std::cerr << "the guide's " << r.tier << " row:\n";
    for (const auto& [key, reason] : r.reasons) std::cerr << "  " << key << ": " << reason << "\n";
    const std::string text = recommendationToJson(r).dump(2) + "\n";
    if (o.output.empty()) {
        std::cout << text;
        return 0;
    }
    writeExport(text, o.output, o.dbPath, o.force);
    std::cerr << "wrote " << o.output << "\n";
    return 0;
}

void addGenerateOptions(CLI::App& cmd, cli::GenerateCommandOptions& g) {
    cmd.add_option("run", g.runRef, "run id or name")->required();
    cmd.add_option("--prompt", g.prompt, "bytes fed before generating (default: none)");
    cmd.add_option(
        "--tokens", g.tokens,
        "bytes to generate, 1 to " + std::to_string(cli::kMaxGenerateTokens) + " (default 200)");
    cmd.add_option("--temperature", g.temperature,
                   "0 = greedy (default); above 0 samples from softmax(logits / T)");
    cmd.add_option("--seed", g.seed, "sampling seed: the same seed gives the same text");
    cmd.add_option("--cache", g.cache,
                   "decode cache: " + choiceList<DecodeCache>() +
                       " (auto: absorbed for MLA, materialised for MHA)");
    cmd.add_option("--threads", g.threads,
                   "intra-op threads, 0 (all cores, the default) to " +
                       std::to_string(kMaxThreadsOption) + "; more than the cores are capped");
}

int cmdStored(const Options& o, const CLI::App& list, const CLI::App& show) {
    // Readers never write: no migration, no status update (a dead writer's run is shown as
    // interrupted), and a database on read-only media can be read.
    std::unique_ptr<RunStore> opened;
    try {
        opened = std::make_unique<RunStore>(o.dbPath, StoreAccess::ReadOnly);
    } catch (const Error& e) {
        if (e.code() != ErrorCode::MissingFile || o.runRef.empty()) throw;
        throw Error(ErrorCode::NotFound, std::string(e.what()) + ", so there is no run '" +
                                             o.runRef.substr(0, 80) + "'");
    }
    RunStore& store = *opened;
    if (list) {
        const auto runs = store.listRuns();
        if (!o.asJson) {
            printRunTable(runs);
            return 0;
        }
        auto arr = nlohmann::json::array();
        for (const auto& r : runs) arr.push_back(runSummaryJson(store, r.id));
        std::cout << jsonText(arr, 2) << "\n";
        return 0;
    }
    const int64_t id = store.findRun(o.runRef).id;
    if (show) {
        nlohmann::json j;
        j["summary"] = runSummaryJson(store, id);
        j["config"] = runConfigJson(store, id);  // within the JSON limits: exit 2, not a crash
        j["alarms"] = logitAlarmsJson(store, id);
        if (o.asJson)
            std::cout << jsonText(j, 2) << "\n";
        else
            std::cout << "summary:\n"
                      << jsonText(j["summary"], 2) << "\nconfig:\n"
                      << jsonText(j["config"], 2) << "\n";
        return 0;
    }
    const std::string text =
        o.format == "csv" ? runExportCsv(store, id) : jsonText(runExportJson(store, id), 1) + "\n";
    if (o.output.empty()) {
        std::cout << text;
        return 0;
    }
    writeExport(text, o.output, o.dbPath, o.force);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"qklab-cli: train small transformers and watch their attention logits"};
    app.set_version_flag("--version", appVersion() + " (LibTorch " + torchVersion() + ")");
    app.require_subcommand(1);
    Options o;
    std::vector<CLI::Option*> dbOptions{
        app.add_option("--db", o.dbPath, "run database (default: " + defaultDatabasePath() + ")")};

    auto* run = app.add_subcommand("run", "train a preset and record it");
    run->add_option("preset", o.presetPath,
                    "preset JSON file (e.g. experiments/default.json; a regular file of at most " +
                        limitText(kPresetFile.maxBytes) + "), or inline JSON ('{}' = all defaults)")
        ->required();
    run->add_option("--set", o.overrides, "override a config key: dotted.key=value (repeatable)");
    run->add_option("--name", o.name, "run name (unique in the database)");
    dbOptions.push_back(run->add_option("--db", o.dbPath, "run database"));
    auto* resume = app.add_subcommand(
        "resume", "continue a stopped or interrupted run from its last checkpoint");
    resume->add_option("run", o.runRef, "run id or name")->required();
    dbOptions.push_back(resume->add_option("--db", o.dbPath, "run database"));
    auto* list = app.add_subcommand("list", "list stored runs");
    list->add_flag("--json", o.asJson, "machine-readable output");
    dbOptions.push_back(list->add_option("--db", o.dbPath, "run database"));
    auto* show = app.add_subcommand("show", "config and summary of one run");
    show->add_option("run", o.runRef, "run id or name")->required();
    show->add_flag("--json", o.asJson, "machine-readable output");
    dbOptions.push_back(show->add_option("--db", o.dbPath, "run database"));
    auto* exportCmd = app.add_subcommand("export", "all recorded data of one run");
    exportCmd->add_option("run", o.runRef, "run id or name")->required();
    exportCmd->add_option("--format", o.format, "csv or json")
        ->check(CLI::IsMember({"csv", "json"}));
    exportCmd->add_option("--output,-o", o.output, "file to write (default: standard output)");
    exportCmd->add_flag("--force", o.force, "overwrite a file that is a SQLite database");
    dbOptions.push_back(exportCmd->add_option("--db", o.dbPath, "run database"));
    auto* compare =
        app.add_subcommand("compare", "config differences and a summary table of two or more runs");
    compare->add_option("runs", o.compare.runRefs, "run ids or names (at least two)")->required();
    compare->add_flag("--json", o.compare.asJson, "machine-readable output");
    compare->add_flag("--all", o.compare.allKeys, "every config key, not only the differences");
    dbOptions.push_back(compare->add_option("--db", o.dbPath, "run database"));
    auto* generate = app.add_subcommand(
        "generate", "text from a run's newest checkpoint (prompt, then the generated bytes)");
    addGenerateOptions(*generate, o.generate);
    dbOptions.push_back(generate->add_option("--db", o.dbPath, "run database"));
    auto* sweep = app.add_subcommand(
        "sweep", "run a grid of configs (a sweep file) here, or write it as a Slurm job array");
    sweep->add_option("file", o.sweep.file,
                      "sweep JSON file (see experiments/sweeps/; a regular file of at most " +
                          limitText(kSweepFile.maxBytes) + ")");
    sweep->add_option("--resume", o.sweep.resume,
                      "continue a stored sweep (id or name): only missing, stopped or "
                      "interrupted points run");
    sweep->add_flag("--retry-failed", o.sweep.retryFailed, "with --resume: run failed points too");
    sweep->add_option("--wait-running", o.sweep.waitRunning,
                      "with --resume: seconds to wait for points another process still runs "
                      "(a killed sweep's workers stop at their next step; default 120)");
    sweep->add_option("--name", o.sweep.name, "the sweep's name (default: the file's stem)");
    sweep->add_option("--jobs,-j", o.sweep.jobs, "worker processes (default: cores / threads)");
    sweep->add_option("--threads-per-run", o.sweep.threadsPerRun,
                      "run.threads of each point (default 1)");
    sweep->add_option("--slurm", o.sweep.slurmDir,
                      "write the sweep as a Slurm job array into this folder instead");
    sweep->add_option("--partition", o.sweep.partition, "Slurm partition");
    sweep->add_option("--time", o.sweep.time, "Slurm time limit per point (e.g. 00:30:00)");
    sweep->add_option("--gpus-per-task", o.sweep.gpusPerTask, "Slurm GPUs per point");
    sweep->add_option("--max-parallel", o.sweep.maxParallel,
                      "at most this many points at once (--array=...%K)");
    sweep->add_flag("--submit", o.sweep.submit, "run sbatch on the written job");
    dbOptions.push_back(sweep->add_option("--db", o.dbPath, "run database"));
    auto* sweepPoint = app.add_subcommand("sweep-point", "train one grid point (used by sweep)");
    sweepPoint->group("");  // internal: `sweep` and the Slurm script start it
    sweepPoint->add_option("--sweep", o.runRef, "stored sweep id or name");
    sweepPoint->add_option("--definition", o.definition, "a Slurm folder's sweep.json");
    sweepPoint->add_option("--point", o.point, "grid point index")->required();
    sweepPoint->add_option("--threads", o.threads, "run.threads");
    dbOptions.push_back(sweepPoint->add_option("--db", o.dbPath, "run database"));
    auto* sweeps = app.add_subcommand("sweeps", "list stored sweeps");
    sweeps->add_flag("--json", o.asJson, "machine-readable output");
    dbOptions.push_back(sweeps->add_option("--db", o.dbPath, "run database"));
    auto* report =
        app.add_subcommand("sweep-report",
                           "a sweep's points and, for an LR sweep, each configuration's LR "
                           "sensitivity and max stable LR");
    report->add_option("sweep", o.report.sweepRef, "sweep id or name")->required();
    report->add_flag("--json", o.report.asJson, "machine-readable output");
    report->add_flag("--val", o.report.validationLoss, "use the final validation loss");
    report->add_option("--margin", o.report.margin,
                       "nats above the best loss that still count as stable (default 0.1)");
    dbOptions.push_back(report->add_option("--db", o.dbPath, "run database"));
    auto* merge = app.add_subcommand(
        "merge", "copy every run of several databases (a Slurm sweep's shards) into one");
    merge->add_option("shards", o.sources, "databases to read")->required();
    merge->add_option("--into", o.into, "the database to write (created when missing)")->required();
    auto* import = app.add_subcommand(
        "import", "copy every run of a database (e.g. a colleague's) into yours");
    import->add_option("file", o.sources, "database to read")->required();
    dbOptions.push_back(import->add_option("--db", o.dbPath, "run database to add to"));
    auto* recommend = app.add_subcommand(
        "recommend",
        "the guide's settings for a model size, as a preset with one reason per choice");
    recommend->add_option("--params", o.params, "model size, e.g. 300M, 1.3B, 125e6");
    recommend->add_option("--d-model", o.recommend.dModel, "or: the width ...");
    recommend->add_option("--layers", o.recommend.nLayers, "... and the number of blocks");
    recommend->add_option("--d-head", o.recommend.dHead, "head width (default: the guide's)");
    recommend->add_option("--precision", o.precision, "bf16 (default) or fp32")
        ->check(CLI::IsMember({"bf16", "fp32"}));
    recommend->add_flag("--ship-without-qk-norm", o.recommend.shipWithoutQkNorm,
                        "anneal QK-norm away at the end of training");
    recommend->add_option("--output,-o", o.output, "preset file to write (default: stdout)");
    auto* lesson = app.add_subcommand(
        "lesson",
        "check lesson files as the app plays them (docs/LESSONS.md): exit 2 names the "
        "step and the field");
    lesson->add_option(
        "files", o.lessons,
        "lesson JSON files (regular files of at most " + limitText(kLessonFile.maxBytes) + ")");
    lesson->add_option("--presets", o.presetDirs,
                       "folder of the presets lessons name (repeatable; default: "
                       "$QKLAB_EXPERIMENTS_DIR, else the shipped experiments/; then the "
                       "app's saved presets)");
    lesson->add_flag("--reference", o.reference, "the lesson file reference, as Markdown");
    auto* blas = app.add_subcommand(
        "check-blas", "the BLAS in use, its matmul speed (warns when slow), and the CUDA backend");
    auto* keys =
        app.add_subcommand("keys", "every config key and event kind with its default and meaning");
    keys->add_flag("--markdown", o.markdown, "docs/CONFIG.md");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help and --version exit 0; every other parser error is bad input: 2, as the
        // README promises (CLI11's own codes are 105..114).
        return app.exit(e) == 0 ? 0 : 2;
    }
    for (const CLI::Option* opt : dbOptions)
        if (opt->count() > 0 && o.dbPath.empty()) {
            std::cerr << "qklab-cli: --db: the path is empty\n";
            return 2;
        }
    if (o.dbPath.empty()) o.dbPath = defaultDatabasePath();
    try {
        if (*run) return cmdRun(o);
        if (*resume) return cmdResume(o);
        if (*blas) return cmdCheckBlas();
        if (*recommend) return cmdRecommend(o);
        if (*lesson) return cmdLesson(o);
        if (*compare) {
            o.compare.dbPath = o.dbPath;
            return cli::compareRuns(o.compare);
        }
        if (*generate) {
            o.generate.dbPath = o.dbPath;
            return cli::generateText(o.generate);
        }
        if (*sweep) {
            o.sweep.dbPath = o.dbPath;
            return cli::runSweep(o.sweep);
        }
        if (*sweepPoint) return cmdSweepPoint(o);
        if (*sweeps) return cli::listSweeps(o.dbPath, o.asJson);
        if (*report) {
            o.report.dbPath = o.dbPath;
            return cli::sweepReportCommand(o.report);
        }
        if (*merge) return cli::importDatabases(o.sources, o.into);
        if (*import) return cli::importDatabases(o.sources, o.dbPath);
        if (*keys) {
            std::cout << (o.markdown ? configReferenceMarkdown() : configKeysText());
            return 0;
        }
        return cmdStored(o, *list, *show);
    } catch (const Error& e) {
        std::cerr << "qklab-cli: " << printableMessage(e.what()) << "\n";
        const bool badInput = e.code() != ErrorCode::Internal && e.code() != ErrorCode::Database &&
                              e.code() != ErrorCode::Io;
        return badInput ? 2 : 1;
    } catch (const std::exception& e) {
        std::cerr << "qklab-cli: " << printableMessage(e.what()) << "\n";
        return 1;
    }
}
