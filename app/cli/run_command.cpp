// run_command.cpp — `qklab-cli run`: train a preset and record it.
#include "run_command.h"

#include <filesystem>
#include <iostream>

#include "qklab/config/run_config.h"
#include "qklab/engine/run_session.h"
#include "qklab/util/error.h"
#include "qklab/util/input_file.h"
#include "training.h"

namespace qklab::cli {
namespace {

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

}  // namespace

void addRunOptions(CLI::App& cmd, RunArgs& args, Database& db) {
    cmd.add_option("preset", args.preset,
                   "preset JSON file (e.g. experiments/default.json; a regular file of at most " +
                       limitText(kPresetFile.maxBytes) + "), or inline JSON ('{}' = all defaults)")
        ->required();
    cmd.add_option("--set", args.overrides, "override a config key: dotted.key=value (repeatable)");
    cmd.add_option("--name", args.name, "run name (unique in the database)");
    db.addOption(cmd, args.dbPath);
}

int cmdRun(const RunArgs& args) {
    // A preset file, or inline JSON such as '{}' (all defaults) when no such file exists. Only
    // a stat: opening a FIFO to see whether it is there would block.
    std::error_code ec;
    const bool inlineJson =
        !args.preset.empty() && args.preset.front() == '{' &&
        !std::filesystem::exists(std::filesystem::symlink_status(args.preset, ec));
    RunConfig config = inlineJson ? configFromJsonText(args.preset, "inline preset", false)
                                  : loadPreset(args.preset, /*checkValues=*/false);
    for (const auto& assignment : args.overrides) applyOverride(config, assignment);
    try {
        validate(config);
    } catch (const Error& e) {
        throw Error(
            e.code(),
            args.preset + (args.overrides.empty() ? ": " : " with --set overrides: ") + e.what());
    }
    noteEmptyDatabaseFile(args.dbPath);
    RunSession session(config, SessionOptions{args.dbPath, args.name, {}});
    return trainSession(session, args.dbPath);
}

}  // namespace qklab::cli
