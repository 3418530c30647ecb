// new_sweep.cpp — a new sweep read from its file, and shell quoting: what `sweep` and its Slurm
// writer share (new_sweep.h).
#include "new_sweep.h"

#include "qklab/util/error.h"

namespace qklab::cli {

std::string shellQuoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

NewSweep newSweep(const SweepArgs& o) {
    NewSweep n;
    n.definition = loadSweepFile(o.file);
    if (!o.name.empty()) n.definition.name = o.name;
    try {
        checkSweepName(n.definition.name);
    } catch (const Error& e) {
        // A bad "name" field was refused by the parser: here it is --name or the file's stem.
        throw Error(e.code(), o.name.empty() ? o.file + ": " + e.what() +
                                                   " (it is the file's name: give one with --name)"
                                             : std::string("--name: ") + e.what());
    }
    if (o.twins) addTwinsAxis(n.definition);
    n.points = expandSweep(n.definition);  // every point valid before anything is stored
    return n;
}

}  // namespace qklab::cli
