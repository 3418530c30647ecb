// lesson_command.cpp — `qklab-cli lesson`: checks lesson files as the app plays them (the same
// checks, in core): exit 2 with the step and field of the first error.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "commands.h"
#include "qklab/error.h"
#include "qklab/input_file.h"
#include "qklab/lesson.h"
#include "qklab/run_store.h"

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

}  // namespace

void addLessonOptions(CLI::App& cmd, LessonArgs& args, Database&) {
    cmd.add_option(
        "files", args.files,
        "lesson JSON files (regular files of at most " + limitText(kLessonFile.maxBytes) + ")");
    cmd.add_option("--presets", args.presetDirs,
                   "folder of the presets lessons name (repeatable; default: "
                   "$QKLAB_EXPERIMENTS_DIR, else the shipped experiments/; then the "
                   "app's saved presets)");
    cmd.add_flag("--reference", args.reference, "the lesson file reference, as Markdown");
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
    for (const std::string& path : args.files) {
        const Lesson l = parsePlayableLesson(readInputFile(path, kLessonFile), path, presets);
        std::cout << path << ": \"" << l.title << "\", " << l.steps.size() << " steps, ok\n";
    }
    return 0;
}

}  // namespace qklab::cli
