// lesson_command.cpp — `qklab-cli lesson`: checks lesson files as the app plays them (the same
// checks, in core): exit 2 with the step and field of the first error; --record trains their
// runs into a database for replay in class.
#include "lesson_command.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "qklab/analysis/lesson.h"
#include "qklab/config/events.h"
#include "qklab/config/names.h"
#include "qklab/config/run_config.h"
#include "qklab/engine/run_session.h"
#include "qklab/store/run_store.h"
#include "qklab/util/error.h"
#include "qklab/util/input_file.h"
#include "training.h"

namespace qklab::cli {
namespace {

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

// --record: train them into the database, each under its step's name (numbered when a
// rehearsal already holds it), so that the app offers "Replay the recorded run instead".
int recordLesson(const Lesson& lesson, const std::string& origin, const LessonPresetLookup& presets,
                 const std::string& dbPath) {
    for (LessonRun& run : lessonRuns(lesson, origin, presets)) {
        std::vector<std::string> names;
        {
            RunStore store(dbPath);
            for (const RunInfo& r : store.listRuns()) names.push_back(r.name);
        }
        const std::string name = numberedName(run.name, names);
        std::cout << "recording " << printableText(quotedValue(name, 120)) << " into "
                  << printableText(dbPath) << "\n";
        RunSession session(run.config, SessionOptions{dbPath, name, {}});
        if (const int rc = trainSession(session, dbPath); rc != 0) return rc;
    }
    return 0;
}

}  // namespace

void addLessonOptions(CLI::App& cmd, LessonArgs& args, Database& db) {
    cmd.add_option(
        "files", args.files,
        "lesson JSON files (regular files of at most " + limitText(kLessonFile.maxBytes) + ")");
    cmd.add_option("--presets", args.presetDirs,
                   "folder of the presets lessons name (repeatable; default: "
                   "$QKLAB_EXPERIMENTS_DIR, else the shipped experiments/; then the "
                   "app's saved presets)");
    cmd.add_flag("--reference", args.reference, "the lesson file reference, as Markdown");
    cmd.add_flag("--record", args.record,
                 "also train each lesson's runs into --db under its steps' run names (before "
                 "class, on any machine): the app then offers to replay them where training "
                 "live is too slow");
    db.addOption(cmd, args.dbPath);
}

int cmdLesson(const LessonArgs& args) {
    if (args.reference) {
        std::cout << lessonReferenceMarkdown();
        return 0;
    }
    if (args.files.empty()) throw Error(ErrorCode::InvalidRequest, "give lesson files to check");
    const std::vector<std::string> dirs = lessonPresetDirs(args.presetDirs);
    const LessonPresetLookup presets = [&dirs](const std::string& name) {
        const std::string path = resolveLessonPreset(name, dirs, [](const std::string& p) {
            std::error_code ec;
            return std::filesystem::exists(p, ec);
        });
        return path.empty() ? std::nullopt
                            : std::optional<std::string>(readInputFile(path, kPresetFile));
    };
    // Every file is checked in full before anything trains: a bad second file must not leave
    // the first one's runs recorded.
    std::vector<Lesson> lessons;
    for (const std::string& path : args.files) {
        lessons.push_back(parsePlayableLesson(readInputFile(path, kLessonFile), path, presets));
        // The title is someone else's text: escaped and cut, as run names are.
        std::cout << printableText(path) << ": "
                  << printableText(quotedValue(lessons.back().title, 120)) << ", "
                  << lessons.back().steps.size() << " steps, ok\n";
    }
    if (args.record)
        for (size_t i = 0; i < lessons.size(); ++i)
            if (const int rc = recordLesson(lessons[i], args.files[i], presets, args.dbPath))
                return rc;
    return 0;
}

}  // namespace qklab::cli
