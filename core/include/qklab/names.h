// qklab/names.h — the rules every name a user gives must follow (runs, sweeps, comparisons).
//
// A name is stored, printed in tables, written into Slurm scripts and used in file names, so
// it is refused when a table or a script would choke on it: empty, control characters (a
// newline broke `list`), more than 200 bytes. Throws Error{InvalidRequest}.
#pragma once

#include <string>

namespace qklab {

// `what` names the kind in the message: "a run name", "a comparison name", ...
void checkName(const std::string& name, const std::string& what);
void checkRunName(const std::string& name);  // checkName(name, "a run name")

}  // namespace qklab
