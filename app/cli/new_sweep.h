// new_sweep.h — what `qklab-cli sweep` (sweep_command.cpp) and its Slurm writer
// (sweep_slurm.cpp) both start from: a new sweep read from its file, and shell quoting. Both
// include this; neither includes the other's file, so the includes run one way:
// sweep_command.cpp → sweep_slurm.h → new_sweep.h.
#pragma once

#include <string>
#include <vector>

#include "qklab/config/sweep.h"
#include "sweep_command.h"

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
