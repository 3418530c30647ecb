// checkpoint_paths.cpp — where a database's checkpoint files live and how a stored path is read.
//
// Every checkpoint file of the database D lives in D.checkpoints/run-<id>/ and the checkpoints
// table stores it relative to D.checkpoints ("run-7/step-621.pt"), so the database and its
// folder can be read from any working directory and moved together. Rows written before that
// hold the path the trainer was given (cwd-relative or absolute); they are still read, but a
// stored path of either form is only ever used when it resolves (symlinks followed, ".."
// folded) to a file directly inside the run's own folder: a path from someone else's file
// must never make qklab open or delete a file elsewhere.
#include "checkpoint_paths.h"

#include <filesystem>
#include <optional>

#include "qklab/store/run_store.h"
#include "qklab/util/text_util.h"

namespace qklab {

namespace fs = std::filesystem;

namespace {

std::string runFolderName(int64_t runId) {
    return "run-" + std::to_string(runId);
}

// The canonical run folder, or nothing when it cannot be named (":memory:").
std::optional<fs::path> canonicalRunFolder(const std::string& dbPath, int64_t runId) {
    const std::string folder = checkpointFolder(dbPath);
    if (folder.empty()) return std::nullopt;
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(fs::absolute(folder, ec), ec);
    if (ec) return std::nullopt;
    return canonical / runFolderName(runId);
}

// `candidate` when it names a file directly inside runFolder once symlinks and ".." are
// resolved (the file itself need not exist).
std::optional<std::string> insideRunFolder(const fs::path& candidate, const fs::path& runFolder) {
    std::error_code ec;
    const fs::path resolved = fs::weakly_canonical(fs::absolute(candidate, ec), ec);
    if (ec || resolved.parent_path() != runFolder) return std::nullopt;
    const std::string name = resolved.filename().string();
    if (name.empty() || name == "." || name == "..") return std::nullopt;
    return resolved.string();
}

// The places an older row's path may mean: the path itself (absolute, or relative to the
// working directory of the process that reads it), and the part after "<db name>.checkpoints"
// taken relative to this database's folder (the row written from another directory, or the
// database and its folder moved together, e.g. shards copied off a cluster).
std::vector<fs::path> legacyCandidates(const std::string& dbPath, const fs::path& stored) {
    std::vector<fs::path> out{stored};
    const std::string marker = fs::path(dbPath).filename().string() + ".checkpoints";
    fs::path rest;
    bool found = false;
    for (const auto& part : stored) {
        if (part == marker) {
            rest.clear();
            found = true;
        } else if (found) {
            rest /= part;
        }
    }
    if (found && !rest.empty()) out.push_back(fs::path(checkpointFolder(dbPath)) / rest);
    return out;
}

}  // namespace

std::string checkpointFolder(const std::string& dbPath) {
    if (dbPath.empty() || dbPath == ":memory:") return {};
    return dbPath + ".checkpoints";
}

std::string storedCheckpointPath(const std::string& dbPath, int64_t runId,
                                 const std::string& file) {
    const std::string folder = checkpointFolder(dbPath);
    if (folder.empty() || file.empty()) return file;
    std::error_code ec;
    const fs::path base = fs::absolute(folder, ec).lexically_normal();
    const fs::path rel = fs::absolute(file, ec).lexically_normal().lexically_relative(base);
    if (ec || std::distance(rel.begin(), rel.end()) != 2 ||
        rel.begin()->string() != runFolderName(runId))
        return file;  // not in the run's folder: kept as given, and refused when read back
    return rel.generic_string();
}

CheckpointInfo resolveCheckpoint(const std::string& dbPath, int64_t runId, int64_t step,
                                 const std::string& stored) {
    CheckpointInfo out;
    out.step = step;
    const auto runFolder = canonicalRunFolder(dbPath, runId);
    const fs::path path(stored);
    // The current form: exactly "run-<id>/<file>", relative to the database's folder.
    const bool relativeForm = !stored.empty() && path.is_relative() &&
                              std::distance(path.begin(), path.end()) == 2 &&
                              path.begin()->string() == runFolderName(runId);
    if (runFolder && !stored.empty() && stored.find('\0') == std::string::npos) {
        const std::vector<fs::path> candidates =
            relativeForm ? std::vector<fs::path>{fs::path(checkpointFolder(dbPath)) / path}
                         : legacyCandidates(dbPath, path);
        for (const fs::path& c : candidates)
            if (auto inside = insideRunFolder(c, *runFolder)) {
                out.path = *inside;
                return out;
            }
    }
    out.refused = "checkpoint path '" + clipped(printableText(stored), 120) + "' of run " +
                  std::to_string(runId) + " is not a file in " +
                  (runFolder ? runFolder->string() : std::string("a checkpoint folder")) +
                  " (qklab opens and deletes checkpoint files only in the database's own folder)";
    return out;
}

}  // namespace qklab
