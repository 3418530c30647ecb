// qklab/config/names.h — the rules every name a user gives must follow (runs, sweeps, comparisons).
//
// A name is stored, printed in tables, written into Slurm scripts and CSV headers and used in
// file names, so it is refused when a table or a script would choke on it: empty, more than
// 200 bytes, control characters (a newline broke `list`; C0, DEL and the C1 range
// U+0080..U+009F), bidi controls (U+202E shows a name reversed) or bytes that are not UTF-8.
// One rule for every name: run and sweep names (CLI, app, lessons, Python), comparison names,
// the Python package's custom scalar names, and every name import and merge read from a file,
// so that whatever one of them accepts, the others accept. Throws Error{InvalidRequest} naming
// `what`, the escaped name and the first character refused.
#pragma once

#include <string>
#include <vector>

namespace qklab {

// `what` names the kind in the message: "a run name", "a comparison name", ...
void checkName(const std::string& name, const std::string& what);
void checkRunName(const std::string& name);  // checkName(name, "a run name")
// A custom scalar's name (the Python package's run.log, the custom_scalars table).
void checkScalarName(const std::string& name);  // checkName(name, "a scalar name")

// A name from a file written before this rule (an older qklab took C1 and bidi characters):
// `name` itself when the rule accepts it, else its printable form (each refused byte as
// "\xNN", cut to 200 bytes; "unnamed" for an empty one). Import and merge store that, and say
// so, rather than refuse a database, or the shards of a sweep that already ran, for a name.
std::string nameUnderTheRule(const std::string& name);

// A name like `base` that is not taken: `base` itself when free, else "base (2)", "base (3)",
// … (a lesson run a second time into the same database). The number is one past the highest
// already used, so a deleted middle run does not make names go back in time.
std::string numberedName(const std::string& base, const std::vector<std::string>& existing);
// Which number `name` has in that series: 1 for `base` itself, N for "base (N)", 0 when it is
// not one of them.
int numberInSeries(const std::string& name, const std::string& base);

}  // namespace qklab
