// resume_command.h — `qklab-cli resume`: its arguments and its two functions, as
// command.h describes; commands.cpp puts it in the table.
#pragma once

#include <string>

#include "command.h"

namespace qklab::cli {

struct ResumeArgs {
    std::string runRef, dbPath;
};
void addResumeOptions(CLI::App& cmd, ResumeArgs& args, Database& db);
int cmdResume(const ResumeArgs& args);

}  // namespace qklab::cli
