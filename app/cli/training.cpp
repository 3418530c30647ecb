// training.cpp — see training.h.
#include "training.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <iostream>

#include "progress_bar.h"
#include "qklab/config/resources.h"
#include "qklab/engine/environment.h"
#include "qklab/engine/trainer.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

namespace qklab::cli {
namespace {

std::atomic<Trainer*> g_activeTrainer{nullptr};

void onInterrupt(int) {
    if (Trainer* t = g_activeTrainer.load()) t->requestStop();  // atomic flag: signal-safe
}

class CliObserver : public TrainingObserver {
  public:
    explicit CliObserver(ProgressBar& bar) : m_bar(bar) {}
    void onStep(const StepMetrics& m) override {
        m_bar.update(m.step, m.loss, m.tokensPerSec, m_maxLogit);
    }
    void onProbes(int64_t, const std::vector<ProbeStats>& stats,
                  const std::vector<LogitHistogram>&) override {
        m_maxLogit = 0;
        for (const auto& s : stats)
            if (s.head == -1) m_maxLogit = std::max(m_maxLogit, s.logitMaxRaw);
    }
    // As it is made: the warning is worth most while there is still time to act on it.
    void onForecast(const Forecast& f) override {
        m_bar.note("forecast at step " + std::to_string(f.step) + ": " + printableText(f.text));
    }
    // What the skip-step policy did, as it does it (optim.skip_step).
    void onEvent(const EventRecord& e) override {
        if (e.source != nameOf(EventSource::Policy)) return;
        std::string what = eventLabel(e.kind, e.paramsJson);
        try {
            const Event ev = eventFromRecord(e.step, e.kind, e.paramsJson, e.source);
            if (ev.kind == EventKind::SkipStep) what = "update skipped: " + ev.args.why;
        } catch (const Error&) {
        }
        m_bar.note("step " + std::to_string(e.step) + ", skip-step policy: " + printableText(what));
    }

  private:
    ProgressBar& m_bar;
    double m_maxLogit = 0;
};

int exitCodeFor(RunStatus s) {
    switch (s) {
        case RunStatus::Finished:
        case RunStatus::Diverged:
            return 0;
        case RunStatus::Stopped:
            return 3;
        case RunStatus::Failed:
        case RunStatus::Interrupted:
        case RunStatus::Running:
        case RunStatus::Unknown:
            return 1;
    }
    return 1;
}

}  // namespace

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
    if (const auto tokens = session.trainer().tokenizerDescription(); !tokens.empty())
        std::cerr << "tokens: " << tokens << "\n";
    ProgressBar bar(session.trainer().startStep(), cfg.schedule.steps, isatty(STDERR_FILENO));
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
    // Graphs were asked for: say how many steps they carried (0 when every capture failed).
    if (session.trainer().cudaGraphs())
        std::cerr << "; " << session.trainer().replayedSteps()
                  << " steps ran as CUDA graph replays";
    std::cerr << "\n";
    std::cout << session.runId() << "\n";  // scripts read the run id from stdout
    return exitCodeFor(outcome.status);
}

}  // namespace qklab::cli
