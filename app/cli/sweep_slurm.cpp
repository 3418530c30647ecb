// sweep_slurm.cpp — writing (and submitting) a sweep as a Slurm job array.
#include "sweep_slurm.h"

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "qklab/error.h"
#include "qklab/resources.h"
#include "qklab/run_config.h"
#include "qklab/run_store.h"
#include "qklab/sweep.h"

namespace fs = std::filesystem;

namespace qklab::cli {

namespace {

// Single quotes for the shell: a path with spaces or quotes stays one word.
std::string quoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

void writeFile(const fs::path& path, const std::string& text) {
    const fs::path tmp = path.string() + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out || !(out << text) || !out.flush())
            throw Error(ErrorCode::Io, "cannot write " + path.string());
    }
    fs::rename(tmp, path);
}

std::string cliExecutable() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("qklab-cli") : self.string();
}

// An #SBATCH value: Slurm's own tokenizer splits at blanks and reads quotes, so a value with a
// blank goes in double quotes (a double quote itself cannot be written there: refused). In
// file names `%` starts a Slurm pattern; a literal one is `%%`.
std::string sbatchValue(const std::string& v, const char* what, bool fileName = false) {
    if (v.find('"') != std::string::npos || v.find('\n') != std::string::npos)
        throw Error(ErrorCode::InvalidRequest,
                    std::string(what) + " cannot hold a double quote or a newline for Slurm: " + v);
    std::string out;
    for (char c : v) out += fileName && c == '%' ? std::string("%%") : std::string(1, c);
    return "\"" + out + "\"";
}

// Memory per task: the largest point's estimate (qklab/resources.h) with room for LibTorch's own
// libraries, so that a cluster that schedules by memory can pack the tasks.
int64_t taskMemoryMiB(const std::vector<SweepPoint>& points) {
    double need = 0;
    for (const SweepPoint& p : points) need = std::max(need, estimateMemory(p.config).total);
    return static_cast<int64_t>(std::ceil(need * 1.25 / (1024.0 * 1024.0))) + 1024;
}

}  // namespace

std::string slurmScriptText(const SweepOptions& o, const std::string& sweepName,
                            const std::string& outDir, const std::string& cliPath, size_t points,
                            int64_t memoryMiB) {
    std::string s = "#!/bin/bash\n# qklab sweep '" + sweepName + "': " + std::to_string(points) +
                    " points, one array task each (written by qklab-cli sweep --slurm).\n";
    s += "#SBATCH --job-name=" + sbatchValue("qklab-" + sweepName.substr(0, 40), "--name") + "\n";
    s += "#SBATCH --array=0-" + std::to_string(points - 1) +
         (o.maxParallel > 0 ? "%" + std::to_string(o.maxParallel) : "") + "\n";
    // %a the task, %A the job: a resubmission into the same folder keeps the older logs.
    std::string logs = sbatchValue(outDir, "--slurm", true);
    logs.insert(logs.size() - 1, "/logs/point-%a.%A.out");
    s += "#SBATCH --output=" + logs + "\n";
    s += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=" + std::to_string(o.threadsPerRun) + "\n";
    if (memoryMiB > 0) s += "#SBATCH --mem=" + std::to_string(memoryMiB) + "M\n";
    if (!o.partition.empty())
        s += "#SBATCH --partition=" + sbatchValue(o.partition, "--partition") + "\n";
    if (!o.time.empty()) s += "#SBATCH --time=" + sbatchValue(o.time, "--time") + "\n";
    if (o.gpusPerTask > 0) s += "#SBATCH --gpus-per-task=" + std::to_string(o.gpusPerTask) + "\n";
    s += "set -euo pipefail\n";
    s += "# Each task writes its own shard: no SQLite file is shared across nodes.\n";
    s += "exec " + quoted(cliPath) + " sweep-point --definition " + quoted(outDir + "/sweep.json") +
         " --point \"$SLURM_ARRAY_TASK_ID\" --threads " + std::to_string(o.threadsPerRun) +
         " --db " + quoted(outDir + "/shards") + "\"/point-$SLURM_ARRAY_TASK_ID.db\"\n";
    return s;
}

int writeSlurmJob(const SweepOptions& o) {
    if (!o.resume.empty())
        throw Error(ErrorCode::InvalidRequest, "--slurm writes a new sweep; it takes no --resume");
    if (o.file.empty()) throw Error(ErrorCode::InvalidRequest, "--slurm needs a sweep file");
    if (o.maxParallel < 0 || o.gpusPerTask < 0)
        throw Error(ErrorCode::InvalidRequest, "--max-parallel and --gpus-per-task are >= 0");
    SweepDefinition d = loadSweepFile(o.file);
    if (!o.name.empty()) d.name = o.name;
    d.uuid = newUuid();
    const std::vector<SweepPoint> points = expandSweep(d);  // nothing is written for a bad file
    const fs::path dir = fs::absolute(o.slurmDir);
    if (fs::exists(dir / "sweep.json"))
        throw Error(ErrorCode::InvalidRequest,
                    (dir / "sweep.json").string() + " exists: choose an empty folder");
    for (const char* sub : {"configs", "shards", "logs"}) fs::create_directories(dir / sub);
    for (const SweepPoint& p : points) {
        RunConfig ran = p.config;
        ran.run.threads = o.threadsPerRun;  // what the task passes with --threads
        nlohmann::json config = configToJson(ran);
        config["why"] =
            "sweep " + d.name + ", point " + std::to_string(p.index) + ": " + coordsText(p.coords);
        writeFile(dir / "configs" / ("point-" + std::to_string(p.index) + ".json"),
                  config.dump(2) + "\n");
    }
    writeFile(dir / "sweep.json", sweepToJson(d).dump(2) + "\n");
    const std::string script = slurmScriptText(o, d.name, dir.string(), cliExecutable(),
                                               points.size(), taskMemoryMiB(points));
    writeFile(dir / "sweep.sbatch", script);
    fs::permissions(dir / "sweep.sbatch", fs::perms::owner_exec, fs::perm_options::add);
    std::cerr << "wrote " << points.size() << " points of sweep '" << d.name << "' to "
              << dir.string() << " (sweep.sbatch, sweep.json, configs/)\n";
    const std::string mergeHint = "when it is done: qklab-cli merge " + quoted(dir.string()) +
                                  "/shards/*.db --into FILE.db\n";
    if (!o.submit) {
        std::cerr << "submit: sbatch " << quoted((dir / "sweep.sbatch").string()) << "\n"
                  << mergeHint;
        return 0;
    }
    const std::string cmd = "sbatch --parsable " + quoted((dir / "sweep.sbatch").string());
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) throw Error(ErrorCode::Io, "cannot run sbatch");
    char buf[128] = {};
    const bool got = std::fgets(buf, sizeof buf, pipe) != nullptr;
    const int status = pclose(pipe);
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (rc != 0 || !got)
        throw Error(ErrorCode::Io, "sbatch failed (exit " + std::to_string(rc) +
                                       "); the job files are in " + dir.string());
    std::string job(buf);
    while (!job.empty() && (job.back() == '\n' || job.back() == '\r')) job.pop_back();
    std::cerr << "submitted job array " << job << "\n" << mergeHint;
    std::cout << job << "\n";
    return 0;
}

}  // namespace qklab::cli
