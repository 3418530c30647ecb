// resume_command.cpp — `qklab-cli resume`: continue a stopped or interrupted run from its last
// checkpoint.
#include "resume_command.h"

#include "qklab/engine/run_session.h"
#include "qklab/store/run_store.h"
#include "training.h"

namespace qklab::cli {

void addResumeOptions(CLI::App& cmd, ResumeArgs& args, Database& db) {
    cmd.add_option("run", args.runRef, "run id or name")->required();
    db.addOption(cmd, args.dbPath);
}

int cmdResume(const ResumeArgs& args) {
    int64_t id = 0;
    {
        RunStore store(args.dbPath, StoreAccess::ReadOnly);
        id = store.findRun(args.runRef).id;
    }
    auto session = RunSession::resume(args.dbPath, id);
    return trainSession(*session, args.dbPath);
}

}  // namespace qklab::cli
