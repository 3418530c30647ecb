// sweep_point_command.cpp — `qklab-cli sweep-point` (internal): one grid point of a sweep, in
// its own process, started by `sweep` or a Slurm array task.
#include "sweep_point_command.h"

#include <filesystem>
#include <optional>
#include <set>

#include "qklab/analysis/sweep_report.h"
#include "qklab/config/sweep.h"
#include "qklab/engine/run_session.h"
#include "qklab/store/run_store.h"
#include "qklab/util/error.h"
#include "training.h"

namespace qklab::cli {
namespace {

namespace fs = std::filesystem;

// What the process trains: a new run of the grid point, or the resumption of its stopped or
// interrupted run.
struct PointPlan {
    RunConfig config;
    SessionOptions session;
    std::optional<int64_t> resumeRunId;
};

// A Slurm folder's sweep.json, read and checked before the shard database is created.
SweepDefinition loadDefinitionFile(const std::string& path) {
    SweepDefinition d = loadSweepFile(path);
    checkSweepName(d.name);
    if (d.uuid.empty())
        throw Error(ErrorCode::InvalidConfig,
                    path + ": no uuid: write it with qklab-cli sweep --slurm");
    return d;
}

// The point's sweep: a stored one (a local sweep, `d` is filled in from it), or the Slurm
// folder's `d`, whose record the shard gets first (found again by its UUID when the shards are
// merged).
SweepInfo pointSweep(RunStore& store, const SweepPointArgs& args, SweepDefinition& d) {
    if (args.definition.empty()) {
        SweepInfo s = store.findSweep(args.sweepRef);
        d = parseStoredSweep(s.definitionJson, "sweep '" + printableText(s.name) + "'");
        d.name = s.name;
        return s;
    }
    SweepInfo s;
    s.uuid = d.uuid;
    s.name = d.name;
    s.definitionJson = sweepToJson(d).dump();
    s.points = static_cast<int64_t>(d.pointCount());
    s.id = store.addSweep(s, /*owned=*/false);
    return s;
}

// The point's latest stopped or interrupted run that has a checkpoint to resume from.
std::optional<int64_t> runToResume(RunStore& store, const SweepInfo& s, int64_t index) {
    std::optional<int64_t> id;
    for (const RunInfo& r : store.sweepRuns(s.id))
        if (r.sweep && r.sweep->point == index &&
            (r.status == RunStatus::Stopped || r.status == RunStatus::Interrupted) &&
            store.newestUsableCheckpoint(r.id))
            id = r.id;
    return id;
}

// A point run again (it failed, or its interrupted run had no checkpoint) keeps its old run
// for the record; the new one is "... #2".
std::string unusedRunName(RunStore& store, const std::string& name) {
    std::set<std::string> taken;
    for (const RunInfo& r : store.listRuns()) taken.insert(r.name);
    std::string unused = name;
    for (int k = 2; taken.count(unused); ++k) unused = name + " #" + std::to_string(k);
    return unused;
}

void checkPointIndex(int64_t index, const SweepDefinition& d) {
    if (index < 0 || index >= static_cast<int64_t>(d.pointCount()))
        throw Error(ErrorCode::InvalidRequest, "--point " + std::to_string(index) + ": sweep '" +
                                                   printableText(d.name) + "' has points 0.." +
                                                   std::to_string(d.pointCount() - 1));
}

PointPlan planSweepPoint(const SweepPointArgs& args) {
    SweepDefinition d;
    // Nothing is created for a point that is not one: a Slurm task's shard is checked against
    // the folder's definition first, and a local sweep's database must already hold the sweep.
    if (!args.definition.empty()) {
        d = loadDefinitionFile(args.definition);
        checkPointIndex(args.point, d);
    } else if (!fs::exists(args.dbPath)) {
        throw Error(ErrorCode::MissingFile, "--db " + printableText(args.dbPath) +
                                                ": no such database holds sweep " +
                                                printableText(args.sweepRef));
    }
    RunStore store(args.dbPath);
    const SweepInfo s = pointSweep(store, args, d);
    const int64_t index = args.point;
    checkPointIndex(index, d);
    SweepPoint point = std::move(expandSweep(d)[static_cast<size_t>(index)]);
    PointPlan plan;
    plan.resumeRunId = runToResume(store, s, index);
    plan.config = point.config;
    if (args.threads > 0) plan.config.run.threads = args.threads;
    plan.session.dbPath = args.dbPath;
    plan.session.name =
        unusedRunName(store, sweepRunName(s.name, index, d.pointCount(), point.coords));
    plan.session.sweep = SweepMembership{s.id, index, point.coords.dump()};
    return plan;
}

}  // namespace

void addSweepPointOptions(CLI::App& cmd, SweepPointArgs& args, Database& db) {
    cmd.group("");  // internal: `sweep` and the Slurm script start it
    cmd.add_option("--sweep", args.sweepRef, "stored sweep id or name");
    cmd.add_option("--definition", args.definition, "a Slurm folder's sweep.json");
    cmd.add_option("--point", args.point, "grid point index")->required();
    cmd.add_option("--threads", args.threads, "run.threads");
    db.addOption(cmd, args.dbPath);
}

int cmdSweepPoint(const SweepPointArgs& args) {
    PointPlan plan = planSweepPoint(args);
    if (plan.resumeRunId) {
        auto session = RunSession::resume(args.dbPath, *plan.resumeRunId);
        return trainSession(*session, args.dbPath);
    }
    RunSession session(plan.config, plan.session);
    return trainSession(session, args.dbPath);
}

}  // namespace qklab::cli
