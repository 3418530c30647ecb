// compare_command.h — `qklab-cli compare`: config diff and summary table of stored runs.
#pragma once

#include <string>
#include <vector>

namespace qklab::cli {

struct CompareOptions {
    std::string dbPath;
    std::vector<std::string> runRefs;  // id, name, id:N or name:N; at least two
    bool asJson = false;
    bool allKeys = false;  // the whole config, not only the keys that differ
};

// Prints the comparison on stdout; returns the exit status. Throws qklab::Error (an unknown
// run: NotFound) for main's error path.
int compareRuns(const CompareOptions& o);

}  // namespace qklab::cli
