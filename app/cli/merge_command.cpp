// merge_command.cpp — `qklab-cli merge`: copy every run of several databases (a Slurm sweep's
// shards) into one.
#include "merge_command.h"

#include "import_command.h"  // importDatabases

namespace qklab::cli {

void addMergeOptions(CLI::App& cmd, MergeArgs& args, Database&) {
    cmd.add_option("shards", args.shards, "databases to read")->required();
    cmd.add_option("--into", args.into, "the database to write (created when missing)")->required();
}

int cmdMerge(const MergeArgs& args) {
    return importDatabases(args.shards, args.into);
}

}  // namespace qklab::cli
