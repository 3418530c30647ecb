// store_import.cpp — importing runs from other qklab files (merging the shard databases of a
// Slurm sweep, or a colleague's runs) into this store.
//
// Every source is someone else's file: it is checked row by row before anything is
// written (import_check.cpp), read in one snapshot (a shard whose task is still writing
// commits between our queries otherwise), and its checkpoint files are copied into this
// database's own checkpoint folder, never referenced where they are. All sources of one call
// are one transaction: a bad file commits nothing, and the checkpoint files copied for it
// are removed again.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "qklab/error.h"
#include "qklab/run_store.h"
#include "store/sqlite_db.h"
#include "store/store_internal.h"
#include "util/text_util.h"

namespace qklab {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> tableColumns(Database& db, const std::string& table) {
    std::vector<std::string> out;
    Statement st(db, "SELECT name FROM pragma_table_info(?)");
    st.bindText(1, table);
    while (st.step()) out.push_back(st.columnText(0));
    return out;
}

// Columns of `table` that both files have, less those the copy sets itself.
std::vector<std::string> sharedColumns(Database& src, Database& dst, const std::string& table,
                                       const std::set<std::string>& skip) {
    const std::vector<std::string> theirs = tableColumns(src, table);
    const std::set<std::string> ours(theirs.begin(), theirs.end());
    std::vector<std::string> out;
    for (const auto& c : tableColumns(dst, table))
        if (ours.count(c) && !skip.count(c)) out.push_back(c);
    return out;
}

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

// Checkpoints are not in the list: their files are copied (copyCheckpoints).
const char* const kPerRunTables[] = {
    "step_metrics", "probe_stats",  "histograms", "attention_maps", "spikes",
    "events",       "logit_alarms", "qk_clips",   "custom_scalars", "change_reports"};

bool hasTable(Database& db, const std::string& table) {
    Statement st(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
    st.bindText(1, table);
    return st.step();
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

// Checkpoint files an import wrote, removed unless it commits; the files of replaced rows,
// removed once it has; and the staging folder, removed either way.
struct FileChanges {
    std::vector<std::string> created, replaced;
    std::string staging;  // DB.checkpoints/.import-<pid>: copies made before the transaction
    bool committed = false;
    explicit FileChanges(std::string stagingFolder) : staging(std::move(stagingFolder)) {}
    FileChanges(const FileChanges&) = delete;
    FileChanges& operator=(const FileChanges&) = delete;
    ~FileChanges() {
        std::error_code ec;
        for (const auto& f : committed ? replaced : created) fs::remove(f, ec);
        if (!staging.empty()) fs::remove_all(staging, ec);
    }
};

// A source checkpoint copied into the staging folder ahead of the write transaction, or why it
// is left out. Copying a file can take minutes; the target's write lock must not (a run
// training into the same database gives up on a flush after its 5 s busy timeout).
struct StagedCheckpoint {
    std::string file, why;
};

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
            ids[sel.columnInt(0)] = find.columnInt(0);
            continue;
        }
        Statement ins(dst,
                      "INSERT INTO sweeps(uuid, name, definition_json, points, status, "
                      "created_at, updated_at) VALUES(?, ?, ?, ?, 'partial', ?, ?)");
        ins.bindText(1, uuid).bindText(2, freeName(dst, "sweeps", sel.columnText(2), uuid));
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
    void copyRun(const Source& src, const SourceRun& r, int64_t dstId, bool replacing);
    std::set<int64_t> copyCheckpoints(const Source& src, const SourceRun& r, int64_t dstId);
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

void Importer::stage(const Source& src) {
    Statement sel(*src.db, sourceRunQuery(src, {}));
    Statement ckpts(*src.db, "SELECT step, path FROM checkpoints WHERE run_id = ?");
    while (sel.step()) {
        const SourceRun r = sourceRun(sel, src.path);
        const auto target = findTarget(m_dst, r.uuid);  // read again under the lock
        if (target && !sourceIsFurther(r, *target)) continue;
        ckpts.reset();
        ckpts.bindInt(1, r.id);
        while (ckpts.step())
            m_staged[{r.id, ckpts.columnInt(0)}] =
                stageOne(src, r.id, ckpts.columnInt(0), ckpts.columnText(1));
    }
}

// A staged file to its place in this database's folder: "run-<id>/step-<step>.pt".
std::string Importer::placeFile(const std::string& staged, int64_t dstId, int64_t step) {
    const fs::path dir = fs::path(checkpointFolder(m_dstPath)) / ("run-" + std::to_string(dstId));
    const fs::path final = dir / ("step-" + std::to_string(step) + ".pt");
    std::error_code ec;
    fs::create_directories(dir, ec);
    const bool existed = fs::exists(final, ec);
    if (!ec) fs::rename(staged, final, ec);
    if (ec)
        throw Error(ErrorCode::Io, "cannot move checkpoint " + staged + " to " + final.string() +
                                       ": " + ec.message());
    if (!existed) m_files.created.push_back(final.string());
    return final.string();
}

// The source run's checkpoints that resolve into the source's own folder are copied (staged
// before the transaction); the others are left out, with a note. Returns the steps copied.
std::set<int64_t> Importer::copyCheckpoints(const Source& src, const SourceRun& r, int64_t dstId) {
    std::set<int64_t> steps;
    Statement sel(*src.db, "SELECT step, path FROM checkpoints WHERE run_id = ? ORDER BY step");
    sel.bindInt(1, r.id);
    Statement ins(m_dst,
                  "INSERT OR REPLACE INTO checkpoints(run_id, step, path, created_at) "
                  "VALUES(?, ?, ?, ?)");
    while (sel.step()) {
        const int64_t step = sel.columnInt(0);
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
        steps.insert(step);
    }
    return steps;
}

// Every row of the source run into run dstId (whose old rows are gone, or never were), and
// its checkpoints; a replaced run keeps its old checkpoints unless the source brings one.
void Importer::copyRun(const Source& src, const SourceRun& r, int64_t dstId, bool replacing) {
    for (const char* table : kPerRunTables)
        if (hasTable(*src.db, table)) copyRunRows(*src.db, m_dst, table, r.id, dstId);
    std::vector<CheckpointInfo> old;
    if (replacing) {
        Statement st(m_dst, "SELECT step, path FROM checkpoints WHERE run_id = ?");
        st.bindInt(1, dstId);
        while (st.step())
            old.push_back(resolveCheckpoint(m_dstPath, dstId, st.columnInt(0), st.columnText(1)));
    }
    const std::set<int64_t> copied = copyCheckpoints(src, r, dstId);
    if (copied.empty()) return;
    Statement del(m_dst, "DELETE FROM checkpoints WHERE run_id = ? AND step = ?");
    for (const CheckpointInfo& c : old) {
        if (copied.count(c.step)) continue;  // its file was overwritten by the new copy
        del.bindInt(1, dstId).bindInt(2, c.step).exec();
        if (!c.path.empty()) m_files.replaced.push_back(c.path);
    }
}

// The runs row: a new one (a free name, the source's UUID), or the replaced run's own row
// (its name and id stay). `sel` is a row of sourceRunQuery(src, cols). Returns the run's id.
int64_t Importer::storeRunRow(const Statement& sel, const SourceRun& r, const TargetRun* target,
                              const std::vector<std::string>& cols, std::optional<int64_t> sweep) {
    std::string names, marks, sets;
    for (const auto& c : cols) names += ", " + c, marks += ", ?", sets += ", " + c + " = ?";
    Statement st(m_dst, target ? "UPDATE runs SET status = ?, sweep_id = ?" + sets + " WHERE id = ?"
                               : "INSERT INTO runs(name, status, uuid, sweep_id" + names +
                                     ") VALUES(?, ?, ?, ?" + marks + ")");
    int at = 1;
    if (!target) {
        const std::string name = freeName(m_dst, "runs", r.name, r.uuid);
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
        st.bindColumn(at++, sel, static_cast<int>(i) + kFirstCopiedColumn);
    if (!target) {
        st.exec();
        return m_dst.lastInsertId();
    }
    st.bindInt(at, target->id).exec();
    for (const char* table : kPerRunTables) {  // all of its rows are the source's now
        Statement del(m_dst, std::string("DELETE FROM ") + table + " WHERE run_id = ?");
        del.bindInt(1, target->id).exec();
    }
    return target->id;
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
        if (it != sweepIds.end()) touchedSweeps.insert(*(sweep = it->second));
        const int64_t id = storeRunRow(sel, r, target ? &*target : nullptr, cols, sweep);
        copyRun(src, r, id, target.has_value());
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
