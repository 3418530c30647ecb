// lesson_command.h — `qklab-cli lesson`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>
#include <vector>

#include "command.h"

namespace qklab::cli {

struct LessonArgs {
    std::vector<std::string> files, presetDirs;
    bool reference = false;
    bool record = false;  // train each lesson's runs into dbPath
    std::string dbPath;
};
void addLessonOptions(CLI::App& cmd, LessonArgs& args, Database& db);
int cmdLesson(const LessonArgs& args);

}  // namespace qklab::cli
