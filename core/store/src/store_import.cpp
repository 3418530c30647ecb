// store_import.cpp — importing runs from other qklab files (merging the shard databases of a
// Slurm sweep, or a colleague's runs) into this store.
//
// Every source is someone else's file: it is checked row by row before anything is
// written (import_check.cpp), read in one snapshot (a shard whose task is still writing
// commits between our queries otherwise), and its checkpoint files are copied into this
// database's own checkpoint folder, never referenced where they are. Each source is one
// transaction: a bad file commits nothing, and the checkpoint files copied for it are removed
// again. A UUID already here is no proof of identity (import_identity.h): a source run updates
// the run with its UUID only when it is that run continued, and never replaces a checkpoint of
// it; a source sweep joins the sweep with its UUID only when it is the same grid.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "checkpoint_paths.h"
#include "import_check.h"
#include "import_identity.h"
#include "qklab/config/names.h"
#include "qklab/store/run_store.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"
#include "run_rows.h"
#include "schema.h"
#include "sqlite_db.h"

namespace qklab {

namespace fs = std::filesystem;

namespace {

std::string joined(const std::vector<std::string>& cols, const std::string& prefix = "") {
    std::string out;
    for (const auto& c : cols) out += (out.empty() ? "" : ", ") + prefix + c;
    return out;
}

// Every row of one per-run table, re-keyed from source run srcId to dstId. Tables with their
// own integer id (spikes, events) get new ids here.
void copyRunRows(Database& src, Database& dst, const std::string& table, int64_t srcId,
                 int64_t dstId) {
    const auto cols = sharedColumns(src, dst, table, {"run_id", "id"});
    if (cols.empty()) return;
    Statement sel(src, "SELECT " + joined(cols) + " FROM " + table + " WHERE run_id = ?");
    sel.bindInt(1, srcId);
    std::string marks = "?";
    for (size_t i = 0; i < cols.size(); ++i) marks += ", ?";
    Statement ins(dst,
                  "INSERT INTO " + table + "(run_id, " + joined(cols) + ") VALUES(" + marks + ")");
    while (sel.step()) {
        ins.bindInt(1, dstId);
        for (size_t i = 0; i < cols.size(); ++i)
            ins.bindColumn(static_cast<int>(i) + 2, sel, static_cast<int>(i));
        ins.exec();
    }
}

bool nameTaken(Database& db, const std::string& table, const std::string& name) {
    Statement st(db, "SELECT 1 FROM " + table + " WHERE name = ?");
    st.bindText(1, name);
    return st.step();
}

// "name (1a2b3c4d)": a name another run (or sweep) here already has, made unique by the
// UUID's first characters (then a counter, should even that be taken).
std::string freeName(Database& db, const std::string& table, const std::string& name,
                     const std::string& uuid) {
    if (!nameTaken(db, table, name)) return name;
    std::string base = name.substr(0, 180) + " (" + uuid.substr(0, 8) + ")", candidate = base;
    for (int k = 2; nameTaken(db, table, candidate); ++k)
        candidate = base + " " + std::to_string(k);
    return candidate;
}

// A source file, checked, and read in one snapshot until it is closed.
struct Source {
    std::string path;
    std::unique_ptr<Database> db;
    int version = 0;
};

Source openSource(const std::string& path) {
    Source s{path, openRunDatabaseForReading(path), 0};
    s.db->exec("BEGIN");                                   // a read transaction: one snapshot
    s.db->queryInt("SELECT count(*) FROM sqlite_master");  // ... taken at the first read
    s.version = static_cast<int>(s.db->queryInt("PRAGMA user_version"));
    // A damaged page can sit where no query of the copy looks (an index, the free list):
    // every page is walked once, so that a damaged file is refused rather than half read.
    const std::string check = s.db->queryText("PRAGMA quick_check(1)");
    if (check != "ok")
        throw Error(ErrorCode::NotQklabDatabase,
                    path + " is damaged (truncated or overwritten?): " + clipped(check, 200) +
                        ". Nothing was imported.");
    checkImportRows(*s.db, s.version, path);
    return s;
}

// Checkpoint files an import wrote, removed unless it commits, and the staging folder, removed
// either way. An import never overwrites or deletes a checkpoint file of this database.
struct FileChanges {
    std::vector<std::string> created;
    std::string staging;  // DB.checkpoints/.import-<pid>: copies made before the transaction
    bool committed = false;
    explicit FileChanges(std::string stagingFolder) : staging(std::move(stagingFolder)) {}
    FileChanges(const FileChanges&) = delete;
    FileChanges& operator=(const FileChanges&) = delete;
    ~FileChanges() {
        std::error_code ec;
        if (!committed)
            for (const auto& f : created) fs::remove(f, ec);
        if (!staging.empty()) fs::remove_all(staging, ec);
    }
};

// A source checkpoint copied into the staging folder ahead of the write transaction, or why it
// is left out. Copying a file can take minutes; the target's write lock must not (a run
// training into the same database gives up on a flush after its 5 s busy timeout).
struct StagedCheckpoint {
    std::string file, why;
};

// A source sweep with the UUID of sweep `here` joins it only when it is the same grid (the
// shards of one Slurm sweep); otherwise its runs would become that sweep's points.
void requireSameSweep(const Source& src, const Statement& sel, Database& dst, int64_t here) {
    Statement ours(dst, "SELECT name, definition_json, points FROM sweeps WHERE id = ?");
    ours.bindInt(1, here);
    ours.step();
    const std::string why =
        sweepDifference(ours.columnText(1), ours.columnInt(2), sel.columnText(3), sel.columnInt(4));
    if (why.empty()) return;
    throw Error(ErrorCode::InvalidRequest,
                src.path + ": sweep '" + clipped(printableText(sel.columnText(2))) + "' (" +
                    std::to_string(sel.columnInt(0)) + ") has the UUID of sweep '" +
                    clipped(printableText(ours.columnText(0))) + "' (" + std::to_string(here) +
                    " in " + dst.path() + ") but is not that sweep: " + why + ". Nothing of " +
                    src.path + " was imported.");
}

// The source's sweeps, added here or found by UUID: source sweep id -> id here.
std::map<int64_t, int64_t> importSweeps(const Source& src, Database& dst) {
    std::map<int64_t, int64_t> ids;
    if (!hasFeature(src.version, SchemaFeature::Sweeps)) return ids;
    Statement sel(*src.db,
                  "SELECT id, uuid, name, definition_json, points, created_at FROM sweeps "
                  "ORDER BY id");
    Statement find(dst, "SELECT id FROM sweeps WHERE uuid = ?");
    while (sel.step()) {
        const std::string uuid = sel.columnText(1);
        find.reset();
        find.bindText(1, uuid);
        if (find.step()) {
            requireSameSweep(src, sel, dst, find.columnInt(0));
            ids[sel.columnInt(0)] = find.columnInt(0);
            continue;
        }
        Statement ins(dst,
                      "INSERT INTO sweeps(uuid, name, definition_json, points, status, "
                      "created_at, updated_at) VALUES(?, ?, ?, ?, 'partial', ?, ?)");
        ins.bindText(1, uuid).bindText(
            2, freeName(dst, "sweeps", nameUnderTheRule(sel.columnText(2)), uuid));
        ins.bindText(3, sel.columnText(3)).bindInt(4, sel.columnInt(4));
        ins.bindText(5, sel.columnText(5)).bindText(6, utcNowIso8601()).exec();
        ids[sel.columnInt(0)] = dst.lastInsertId();
    }
    return ids;
}

// A sweep no process owns (assembled from shards) is finished once every grid point has a
// run that ended (finished, diverged or failed), partial until then.
void settleSweepStatus(Database& db, int64_t sweepId) {
    Statement st(db,
                 "UPDATE sweeps SET status = CASE WHEN (SELECT count(DISTINCT sweep_point) FROM "
                 "runs WHERE sweep_id = sweeps.id AND status IN ('finished', 'diverged', "
                 "'failed')) >= points THEN 'finished' ELSE 'partial' END, updated_at = ? "
                 "WHERE id = ? AND pid IS NULL");
    st.bindText(1, utcNowIso8601()).bindInt(2, sweepId).exec();
}

// How far along a status is: a run that ended is further than one that may go on.
int statusRank(RunStatus s) {
    switch (s) {
        case RunStatus::Finished:
        case RunStatus::Diverged:
        case RunStatus::Failed:
            return 2;
        case RunStatus::Stopped:
        case RunStatus::Interrupted:
            return 1;
        case RunStatus::Running:
        case RunStatus::Unknown:
            return 0;
    }
    return 0;
}

// The run being imported, as the source has it (fixed columns of the source query).
struct SourceRun {
    int64_t id = 0, steps = 0, pid = 0;
    std::string name, status, uuid, host, label;
};

// The same run (by UUID) already here.
struct TargetRun {
    int64_t id = 0, steps = 0;
    RunStatus status = RunStatus::Unknown;
    bool live = false;  // being written right now by a process of this host
};

std::optional<TargetRun> findTarget(Database& dst, const std::string& uuid) {
    Statement st(dst, "SELECT id, steps_done, status, pid, host FROM runs WHERE uuid = ?");
    st.bindText(1, uuid);
    if (!st.step()) return std::nullopt;
    TargetRun t{st.columnInt(0), st.columnInt(1), runStatusOrUnknown(st.columnText(2)), false};
    t.live = t.status == RunStatus::Running &&
             !writerIsGone(st.isNull(3) ? 0 : st.columnInt(3), st.columnText(4));
    return t;
}

// A shard merged while its task still ran arrived partial; merged again, the run is
// replaced when the source holds more of it (more steps, or the same steps and an end).
bool sourceIsFurther(const SourceRun& s, const TargetRun& t) {
    if (t.live) return false;  // never under a writer
    const int src = statusRank(runStatusOrUnknown(s.status)), dst = statusRank(t.status);
    return (s.steps > t.steps && src >= dst) || (s.steps >= t.steps && src > dst);
}

// What the import says about a source run still marked running.
std::string liveNote(const SourceRun& r) {
    const std::string where = "process " + std::to_string(r.pid) + " on " + printableText(r.host);
    const std::string as =
        ": imported as interrupted at " + std::to_string(r.steps) + " steps; merge again once it ";
    if (r.host == thisHostName() && !writerIsGone(r.pid, r.host))
        return r.label + " is still being written by " + where + as + "ends to update it";
    if (r.host == thisHostName()) return "";  // its writer is gone: it is interrupted
    return r.label + " was still marked running by " + where +
           " (whether it still is cannot be told from here)" + as + "has ended to update it";
}

// The source runs' fixed columns (SourceRun) come first in every query of them.
const char* const kSourceRunColumns = "r.id, r.steps_done, ifnull(r.pid, 0), r.name, r.status";

std::string sourceRunQuery(const Source& src, const std::vector<std::string>& cols) {
    const std::string uuid = hasFeature(src.version, SchemaFeature::Sweeps)
                                 ? "r.uuid, ifnull(r.host, ''), r.sweep_id"
                                 : kLegacyRunUuid + std::string(", ifnull(r.host, ''), NULL");
    return std::string("SELECT ") + kSourceRunColumns + ", " + uuid +
           (cols.empty() ? "" : ", " + joined(cols, "r.")) + " FROM runs r ORDER BY r.id";
}

SourceRun sourceRun(const Statement& sel, const std::string& srcPath) {
    SourceRun r{sel.columnInt(0),  sel.columnInt(1),  sel.columnInt(2),  sel.columnText(3),
                sel.columnText(4), sel.columnText(5), sel.columnText(6), ""};
    r.label = "run '" + clipped(printableText(r.name), 60) + "' (" + std::to_string(r.id) + " in " +
              srcPath + ")";
    return r;
}
constexpr int kSweepColumn = 7, kFirstCopiedColumn = 8;  // in sourceRunQuery's rows

class Importer {
  public:
    Importer(Database& dst, const std::string& dstPath, FileChanges& files)
        : m_dst(dst), m_dstPath(dstPath), m_files(files) {}
    // Copies the checkpoints of the runs that run() will take (outside any transaction).
    void stage(const Source& src);
    ImportResult run(const Source& src);

  private:
    int64_t storeRunRow(const Statement& sel, const SourceRun& r, const TargetRun* target,
                        const std::vector<std::string>& cols, std::optional<int64_t> sweep);
    void requireContinuation(const Source& src, const SourceRun& r, const TargetRun& t,
                             std::optional<int64_t> sweep);
    void copyRun(const Source& src, const SourceRun& r, int64_t dstId);
    void renameScalarsUnderTheRule(int64_t runId);
    void copyCheckpoints(const Source& src, const SourceRun& r, int64_t dstId);
    StagedCheckpoint stageOne(const Source& src, int64_t runId, int64_t step,
                              const std::string& stored);
    std::string placeFile(const std::string& staged, int64_t dstId, int64_t step);

    Database& m_dst;
    std::string m_dstPath;
    FileChanges& m_files;
    ImportResult m_result;
    std::map<std::pair<int64_t, int64_t>, StagedCheckpoint> m_staged;  // (source run, step)
};

// One source checkpoint into the staging folder, if it is a readable file in the source's own
// folder (a temporary name first: a kill never leaves half a file under a final name).
StagedCheckpoint Importer::stageOne(const Source& src, int64_t runId, int64_t step,
                                    const std::string& stored) {
    if (m_files.staging.empty()) return {"", "this database has no checkpoint folder"};
    const CheckpointInfo c = resolveCheckpoint(src.path, runId, step, stored);
    std::error_code ec;
    if (!c.refused.empty()) return {"", c.refused};
    if (!fs::is_regular_file(c.path, ec))
        return {"", "its file " + printableText(c.path) + " is gone"};
    if (!std::ifstream(c.path, std::ios::binary))
        return {"", "its file " + printableText(c.path) + " cannot be read"};
    const std::string file =
        m_files.staging + "/" + std::to_string(runId) + "-" + std::to_string(step) + ".pt";
    fs::create_directories(m_files.staging, ec);
    if (!ec) fs::copy_file(c.path, file + ".tmp", fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::rename(file + ".tmp", file, ec);
    if (ec)
        throw Error(ErrorCode::Io, "cannot copy checkpoint " + c.path + " into " + m_files.staging +
                                       ": " + ec.message());
    return {file, ""};
}

// The steps at which run `runId` here has a checkpoint: an import never replaces them.
std::set<int64_t> checkpointSteps(Database& db, int64_t runId) {
    std::set<int64_t> steps;
    Statement st(db, "SELECT step FROM checkpoints WHERE run_id = ?");
    st.bindInt(1, runId);
    while (st.step()) steps.insert(st.columnInt(0));
    return steps;
}

void Importer::stage(const Source& src) {
    Statement sel(*src.db, sourceRunQuery(src, {}));
    Statement ckpts(*src.db, "SELECT step, path FROM checkpoints WHERE run_id = ?");
    while (sel.step()) {
        const SourceRun r = sourceRun(sel, src.path);
        const auto target = findTarget(m_dst, r.uuid);  // read again under the lock
        if (target && !sourceIsFurther(r, *target)) continue;
        const std::set<int64_t> have =
            target ? checkpointSteps(m_dst, target->id) : std::set<int64_t>{};
        ckpts.reset();
        ckpts.bindInt(1, r.id);
        while (ckpts.step())
            if (!have.count(ckpts.columnInt(0)))
                m_staged[{r.id, ckpts.columnInt(0)}] =
                    stageOne(src, r.id, ckpts.columnInt(0), ckpts.columnText(1));
    }
}

// A staged file to its place in this database's folder: "run-<id>/step-<step>.pt", or
// "step-<step>.<k>.pt" where a file of that name is already there (never overwritten).
std::string Importer::placeFile(const std::string& staged, int64_t dstId, int64_t step) {
    const fs::path dir = fs::path(checkpointFolder(m_dstPath)) / ("run-" + std::to_string(dstId));
    const std::string stem = "step-" + std::to_string(step);
    std::error_code ec;
    fs::create_directories(dir, ec);
    const auto taken = [](const fs::path& p) {
        std::error_code unknown;  // a status that cannot be read: the rename says why
        return fs::exists(fs::symlink_status(p, unknown));
    };
    fs::path final = dir / (stem + ".pt");
    for (int k = 2; taken(final); ++k) final = dir / (stem + "." + std::to_string(k) + ".pt");
    if (!ec) fs::rename(staged, final, ec);
    if (ec)
        throw Error(ErrorCode::Io, "cannot move checkpoint " + staged + " to " + final.string() +
                                       ": " + ec.message());
    m_files.created.push_back(final.string());
    return final.string();
}

// The source run's checkpoints at steps run dstId has none, that resolve into the source's own
// folder, are copied (staged before the transaction); the others are left out, with a note.
void Importer::copyCheckpoints(const Source& src, const SourceRun& r, int64_t dstId) {
    const std::set<int64_t> have = checkpointSteps(m_dst, dstId);  // ours stay as they are
    Statement sel(*src.db, "SELECT step, path FROM checkpoints WHERE run_id = ? ORDER BY step");
    sel.bindInt(1, r.id);
    Statement ins(m_dst,
                  "INSERT INTO checkpoints(run_id, step, path, created_at) "
                  "VALUES(?, ?, ?, ?)");
    while (sel.step()) {
        const int64_t step = sel.columnInt(0);
        if (have.count(step)) continue;
        auto it = m_staged.find({r.id, step});
        if (it == m_staged.end())  // the target changed since stage(): copied now
            it = m_staged
                     .emplace(std::make_pair(r.id, step),
                              stageOne(src, r.id, step, sel.columnText(1)))
                     .first;
        if (it->second.file.empty()) {
            m_result.notes.push_back(r.label + ": the checkpoint of step " + std::to_string(step) +
                                     " was not copied: " + it->second.why);
            continue;
        }
        const std::string file = placeFile(it->second.file, dstId, step);
        ins.bindInt(1, dstId).bindInt(2, step);
        ins.bindText(3, storedCheckpointPath(m_dstPath, dstId, file));
        ins.bindText(4, utcNowIso8601()).exec();
    }
}

// Every row of the source run into run dstId (whose old rows are gone, or never were), and
// the checkpoints it has no checkpoint of its own at.
void Importer::copyRun(const Source& src, const SourceRun& r, int64_t dstId) {
    for (const char* table : kImportedRunTables)
        if (hasTable(*src.db, table)) copyRunRows(*src.db, m_dst, table, r.id, dstId);
    renameScalarsUnderTheRule(dstId);
    copyCheckpoints(src, r, dstId);
}

// Custom scalar names an older package took (U+009B, U+202E) are stored under the rule, as
// run names are; one that would then meet a name the run already has keeps a " (2)".
void Importer::renameScalarsUnderTheRule(int64_t runId) {
    std::vector<std::string> names;
    Statement sel(m_dst, "SELECT DISTINCT name FROM custom_scalars WHERE run_id = ?");
    sel.bindInt(1, runId);
    while (sel.step()) names.push_back(sel.columnText(0));
    const std::vector<std::string> stored = names;  // `names` grows with the new ones
    for (const std::string& name : stored) {
        std::string under = nameUnderTheRule(name);
        if (under == name) continue;
        if (std::find(names.begin(), names.end(), under) != names.end())
            under = numberedName(under, names);
        names.push_back(under);
        Statement up(m_dst, "UPDATE custom_scalars SET name = ? WHERE run_id = ? AND name = ?");
        up.bindText(1, under).bindInt(2, runId).bindText(3, name).exec();
        m_result.renamed.push_back("scalar " + printableText(name) + " -> " + under);
    }
}

// Columns of an updated run that stay as they are here: what the user wrote about it.
const std::set<std::string> kKeptOnUpdate{"notes", "tags"};

// The runs row: a new one (a free name, the source's UUID), or the continued run's own row
// (its id, name, notes and tags stay). `sel` is a row of sourceRunQuery(src, cols). Returns
// the run's id.
int64_t Importer::storeRunRow(const Statement& sel, const SourceRun& r, const TargetRun* target,
                              const std::vector<std::string>& cols, std::optional<int64_t> sweep) {
    std::string names, marks, sets;
    for (const auto& c : cols) {
        names += ", " + c, marks += ", ?";
        if (!kKeptOnUpdate.count(c)) sets += ", " + c + " = ?";
    }
    Statement st(m_dst, target ? "UPDATE runs SET status = ?, sweep_id = ?" + sets + " WHERE id = ?"
                               : "INSERT INTO runs(name, status, uuid, sweep_id" + names +
                                     ") VALUES(?, ?, ?, ?" + marks + ")");
    int at = 1;
    if (!target) {
        const std::string name = freeName(m_dst, "runs", nameUnderTheRule(r.name), r.uuid);
        if (name != r.name)
            m_result.renamed.push_back(printableText(r.name) + " -> " + printableText(name));
        st.bindText(at++, name);
    }
    // A run still being written elsewhere cannot be continued from here: interrupted.
    st.bindText(at++, r.status == "running" ? "interrupted" : r.status);
    if (!target) st.bindText(at++, r.uuid);
    if (sweep)
        st.bindInt(at++, *sweep);
    else
        st.bindNull(at++);
    for (size_t i = 0; i < cols.size(); ++i)
        if (!target || !kKeptOnUpdate.count(cols[i]))
            st.bindColumn(at++, sel, static_cast<int>(i) + kFirstCopiedColumn);
    if (!target) {
        st.exec();
        return m_dst.lastInsertId();
    }
    st.bindInt(at, target->id).exec();
    // All of its rows are the source's now: they hold every row of ours, or every row before
    // our newest checkpoint, which the source was resumed from (continuationRefusal).
    for (const char* table : kImportedRunTables) {
        Statement del(m_dst, std::string("DELETE FROM ") + table + " WHERE run_id = ?");
        del.bindInt(1, target->id).exec();
    }
    return target->id;
}

// A source run with the UUID of run `t` here updates it only when it is that run continued.
void Importer::requireContinuation(const Source& src, const SourceRun& r, const TargetRun& t,
                                   std::optional<int64_t> sweep) {
    const std::string why = continuationRefusal({*src.db, src.version, r.id, m_dst, t.id, sweep});
    if (why.empty()) return;
    Statement name(m_dst, "SELECT name FROM runs WHERE id = ?");
    name.bindInt(1, t.id);
    name.step();
    throw Error(ErrorCode::InvalidRequest,
                src.path + ": " + r.label + " has the UUID of run '" +
                    clipped(printableText(name.columnText(0))) + "' (" + std::to_string(t.id) +
                    " in " + m_dstPath +
                    ") and claims more steps, but is not that run continued: " + why +
                    ". Nothing of " + src.path + " was imported.");
}

ImportResult Importer::run(const Source& src) {
    m_result = ImportResult{};
    const std::map<int64_t, int64_t> sweepIds = importSweeps(src, m_dst);
    const auto cols =
        sharedColumns(*src.db, m_dst, "runs", {"id", "name", "uuid", "sweep_id", "status"});
    Statement sel(*src.db, sourceRunQuery(src, cols));
    std::set<int64_t> touchedSweeps;
    while (sel.step()) {
        const SourceRun r = sourceRun(sel, src.path);
        const auto target = findTarget(m_dst, r.uuid);
        if (target && !sourceIsFurther(r, *target)) {
            ++m_result.skipped;
            continue;
        }
        std::optional<int64_t> sweep;
        const auto it =
            sel.isNull(kSweepColumn) ? sweepIds.end() : sweepIds.find(sel.columnInt(kSweepColumn));
        if (it != sweepIds.end()) sweep = it->second;
        if (target) requireContinuation(src, r, *target, sweep);
        if (sweep) touchedSweeps.insert(*sweep);
        const int64_t id = storeRunRow(sel, r, target ? &*target : nullptr, cols, sweep);
        copyRun(src, r, id);
        ++(target ? m_result.updated : m_result.imported);
        if (r.status == "running")
            if (std::string note = liveNote(r); !note.empty()) m_result.notes.push_back(note);
    }
    for (int64_t id : touchedSweeps) settleSweepStatus(m_dst, id);
    for (const auto& [from, to] : sweepIds) m_result.sweepIds.push_back(to);
    return m_result;
}

}  // namespace

void checkImportSource(const std::string& sourcePath) {
    openSource(sourcePath);
}

std::vector<ImportResult> RunStore::importAll(const std::vector<std::string>& sourcePaths) {
    if (m_readOnly) throw Error(ErrorCode::InvalidRequest, "the store is open read-only");
    for (const std::string& p : sourcePaths) {
        std::error_code ec;
        if (fs::equivalent(p, path(), ec))
            throw Error(ErrorCode::InvalidRequest, "cannot import " + p + " into itself");
    }
    std::vector<ImportResult> results;
    // One source open at a time (a merge of a thousand shards must not hold a thousand files),
    // one transaction each: the write lock is held for rows and renames only, not for copying
    // checkpoint files, so that a run training into this database is not locked out.
    for (const std::string& p : sourcePaths) {
        const Source src = openSource(p);
        const std::string folder = checkpointFolder(path());  // "" in memory: none copied
        FileChanges files(folder.empty() ? "" : folder + "/.import-" + std::to_string(getpid()));
        Importer importer(*m_db, path(), files);
        importer.stage(src);
        Transaction tx(*m_db);
        results.push_back(importer.run(src));
        tx.commit();
        files.committed = true;
    }
    return results;
}

ImportResult RunStore::importRuns(const std::string& sourcePath) {
    return importAll({sourcePath}).front();
}

}  // namespace qklab
