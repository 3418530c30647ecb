// sweep_command.cpp — `qklab-cli sweep`: running a sweep's grid on this machine, one worker
// process per point (`qklab-cli sweep-point`), at most N at a time, one progress line for the
// whole sweep; or, with --slurm, writing it as a Slurm job array (sweep_slurm.cpp).
//
// Why processes and not threads: a point that crashes (or runs out of memory) takes only its
// own process down, the sweep records it and goes on; and a worker is exactly the `run` a user
// would start by hand, with its own log.
#include "sweep_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "new_sweep.h"
#include "qklab/analysis/sweep_report.h"
#include "qklab/config/resources.h"
#include "qklab/config/sweep.h"
#include "qklab/store/run_store.h"
#include "qklab/util/error.h"
#include "qklab/util/input_file.h"
#include "sweep_slurm.h"

using nlohmann::json;

namespace qklab::cli {

namespace {

constexpr double kMaxWaitRunning = 86400;  // a day: beyond it, a typo

std::atomic<int> g_stopSignal{0};

void onSweepSignal(int sig) {
    g_stopSignal = sig;
}

std::string selfExecutable() {
    std::error_code ec;
    const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("qklab-cli") : p.string();
}

std::string logPath(const std::string& dbPath, const SweepInfo& s, int64_t point) {
    return dbPath + ".sweep-logs/" + std::to_string(s.id) + "/point-" + std::to_string(point) +
           ".log";
}

// A worker: `qklab-cli sweep-point`, its output in the point's log file. It dies with the
// sweep (PR_SET_PDEATHSIG), so a killed sweep leaves no orphan training on.
pid_t startWorker(const std::vector<std::string>& args, const std::string& log) {
    std::filesystem::create_directories(std::filesystem::path(log).parent_path());
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) throw Error(ErrorCode::Internal, "fork failed: " + std::string(strerror(errno)));
    if (pid > 0) return pid;
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(3);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
}

std::string lastLine(const std::string& path) {
    std::ifstream in(path);
    std::string line, last;
    while (std::getline(in, line))
        if (!line.empty() && line.find('\r') == std::string::npos) last = line;
    return last.substr(0, 200);
}

std::string duration(double seconds) {
    // lround of a value past long's range is undefined: an estimate beyond 32 years is "?".
    if (!std::isfinite(seconds) || seconds < 0 || seconds >= 1e9) return "?";
    const long s = std::lround(seconds);
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else
        std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
    return buf;
}

// Points still to run: no run yet, or the latest run stopped or was interrupted (the worker
// resumes it); failed ones only when asked. A point some other process is running is left.
std::vector<int64_t> pointsToRun(RunStore& store, const SweepInfo& s, bool retryFailed) {
    std::map<int64_t, RunStatus> latest;
    for (const RunInfo& r : store.sweepRuns(s.id))
        if (r.sweep) latest[r.sweep->point] = r.status;
    std::vector<int64_t> toRun;
    for (int64_t i = 0; i < s.points; ++i) {
        auto it = latest.find(i);
        if (it == latest.end() || it->second == RunStatus::Stopped ||
            it->second == RunStatus::Interrupted ||
            (retryFailed && it->second == RunStatus::Failed))
            toRun.push_back(i);
    }
    return toRun;
}

class SweepProgress {
  public:
    SweepProgress(const SweepInfo& s, std::vector<int64_t> toRun, std::map<int64_t, int64_t> steps)
        : m_sweep(s),
          m_toRun(std::move(toRun)),
          m_steps(std::move(steps)),
          m_tty(isatty(STDERR_FILENO)),
          m_start(std::chrono::steady_clock::now()) {}

    void refresh(RunStore& store, const std::map<pid_t, int64_t>& running, bool force) {
        const auto now = std::chrono::steady_clock::now();
        if (!force && now - m_last < std::chrono::milliseconds(m_tty ? 500 : 30000)) return;
        m_last = now;
        std::map<int64_t, RunInfo> latest;
        for (RunInfo& r : store.sweepRuns(m_sweep.id))
            if (r.sweep) latest[r.sweep->point] = std::move(r);
        int done = 0, diverged = 0, failed = 0;
        double stepsDone = 0, stepsTotal = 0;
        std::string active;
        std::set<int64_t> runningPoints;
        for (const auto& [pid, point] : running) runningPoints.insert(point);
        for (int64_t point : m_toRun) {
            stepsTotal += m_steps[point];
            auto it = latest.find(point);
            if (it == latest.end()) continue;
            const RunInfo& r = it->second;
            const bool ended = !runningPoints.count(point) &&
                               (r.status == RunStatus::Finished ||
                                r.status == RunStatus::Diverged || r.status == RunStatus::Failed);
            done += ended;
            diverged += ended && r.status == RunStatus::Diverged;
            failed += ended && r.status == RunStatus::Failed;
            stepsDone += ended ? m_steps[point] : std::min<double>(r.stepsDone, m_steps[point]);
            if (runningPoints.count(point))
                active += " p" + std::to_string(point) + " " + std::to_string(r.stepsDone) + "/" +
                          std::to_string(m_steps[point]);
        }
        const double elapsed = std::chrono::duration<double>(now - m_start).count();
        const double eta = stepsDone > 0 ? elapsed * (stepsTotal - stepsDone) / stepsDone : NAN;
        char head[160];
        std::snprintf(head, sizeof head, "sweep %s: %d/%zu done, %d diverged, %d failed, ETA %s",
                      printableText(m_sweep.name).c_str(), done, m_toRun.size(), diverged, failed,
                      duration(eta).c_str());
        std::string line = std::string(head) + (active.empty() ? "" : " | running:" + active);
        if (m_tty) {
            if (line.size() > 150) line = line.substr(0, 147) + "...";
            std::fprintf(stderr, "\r\033[K%s", line.c_str());
        } else {
            std::fprintf(stderr, "%s\n", line.c_str());
        }
        std::fflush(stderr);
    }
    void note(const std::string& text) {
        std::fprintf(stderr, "%s%s\n", m_tty ? "\r\033[K" : "", text.c_str());
    }
    void finish() {
        if (m_tty) std::fprintf(stderr, "\n");
    }
    double elapsed() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    }

  private:
    SweepInfo m_sweep;
    std::vector<int64_t> m_toRun;
    std::map<int64_t, int64_t> m_steps;
    bool m_tty;
    std::chrono::steady_clock::time_point m_start, m_last{};
};

// A worker that ended: a crash (a signal other than a stop request) marks its run failed, so
// that the sweep's table says what happened and where the log is.
void reapWorker(RunStore& store, const SweepInfo& s, int64_t point, int status,
                const std::string& dbPath, SweepProgress& progress) {
    const std::string log = logPath(dbPath, s, point);
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3)
        progress.note("point " + std::to_string(point) + " failed (exit " +
                      std::to_string(WEXITSTATUS(status)) + "): " + lastLine(log));
    if (!WIFSIGNALED(status)) return;
    const int sig = WTERMSIG(status);
    if (sig == SIGINT || sig == SIGTERM) return;
    const std::string why = "the worker process died of signal " + std::to_string(sig) + " (" +
                            strsignal(sig) + "); log: " + log;
    for (const RunInfo& r : store.sweepRuns(s.id))
        if (r.sweep && r.sweep->point == point &&
            (r.status == RunStatus::Running || r.status == RunStatus::Interrupted))
            store.markRunFailed(r.id, why);
    progress.note("point " + std::to_string(point) + ": " + why);
}

int defaultJobs(int threadsPerRun) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    return std::max(1, static_cast<int>(cores) / std::max(1, threadsPerRun));
}

// Runs the points in a pool of workers until all ended or a stop was requested.
bool runPool(RunStore& store, const SweepInfo& s, const std::vector<int64_t>& toRun,
             const SweepArgs& o, SweepProgress& progress) {
    const int jobs = o.jobs > 0 ? o.jobs : defaultJobs(o.threadsPerRun);
    const std::string self = selfExecutable();
    std::map<pid_t, int64_t> running;
    size_t next = 0;
    bool stopSent = false;
    while ((!g_stopSignal && next < toRun.size()) || !running.empty()) {
        if (g_stopSignal && !stopSent) {
            for (const auto& [pid, point] : running) kill(pid, SIGINT);  // each stops cleanly
            stopSent = true;
        }
        while (!g_stopSignal && next < toRun.size() && static_cast<int>(running.size()) < jobs) {
            const int64_t point = toRun[next++];
            running[startWorker(
                {self, "sweep-point", "--db", o.dbPath, "--sweep", std::to_string(s.id), "--point",
                 std::to_string(point), "--threads", std::to_string(o.threadsPerRun)},
                logPath(o.dbPath, s, point))] = point;
        }
        int status = 0;
        const pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0 && running.count(pid)) {
            const int64_t point = running[pid];
            running.erase(pid);
            reapWorker(store, s, point, status, o.dbPath, progress);
            progress.refresh(store, running, true);
            continue;
        }
        progress.refresh(store, running, false);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return !g_stopSignal;
}

std::map<int64_t, int64_t> stepsPerPoint(const SweepDefinition& d) {
    std::map<int64_t, int64_t> steps;
    for (const SweepPoint& p : expandSweep(d)) steps[p.index] = p.config.schedule.steps;
    return steps;
}

// A sweep whose pool ran out with points not run (another process still runs them, e.g. the
// workers of a killed sweep that did not stop in time) is "partial" and exits 1: never
// "finished" with exit 0 while points are missing.
int reportEnd(RunStore& store, const SweepInfo& s, bool completed, double seconds) {
    const SweepReport r = sweepReport(store, s.id);
    const int notRun = r.pending + r.running;
    const bool partial = completed && notRun > 0;
    store.setSweepStatus(s.id, !completed ? "stopped" : partial ? "partial" : "finished");
    std::fprintf(stderr,
                 "sweep %s (%lld) %s after %s: %d finished, %d diverged, %d failed, %d not run\n",
                 printableText(s.name).c_str(), static_cast<long long>(s.id),
                 !completed ? "stopped"
                 : partial  ? "partial"
                            : "done",
                 duration(seconds).c_str(), r.finished, r.diverged, r.failed, notRun);
    if (partial && r.running > 0)
        std::fprintf(stderr, "%d point%s still running in another process\n", r.running,
                     r.running == 1 ? " is" : "s are");
    if (!completed || partial)
        std::fprintf(stderr, "continue it with: qklab-cli sweep --resume %s --db %s\n",
                     shellQuoted(s.name).c_str(), shellQuoted(store.path()).c_str());
    else
        std::fprintf(stderr, "report: qklab-cli sweep-report %s --db %s\n",
                     shellQuoted(s.name).c_str(), shellQuoted(store.path()).c_str());
    std::printf("%lld\n", static_cast<long long>(s.id));  // scripts read the sweep id
    if (!completed) return 3;
    return partial || r.failed > 0 ? 1 : 0;
}

// The points of this sweep that another process still runs: a killed sweep's workers get
// SIGTERM and stop at their next step, writing a checkpoint. Skipping them would leave them
// out of this resume; waiting (bounded, and saying so) lets them be resumed instead.
std::vector<int64_t> runningPoints(RunStore& store, const SweepInfo& s) {
    std::vector<int64_t> points;
    for (const RunInfo& r : store.sweepRuns(s.id))  // a dead writer's run reads as interrupted
        if (r.sweep && r.status == RunStatus::Running) points.push_back(r.sweep->point);
    return points;
}

void waitForRunningPoints(RunStore& store, const SweepInfo& s, double seconds) {
    std::vector<int64_t> points = runningPoints(store, s);
    if (points.empty()) return;
    std::string list;
    for (int64_t p : points) list += " p" + std::to_string(p);
    std::fprintf(stderr,
                 "sweep %s: points%s are still running in another process (a stopped sweep's "
                 "workers end at their next step); waiting up to %.0f s for them\n",
                 s.name.c_str(), list.c_str(), seconds);
    const auto start = std::chrono::steady_clock::now();
    const auto until = start + std::chrono::duration<double>(seconds);
    while (!points.empty() && !g_stopSignal && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        points = runningPoints(store, s);
    }
    store.markInterruptedRuns();  // a worker that died without writing its end: resumable
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (points.empty())
        std::fprintf(stderr, "sweep %s: they ended after %.1f s\n", s.name.c_str(), waited);
    else if (!g_stopSignal)
        std::fprintf(stderr, "sweep %s: %zu point%s still running after %.0f s: left to it\n",
                     s.name.c_str(), points.size(), points.size() == 1 ? "" : "s", waited);
}

// A new sweep (validated before the store was opened), or a stored one to continue.
std::pair<SweepInfo, SweepDefinition> openSweep(RunStore& store, const SweepArgs& o,
                                                const SweepDefinition* fresh) {
    if (!fresh) {
        SweepInfo s = store.findSweep(o.resume);
        SweepDefinition d =
            parseStoredSweep(s.definitionJson, "sweep '" + printableText(s.name) + "'");
        d.name = s.name;
        store.claimSweep(s.id);
        return {store.sweep(s.id), d};
    }
    SweepDefinition d = *fresh;
    d.uuid = newUuid();
    SweepInfo s;
    s.uuid = d.uuid;
    s.name = d.name;
    s.definitionJson = sweepToJson(d).dump();
    s.points = static_cast<int64_t>(d.pointCount());
    s.id = store.addSweep(s);
    return {store.sweep(s.id), d};
}

}  // namespace

void addSweepOptions(CLI::App& cmd, SweepArgs& args, Database& db) {
    cmd.add_option("file", args.file,
                   "sweep JSON file (see experiments/sweeps/; a regular file of at most " +
                       limitText(kSweepFile.maxBytes) + ")");
    cmd.add_option("--resume", args.resume,
                   "continue a stored sweep (id or name): only missing, stopped or "
                   "interrupted points run");
    cmd.add_flag("--retry-failed", args.retryFailed, "with --resume: run failed points too");
    cmd.add_option("--wait-running", args.waitRunning,
                   "with --resume: seconds to wait for points another process still runs "
                   "(a killed sweep's workers stop at their next step; default 120)");
    cmd.add_option("--name", args.name, "the sweep's name (default: the file's stem)");
    cmd.add_option("--jobs,-j", args.jobs, "worker processes (default: cores / threads)");
    cmd.add_option("--threads-per-run", args.threadsPerRun,
                   "run.threads of each point (default 1)");
    cmd.add_option("--slurm", args.slurmDir,
                   "write the sweep as a Slurm job array into this folder instead");
    cmd.add_option("--partition", args.partition, "Slurm partition");
    cmd.add_option("--time", args.time,
                   "Slurm time limit per point (e.g. 00:30:00); a task of several points gets it "
                   "that many times");
    cmd.add_option("--gpus-per-task", args.gpusPerTask, "Slurm GPUs per point");
    cmd.add_option("--max-parallel", args.maxParallel,
                   "at most this many array tasks at once (--array=...%K)");
    cmd.add_option("--points-per-task", args.pointsPerTask,
                   "grid points each array task runs, one after another, each into its own "
                   "shard (default 1): fewer, longer jobs where a cluster's queue is the cost");
    cmd.add_flag("--submit", args.submit, "run sbatch on the written job");
    cmd.add_flag("--twins", args.twins,
                 "train every point twice from the same seed, with the sweep's optim.skip_step "
                 "policy and without it (an axis optim.skip_step = [off, policy]); "
                 "forecast-report then judges the policy against its twins");
    db.addOption(cmd, args.dbPath);
}

int cmdSweep(const SweepArgs& o) {
    if (o.threadsPerRun < 1)
        throw Error(ErrorCode::InvalidRequest, "--threads-per-run: expected 1 or more, got " +
                                                   std::to_string(o.threadsPerRun));
    if (o.jobs < 0)
        throw Error(ErrorCode::InvalidRequest,
                    "--jobs: expected 0 (auto) or more, got " + std::to_string(o.jobs));
    if (o.pointsPerTask != 1 && o.slurmDir.empty())
        throw Error(ErrorCode::InvalidRequest,
                    "--points-per-task is for --slurm (here, each of the --jobs workers takes "
                    "the next point)");
    if (!o.slurmDir.empty()) return writeSlurmJob(o);
    if (o.file.empty() == o.resume.empty())
        throw Error(ErrorCode::InvalidRequest, "give a sweep file or --resume SWEEP (not both)");
    if (!o.resume.empty() && !o.name.empty())
        throw Error(ErrorCode::InvalidRequest, "--name applies to a new sweep, not to --resume");
    if (!o.resume.empty() && o.twins)
        throw Error(ErrorCode::InvalidRequest,
                    "--twins applies to a new sweep, not to --resume (a stored sweep keeps its "
                    "twins axis)");
    if (!(o.waitRunning >= 0 && o.waitRunning <= kMaxWaitRunning))
        throw Error(ErrorCode::InvalidRequest,
                    "--wait-running: expected 0 to " + std::to_string(int(kMaxWaitRunning)) +
                        " seconds, got " + std::to_string(o.waitRunning));
    // Validate the file before the database is even opened: bad input stores nothing.
    std::optional<NewSweep> fresh;
    if (!o.file.empty()) fresh = newSweep(o);
    RunStore store(o.dbPath);
    store.markInterruptedRuns();
    auto [sweep, definition] = openSweep(store, o, fresh ? &fresh->definition : nullptr);
    std::signal(SIGINT, onSweepSignal);
    std::signal(SIGTERM, onSweepSignal);
    waitForRunningPoints(store, sweep, o.waitRunning);
    const std::vector<int64_t> toRun = pointsToRun(store, sweep, o.retryFailed);
    std::fprintf(stderr,
                 "sweep %s (%lld) in %s: %lld points, %zu to run, %d worker%s x %d thread%s\n",
                 printableText(sweep.name).c_str(), static_cast<long long>(sweep.id),
                 o.dbPath.c_str(), static_cast<long long>(sweep.points), toRun.size(),
                 o.jobs > 0 ? o.jobs : defaultJobs(o.threadsPerRun),
                 (o.jobs > 0 ? o.jobs : defaultJobs(o.threadsPerRun)) == 1 ? "" : "s",
                 o.threadsPerRun, o.threadsPerRun == 1 ? "" : "s");
    SweepProgress progress(sweep, toRun, stepsPerPoint(definition));
    const bool completed = !g_stopSignal && runPool(store, sweep, toRun, o, progress);
    progress.finish();
    return reportEnd(store, sweep, completed, progress.elapsed());
}

}  // namespace qklab::cli
