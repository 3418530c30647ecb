// lesson_command.cpp — `qklab-cli lesson`: checks lesson files as the app plays them (the same
// checks, in core): exit 2 with the step and field of the first error; --record trains their
// runs into a database for replay in class.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "commands.h"
#include "qklab/error.h"
#include "qklab/events.h"
#include "qklab/input_file.h"
#include "qklab/lesson.h"
#include "qklab/names.h"
#include "qklab/run_config.h"
#include "qklab/run_session.h"
#include "qklab/run_store.h"
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

// The runs a lesson trains, as the app trains them: each start_preset step's preset with its
// "set", under the step's run name; an intervene step's event joins the run before it.
struct LessonRun {
    std::string name;
    RunConfig config;
};

std::vector<LessonRun> lessonRuns(const Lesson& lesson, const LessonPresetLookup& presets) {
    std::vector<LessonRun> runs;
    for (size_t i = 0; i < lesson.steps.size(); ++i) {
        const LessonStep& step = lesson.steps[i];
        if (step.actionKind() == "intervene" && !runs.empty()) {
            nlohmann::json e = step.action.value("event", nlohmann::json::object());
            e["step"] = step.action.value("at_step", int64_t{0});
            runs.back().config.events.push_back(eventFromJson(e, "lesson"));
        }
        if (step.actionKind() != "start_preset") continue;
        const std::string preset = step.action.value("preset", "");
        LessonRun run{lessonRunName(lesson, i),
                      configFromJsonText(*presets(preset), "preset " + preset)};
        for (const std::string& a :
             lessonSetAssignments(step.action.value("set", nlohmann::json())))
            applyOverride(run.config, a);
        runs.push_back(run);
    }
    return runs;
}

// --record: train them into the database, each under its step's name (numbered when a
// rehearsal already holds it), so that the app offers "Replay the recorded run instead".
int recordLesson(const Lesson& lesson, const LessonPresetLookup& presets,
                 const std::string& dbPath) {
    for (LessonRun& run : lessonRuns(lesson, presets)) {
        std::vector<std::string> names;
        {
            RunStore store(dbPath);
            for (const RunInfo& r : store.listRuns()) names.push_back(r.name);
        }
        const std::string name = numberedName(run.name, names);
        std::cout << "recording \"" << name << "\" into " << dbPath << "\n";
        std::sort(run.config.events.begin(), run.config.events.end(),
                  [](const Event& a, const Event& b) { return a.step < b.step; });
        validate(run.config);
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
    for (const std::string& path : args.files) {
        const Lesson l = parsePlayableLesson(readInputFile(path, kLessonFile), path, presets);
        std::cout << path << ": \"" << l.title << "\", " << l.steps.size() << " steps, ok\n";
        if (args.record)
            if (const int rc = recordLesson(l, presets, args.dbPath); rc != 0) return rc;
    }
    return 0;
}

}  // namespace qklab::cli
