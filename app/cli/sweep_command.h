// sweep_command.h — what `qklab-cli sweep` shares with its Slurm writer (sweep_slurm.h): a new
// sweep read from its file, and shell quoting.
#pragma once

#include <string>
#include <vector>

#include "commands.h"
#include "qklab/sweep.h"

namespace qklab::cli {

// A new sweep from o.file and o.name: the name checked (checkSweepName), every point built and
// validated. Reads the file only: nothing is stored or written.
struct NewSweep {
    SweepDefinition definition;
    std::vector<SweepPoint> points;
};
NewSweep newSweep(const SweepArgs& o);

// Single quotes for the shell: the whole string is one word, whatever it holds.
std::string shellQuoted(const std::string& s);

}  // namespace qklab::cli
