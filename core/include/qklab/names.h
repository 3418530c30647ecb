// qklab/names.h — the rules every name a user gives must follow (runs, sweeps, comparisons).
//
// A name is stored, printed in tables, written into Slurm scripts and used in file names, so
// it is refused when a table or a script would choke on it: empty, control characters (a
// newline broke `list`), more than 200 bytes. Throws Error{InvalidRequest}.
#pragma once

#include <string>
#include <vector>

namespace qklab {

// `what` names the kind in the message: "a run name", "a comparison name", ...
void checkName(const std::string& name, const std::string& what);
void checkRunName(const std::string& name);  // checkName(name, "a run name")

// A name like `base` that is not taken: `base` itself when free, else "base (2)", "base (3)",
// … (a lesson run a second time into the same database). The number is one past the highest
// already used, so a deleted middle run does not make names go back in time.
std::string numberedName(const std::string& base, const std::vector<std::string>& existing);
// Which number `name` has in that series: 1 for `base` itself, N for "base (N)", 0 when it is
// not one of them.
int numberInSeries(const std::string& name, const std::string& base);

}  // namespace qklab
