// sweep_slurm.cpp — writing (and submitting) a sweep as a Slurm job array.
//
// The script is run by bash and read by sbatch, so every value in it is hostile input made
// harmless as a whole: the partition and the time limit must match Slurm's own grammar, the
// job name is reduced to safe characters, paths are quoted (single quotes for bash, double
// quotes for Slurm's #SBATCH tokenizer) and the sweep's name follows the run-name rules. All of
// it is checked and the whole folder composed before the first byte is written; the folder is
// then written under a temporary name and renamed into place, so a refused value or a failed
// write leaves nothing behind that a corrected retry would trip over.
#include "sweep_slurm.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "new_sweep.h"
#include "qklab/config/resources.h"
#include "qklab/config/run_config.h"
#include "qklab/config/sweep.h"
#include "qklab/store/run_store.h"
#include "qklab/util/error.h"
#include "qklab/util/input_file.h"

namespace fs = std::filesystem;

namespace qklab::cli {

namespace {

[[noreturn]] void refuse(const std::string& what, const std::string& value,
                         const std::string& rule) {
    throw Error(ErrorCode::InvalidRequest, what + " = " + quotedValue(value) + ": " + rule);
}

bool hasControl(const std::string& s) {
    return std::any_of(s.begin(), s.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// A path in an #SBATCH line, in double quotes. Slurm's tokenizer (sbatch's _get_argument)
// reads a backslash as an escape and a double quote as the end of the value, inside quotes
// too, and a line ends at a newline: such paths are refused. In a file name pattern `%`
// starts a replacement (a literal one is `%%`) and a backslash switches them all off.
std::string sbatchPath(const std::string& path, const char* what) {
    if (hasControl(path) || path.find_first_of("\"\\") != std::string::npos)
        refuse(what, path,
               "Slurm cannot be given a path with a double quote, a backslash or a control "
               "character: choose another folder");
    std::string out;
    for (char c : path) out += c == '%' ? std::string("%%") : std::string(1, c);
    return out;
}

// --partition: one or more partition names, comma-separated ("gpu", "gpu,cpu").
void checkPartition(const std::string& p) {
    const bool ok = !p.empty() && p.size() <= 200 && std::all_of(p.begin(), p.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
               c == ',';
    });
    if (!ok)
        refuse("--partition", p,
               "expected partition names of letters, digits, '_', '-' and '.', comma-separated");
}

// Digits only, 1 to 9 of them (no overflow in Slurm's parser).
bool isNumber(const std::string& s) {
    return !s.empty() && s.size() <= 9 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// --time: Slurm's formats M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, or UNLIMITED / INFINITE. The
// limit in seconds, or nullopt for no limit; anything else is refused.
std::optional<int64_t> timeLimitSeconds(const std::string& t) {
    if (t == "UNLIMITED" || t == "INFINITE" || t == "unlimited" || t == "infinite")
        return std::nullopt;
    const size_t dash = t.find('-');
    const std::string rest = dash == std::string::npos ? t : t.substr(dash + 1);
    bool ok = dash == std::string::npos || isNumber(t.substr(0, dash));
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
        const size_t colon = rest.find(':', start);
        parts.push_back(rest.substr(start, colon - start));
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    ok = ok && parts.size() <= 3 && std::all_of(parts.begin(), parts.end(), isNumber);
    if (!ok)
        refuse("--time", t,
               "expected a Slurm time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, "
               "D-HH:MM:SS or UNLIMITED");
    std::vector<int64_t> n;
    for (const auto& part : parts) n.push_back(std::stoll(part));  // <= 9 digits each
    if (dash != std::string::npos) {                               // D-H[:M[:S]]
        n.resize(3, 0);
        return ((std::stoll(t.substr(0, dash)) * 24 + n[0]) * 60 + n[1]) * 60 + n[2];
    }
    if (n.size() == 1) return n[0] * 60;         // M
    if (n.size() == 2) return n[0] * 60 + n[1];  // M:S
    return (n[0] * 60 + n[1]) * 60 + n[2];       // H:M:S
}

// The #SBATCH --time of a task that runs up to `perTask` points: the per-point limit as the
// user wrote it, or that limit times the points as D-HH:MM:SS (a task runs them in a row).
std::string taskTimeLimit(const std::string& perPoint, size_t perTask) {
    const auto seconds = timeLimitSeconds(perPoint);
    if (perTask == 1 || !seconds) return perPoint;
    const int64_t total = *seconds * static_cast<int64_t>(perTask);  // both bounded: no overflow
    char text[48];
    std::snprintf(text, sizeof text, "%lld-%02lld:%02lld:%02lld",
                  static_cast<long long>(total / 86400), static_cast<long long>(total / 3600 % 24),
                  static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
    return text;
}

// What squeue shows: the sweep's name cut to 40 bytes and reduced to letters, digits and
// "._+-" (the sweep keeps its real name in sweep.json).
std::string jobName(const std::string& sweepName) {
    std::string out = "qklab-";
    for (char c : sweepName.substr(0, 40))
        out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' ||
                       c == '-'
                   ? c
                   : '_';
    return out;
}

std::string cliExecutable() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("qklab-cli") : self.string();
}

// Memory per task: the largest point's estimate (qklab/config/resources.h) with room for LibTorch's
// own libraries, so that a cluster that schedules by memory can pack the tasks.
int64_t taskMemoryMiB(const std::vector<SweepPoint>& points) {
    double need = 0;
    for (const SweepPoint& p : points) need = std::max(need, estimateMemory(p.config).total);
    return static_cast<int64_t>(std::ceil(need * 1.25 / (1024.0 * 1024.0))) + 1024;
}

}  // namespace

std::string slurmScriptText(const SweepArgs& o, const std::string& sweepName,
                            const std::string& outDir, const std::string& cliPath, size_t points,
                            int64_t memoryMiB) {
    checkSweepName(sweepName);  // no control character: the comment line stays one line
    if (points < 1 || points > kMaxSweepPoints)
        throw Error(ErrorCode::InvalidRequest, "a Slurm array of " + std::to_string(points) +
                                                   " tasks: expected 1 to " +
                                                   std::to_string(kMaxSweepPoints));
    if (!o.partition.empty()) checkPartition(o.partition);
    if (!o.time.empty()) timeLimitSeconds(o.time);  // refuses a malformed one
    if (o.threadsPerRun < 1 || o.gpusPerTask < 0 || o.maxParallel < 0 || memoryMiB < 0)
        throw Error(ErrorCode::InvalidRequest,
                    "--threads-per-run >= 1, --gpus-per-task >= 0, --max-parallel >= 0");
    if (o.pointsPerTask < 1 || static_cast<uint64_t>(o.pointsPerTask) > kMaxSweepPoints)
        refuse("--points-per-task", std::to_string(o.pointsPerTask),
               "expected 1 to " + std::to_string(kMaxSweepPoints));
    const size_t perTask = static_cast<size_t>(o.pointsPerTask);
    const size_t tasks = (points + perTask - 1) / perTask;
    const std::string logs = sbatchPath(outDir, "--slurm");
    std::string s =
        "#!/bin/bash\n# qklab sweep " + shellQuoted(sweepName) + ": " + std::to_string(points) +
        " points, " +
        (perTask == 1 ? "one array task each" : std::to_string(perTask) + " per array task") +
        " (written by qklab-cli sweep --slurm).\n";
    s += "#SBATCH --job-name=\"" + jobName(sweepName) + "\"\n";
    s += "#SBATCH --array=0-" + std::to_string(tasks - 1) +
         (o.maxParallel > 0 ? "%" + std::to_string(o.maxParallel) : "") + "\n";
    // %a the task, %A the job: a resubmission into the same folder keeps the older logs.
    s += "#SBATCH --output=\"" + logs + (perTask == 1 ? "/logs/point" : "/logs/task") +
         "-%a.%A.out\"\n";
    s += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=" + std::to_string(o.threadsPerRun) + "\n";
    if (memoryMiB > 0) s += "#SBATCH --mem=" + std::to_string(memoryMiB) + "M\n";
    if (!o.partition.empty()) s += "#SBATCH --partition=\"" + o.partition + "\"\n";
    if (!o.time.empty())
        s += "#SBATCH --time=\"" + taskTimeLimit(o.time, std::min(perTask, points)) + "\"\n";
    if (o.gpusPerTask > 0) s += "#SBATCH --gpus-per-task=" + std::to_string(o.gpusPerTask) + "\n";
    s += "set -euo pipefail\n";
    s += "# Each point writes its own shard: no SQLite file is shared across nodes.\n";
    // The task id enters shell arithmetic, which would evaluate an expression in it and wraps
    // past 2^63: digits only, at most 9 of them, and a task of this array, checked before
    // anything runs (sweep-point would create the shard of a point out of range).
    s += "task=${SLURM_ARRAY_TASK_ID-}\n";
    s += "[[ $task =~ ^[0-9]{1,9}$ ]] && ((10#$task < " + std::to_string(tasks) +
         ")) || { echo \"SLURM_ARRAY_TASK_ID is not a task of this array (0 to " +
         std::to_string(tasks - 1) + ")\" >&2; exit 2; }\n";
    const std::string runPoint =
        shellQuoted(cliPath) + " sweep-point --definition " + shellQuoted(outDir + "/sweep.json") +
        " --point \"$point\" --threads " + std::to_string(o.threadsPerRun) + " --db " +
        shellQuoted(outDir + "/shards") + "\"/point-$point.db\"";
    // One point per task: the task is the point. Several: a loop over the task's share; every
    // point of it runs even when one fails, and the task fails if any did.
    if (perTask == 1) return s + "point=$((10#$task))\nexec " + runPoint + "\n";
    s += "first=$((10#$task * " + std::to_string(perTask) + "))\nstatus=0\n";
    s += "for ((point = first; point < first + " + std::to_string(perTask) + " && point < " +
         std::to_string(points) + "; point++)); do\n";
    s += "    " + runPoint + " || status=$?\ndone\nexit $status\n";
    return s;
}

namespace {

void writeFile(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out || !(out << text) || !out.flush())
        throw Error(ErrorCode::Io, "cannot write " + path.string());
}

// The folder's files by relative path, composed in memory: nothing is written until all of
// them (and the script's every value) are known good.
std::map<std::string, std::string> jobFiles(const SweepArgs& o, const SweepDefinition& d,
                                            const std::vector<SweepPoint>& points,
                                            const fs::path& dir) {
    std::map<std::string, std::string> files;
    files["sweep.sbatch"] = slurmScriptText(o, d.name, dir.string(), cliExecutable(), points.size(),
                                            taskMemoryMiB(points));
    files["sweep.json"] = sweepToJson(d).dump(2) + "\n";
    for (const SweepPoint& p : points) {
        RunConfig ran = p.config;
        ran.run.threads = o.threadsPerRun;  // what the task passes with --threads
        nlohmann::json config = configToJson(ran);
        config["why"] =
            "sweep " + d.name + ", point " + std::to_string(p.index) + ": " + coordsText(p.coords);
        files["configs/point-" + std::to_string(p.index) + ".json"] = config.dump(2) + "\n";
    }
    return files;
}

// A new folder, or an empty one (rename() replaces an empty directory): never one that holds
// anything, least of all another sweep's files.
void checkTarget(const fs::path& dir) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(dir, ec);
    if (!fs::exists(st)) return;
    if (!fs::is_directory(st) || !fs::is_empty(dir, ec) || ec)
        throw Error(ErrorCode::InvalidRequest,
                    dir.string() +
                        (fs::exists(dir / "sweep.json") ? "/sweep.json exists" : " exists") +
                        ": --slurm writes a new folder (give a new or an empty one)");
}

// Writes the files into a temporary folder next to `dir` and renames it into place.
void writeFolder(const fs::path& dir, const std::map<std::string, std::string>& files) {
    fs::create_directories(dir.parent_path());
    std::string tmpl =
        (dir.parent_path() / ("." + dir.filename().string() + ".qklab-XXXXXX")).string();
    if (!mkdtemp(tmpl.data()))
        throw Error(ErrorCode::Io,
                    "cannot create a folder next to " + dir.string() + ": " + std::strerror(errno));
    const fs::path tmp = tmpl;
    try {
        for (const char* sub : {"configs", "shards", "logs"}) fs::create_directory(tmp / sub);
        for (const auto& [name, text] : files) writeFile(tmp / name, text);
        fs::permissions(tmp / "sweep.sbatch", fs::perms::owner_exec, fs::perm_options::add);
        // mkdtemp made it 0700; the folder gets the mode any new folder would have.
        const mode_t mask = umask(0);
        umask(mask);
        fs::permissions(tmp, static_cast<fs::perms>(0777 & ~mask));
        if (std::rename(tmp.c_str(), dir.c_str()) != 0)
            throw Error(
                errno == ENOTEMPTY || errno == EEXIST ? ErrorCode::InvalidRequest : ErrorCode::Io,
                "cannot write " + dir.string() + ": " + std::strerror(errno));
    } catch (...) {
        std::error_code ec;
        fs::remove_all(tmp, ec);
        throw;
    }
}

}  // namespace

int writeSlurmJob(const SweepArgs& o) {
    if (!o.resume.empty())
        throw Error(ErrorCode::InvalidRequest, "--slurm writes a new sweep; it takes no --resume");
    if (o.file.empty()) throw Error(ErrorCode::InvalidRequest, "--slurm needs a sweep file");
    if (o.maxParallel < 0 || o.gpusPerTask < 0)
        throw Error(ErrorCode::InvalidRequest, "--max-parallel and --gpus-per-task are >= 0");
    NewSweep n = newSweep(o);  // nothing is written for a bad file
    n.definition.uuid = newUuid();
    const fs::path dir = fs::absolute(o.slurmDir).lexically_normal();
    const fs::path folder = dir.has_filename() ? dir : dir.parent_path();  // "out/" is "out"
    const auto files = jobFiles(o, n.definition, n.points, folder);
    checkTarget(folder);
    writeFolder(folder, files);
    const std::string sbatch = (folder / "sweep.sbatch").string();
    std::cerr << "wrote " << n.points.size() << " points of sweep '" << n.definition.name << "' to "
              << folder.string() << " (sweep.sbatch, sweep.json, configs/)\n";
    const std::string mergeHint = "when it is done: qklab-cli merge " +
                                  shellQuoted(folder.string()) + "/shards/*.db --into FILE.db\n";
    if (!o.submit) {
        std::cerr << "submit: sbatch " << shellQuoted(sbatch) << "\n" << mergeHint;
        return 0;
    }
    const std::string cmd = "sbatch --parsable " + shellQuoted(sbatch);
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) throw Error(ErrorCode::Io, "cannot run sbatch");
    char buf[128] = {};
    const bool got = std::fgets(buf, sizeof buf, pipe) != nullptr;
    const int status = pclose(pipe);
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (rc != 0 || !got)
        throw Error(ErrorCode::Io, "sbatch failed (exit " + std::to_string(rc) +
                                       "); the job files are in " + folder.string());
    std::string job(buf);
    while (!job.empty() && (job.back() == '\n' || job.back() == '\r')) job.pop_back();
    std::cerr << "submitted job array " << job << "\n" << mergeHint;
    std::cout << job << "\n";
    return 0;
}

}  // namespace qklab::cli
