// sweep_slurm.cpp — writing (and submitting) a sweep as a Slurm job array.
#include "sweep_slurm.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "qklab/error.h"
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

}  // namespace

std::string slurmScriptText(const SweepOptions& o, const std::string& sweepName,
                            const std::string& outDir, const std::string& cliPath, size_t points) {
    std::string s = "#!/bin/bash\n# qklab sweep '" + sweepName + "': " + std::to_string(points) +
                    " points, one array task each (written by qklab-cli sweep --slurm).\n";
    s += "#SBATCH --job-name=qklab-" + sweepName.substr(0, 40) + "\n";
    s += "#SBATCH --array=0-" + std::to_string(points - 1) +
         (o.maxParallel > 0 ? "%" + std::to_string(o.maxParallel) : "") + "\n";
    s += "#SBATCH --output=" + outDir + "/logs/point-%a.out\n";
    s += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=" + std::to_string(o.threadsPerRun) + "\n";
    if (!o.partition.empty()) s += "#SBATCH --partition=" + o.partition + "\n";
    if (!o.time.empty()) s += "#SBATCH --time=" + o.time + "\n";
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
        nlohmann::json config = configToJson(p.config);
        config["why"] = "sweep " + d.name + ", point " + std::to_string(p.index) + ": " +
                        coordsText(p.coords);
        writeFile(dir / "configs" / ("point-" + std::to_string(p.index) + ".json"),
                  config.dump(2) + "\n");
    }
    writeFile(dir / "sweep.json", sweepToJson(d).dump(2) + "\n");
    const std::string script = slurmScriptText(o, d.name, dir.string(), cliExecutable(),
                                               points.size());
    writeFile(dir / "sweep.sbatch", script);
    fs::permissions(dir / "sweep.sbatch", fs::perms::owner_exec, fs::perm_options::add);
    std::cerr << "wrote " << points.size() << " points of sweep '" << d.name << "' to "
              << dir.string() << " (sweep.sbatch, sweep.json, configs/)\n";
    if (!o.submit) {
        std::cerr << "submit: sbatch " << quoted((dir / "sweep.sbatch").string())
                  << "\nthen: qklab-cli merge " << quoted(dir.string()) << "/shards/*.db --into FILE.db\n";
        return 0;
    }
    const std::string cmd = "sbatch --parsable " + quoted((dir / "sweep.sbatch").string());
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) throw Error(ErrorCode::Io, "cannot run sbatch");
    char buf[128] = {};
    const bool got = std::fgets(buf, sizeof buf, pipe) != nullptr;
    const int rc = pclose(pipe);
    if (rc != 0 || !got)
        throw Error(ErrorCode::Io, "sbatch failed (exit " + std::to_string(rc) +
                                       "); the job files are in " + dir.string());
    std::string job(buf);
    while (!job.empty() && (job.back() == '\n' || job.back() == '\r')) job.pop_back();
    std::cerr << "submitted job array " << job << "\n";
    std::cout << job << "\n";
    return 0;
}

}  // namespace qklab::cli
