// qklab-cli — train, list, show, export and resume runs without the GUI.
//
//   qklab-cli run PRESET.json [--set k=v]... [--db FILE] [--name NAME]
//   qklab-cli resume RUN [--db FILE]
//   qklab-cli list [--json] [--db FILE]
//   qklab-cli show RUN [--json] [--db FILE]
//   qklab-cli export RUN --format csv|json [--output FILE] [--db FILE]
//   qklab-cli check-blas
//   qklab-cli keys [--markdown]
//   qklab-cli --version
//
// Exit status: 0 when a run finished or diverged (divergence is a result), 2 for bad input
// (message names the problem), 3 when stopped by Ctrl-C (resumable), 1 for other failures.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "progress_bar.h"
#include "qklab/config_docs.h"
#include "qklab/error.h"
#include "qklab/run_export.h"
#include "qklab/run_session.h"
#include "qklab/run_store.h"
#include "qklab/trainer.h"

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
    bool asJson = false, markdown = false;
};

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

void printRunTable(const std::vector<RunInfo>& runs) {
    std::printf("%-5s %-24s %-12s %8s %10s %10s %12s %6s  %s\n", "id", "name", "status", "steps",
                "val loss", "train loss", "max logit", "spikes", "created");
    for (const auto& r : runs) {
        auto num = [](const std::optional<double>& v, const char* f) {
            char b[32] = "-";
            if (v) std::snprintf(b, sizeof b, f, *v);
            return std::string(b);
        };
        std::printf("%-5lld %-24s %-12s %8lld %10s %10s %12s %6lld  %s\n",
                    static_cast<long long>(r.id), r.name.c_str(), toString(r.status),
                    static_cast<long long>(r.stepsDone), num(r.finalValLoss, "%.4f").c_str(),
                    num(r.finalLoss, "%.4f").c_str(), num(r.maxLogitRaw, "%.4g").c_str(),
                    static_cast<long long>(r.spikes), r.createdAt.c_str());
    }
}

int cmdRun(const Options& o) {
    // A preset file, or inline JSON such as '{}' (all defaults) when no such file exists.
    const bool inlineJson =
        !o.presetPath.empty() && o.presetPath.front() == '{' && !std::ifstream(o.presetPath).good();
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
    RunSession session(config, SessionOptions{o.dbPath, o.name, {}});
    return trainSession(session, o.dbPath);
}

int cmdResume(const Options& o) {
    int64_t id = 0;
    {
        RunStore store(o.dbPath);
        store.markInterruptedRuns();
        id = store.findRun(o.runRef).id;
    }
    auto session = RunSession::resume(o.dbPath, id);
    return trainSession(*session, o.dbPath);
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

int cmdStored(const Options& o, const CLI::App& list, const CLI::App& show) {
    RunStore store(o.dbPath);
    store.markInterruptedRuns();
    if (list) {
        const auto runs = store.listRuns();
        if (!o.asJson) {
            printRunTable(runs);
            return 0;
        }
        auto arr = nlohmann::json::array();
        for (const auto& r : runs) arr.push_back(runSummaryJson(store, r.id));
        std::cout << arr.dump(2) << "\n";
        return 0;
    }
    const int64_t id = store.findRun(o.runRef).id;
    if (show) {
        nlohmann::json j;
        j["summary"] = runSummaryJson(store, id);
        j["config"] = nlohmann::json::parse(store.run(id).configJson);
        if (o.asJson)
            std::cout << j.dump(2) << "\n";
        else
            std::cout << "summary:\n"
                      << j["summary"].dump(2) << "\nconfig:\n"
                      << j["config"].dump(2) << "\n";
        return 0;
    }
    const std::string text =
        o.format == "csv" ? runExportCsv(store, id) : runExportJson(store, id).dump(1) + "\n";
    if (o.output.empty()) {
        std::cout << text;
        return 0;
    }
    std::ofstream out(o.output, std::ios::binary);
    if (!out || !(out << text)) throw Error(ErrorCode::MissingFile, "cannot write " + o.output);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"qklab-cli: train small transformers and watch their attention logits"};
    app.set_version_flag("--version", appVersion() + " (LibTorch " + torchVersion() + ")");
    app.require_subcommand(1);
    Options o;
    app.add_option("--db", o.dbPath, "run database (default: " + defaultDatabasePath() + ")");

    auto* run = app.add_subcommand("run", "train a preset and record it");
    run->add_option(
           "preset", o.presetPath,
           "preset JSON file (e.g. experiments/default.json), or inline JSON ('{}' = all defaults)")
        ->required();
    run->add_option("--set", o.overrides, "override a config key: dotted.key=value (repeatable)");
    run->add_option("--name", o.name, "run name (unique in the database)");
    run->add_option("--db", o.dbPath, "run database");
    auto* resume = app.add_subcommand(
        "resume", "continue a stopped or interrupted run from its last checkpoint");
    resume->add_option("run", o.runRef, "run id or name")->required();
    resume->add_option("--db", o.dbPath, "run database");
    auto* list = app.add_subcommand("list", "list stored runs");
    list->add_flag("--json", o.asJson, "machine-readable output");
    list->add_option("--db", o.dbPath, "run database");
    auto* show = app.add_subcommand("show", "config and summary of one run");
    show->add_option("run", o.runRef, "run id or name")->required();
    show->add_flag("--json", o.asJson, "machine-readable output");
    show->add_option("--db", o.dbPath, "run database");
    auto* exportCmd = app.add_subcommand("export", "all recorded data of one run");
    exportCmd->add_option("run", o.runRef, "run id or name")->required();
    exportCmd->add_option("--format", o.format, "csv or json")
        ->check(CLI::IsMember({"csv", "json"}));
    exportCmd->add_option("--output,-o", o.output, "file to write (default: standard output)");
    exportCmd->add_option("--db", o.dbPath, "run database");
    auto* blas = app.add_subcommand(
        "check-blas", "the BLAS in use, its matmul speed (warns when slow), and the CUDA backend");
    auto* keys =
        app.add_subcommand("keys", "every config key and event kind with its default and meaning");
    keys->add_flag("--markdown", o.markdown, "docs/CONFIG.md");

    CLI11_PARSE(app, argc, argv);
    if (o.dbPath.empty()) o.dbPath = defaultDatabasePath();
    try {
        if (*run) return cmdRun(o);
        if (*resume) return cmdResume(o);
        if (*blas) return cmdCheckBlas();
        if (*keys) {
            std::cout << (o.markdown ? configReferenceMarkdown() : configKeysText());
            return 0;
        }
        return cmdStored(o, *list, *show);
    } catch (const Error& e) {
        std::cerr << "qklab-cli: " << e.what() << "\n";
        return e.code() == ErrorCode::Internal || e.code() == ErrorCode::Database ? 1 : 2;
    } catch (const std::exception& e) {
        std::cerr << "qklab-cli: " << e.what() << "\n";
        return 1;
    }
}
