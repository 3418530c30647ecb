// schema.cpp — qklab's schema (the migrations) and opening a file as a qklab database.
//
// Layout: one `runs` row per run; every per-step table is keyed (run_id, step, ...) so one
// run's rows are contiguous in the primary-key b-tree and reading 100k steps is a range scan.
// Small fixed-size tables are WITHOUT ROWID (the key *is* the storage order); tables with
// blobs keep a rowid because WITHOUT ROWID suits rows smaller than ~1/20 of a page.
#include "schema.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <set>
#include <tuple>
#include <vector>

#include "qklab/util/error.h"
#include "qklab/util/input_file.h"
#include "qklab/util/text_util.h"
#include "sqlite_files.h"

#ifdef QKLAB_EXTRA_COLUMNS
#include QKLAB_EXTRA_COLUMNS  // a test build's extra columns, and kExtraColumnsMigration
#endif

namespace qklab {

namespace {

// Migration i (0-based) takes the schema from user_version i to i + 1. Append only: a file
// written by an older build replays exactly the entries it has not seen yet.
const char* const kMigrations[] = {
    // 1: initial schema
    R"sql(
CREATE TABLE runs(
    id INTEGER PRIMARY KEY,
    name TEXT UNIQUE NOT NULL,
    status TEXT NOT NULL DEFAULT 'running',
    config_json TEXT NOT NULL DEFAULT '',
    seed INTEGER NOT NULL DEFAULT 0,
    device TEXT NOT NULL DEFAULT '',
    torch_version TEXT NOT NULL DEFAULT '',
    app_version TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL DEFAULT '',
    finished_at TEXT,
    notes TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '',
    steps_done INTEGER NOT NULL DEFAULT 0,
    final_loss REAL,
    max_logit_raw REAL,
    max_logit_capped REAL,
    status_message TEXT NOT NULL DEFAULT '',
    pid INTEGER,
    host TEXT);
CREATE INDEX runs_by_status ON runs(status);
CREATE TABLE step_metrics(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL,
    loss REAL,                -- NULL = NaN (a diverged step)
    val_loss REAL,            -- NULL = not validated at this step, 'NaN' = validated, NaN
    grad_norm REAL, lr REAL, alpha REAL, softcap_c REAL,
    seq_len INTEGER, tokens_per_s REAL,
    PRIMARY KEY(run_id, step)) WITHOUT ROWID;
CREATE TABLE probe_stats(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL, layer INTEGER NOT NULL, head INTEGER NOT NULL,
    logit_max_raw REAL, logit_p99_raw REAL, logit_mean_raw REAL,
    logit_max_capped REAL, logit_p99_capped REAL, logit_mean_capped REAL,
    q_norm_p90 REAL, k_norm_p90 REAL, q_raw_norm_p90 REAL, k_raw_norm_p90 REAL,
    entropy REAL, frac_at_cap REAL,
    PRIMARY KEY(run_id, step, layer, head)) WITHOUT ROWID;
CREATE TABLE histograms(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL, layer INTEGER NOT NULL, head INTEGER NOT NULL,
    counts BLOB NOT NULL,     -- int64 little-endian per bin
    underflow INTEGER NOT NULL DEFAULT 0, overflow INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY(run_id, step, layer, head));
CREATE INDEX histograms_by_head ON histograms(run_id, layer, head, step);
CREATE TABLE attention_maps(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL, layer INTEGER NOT NULL, head INTEGER NOT NULL,
    size INTEGER NOT NULL,
    weights BLOB NOT NULL,    -- float32 little-endian, row-major size x size
    PRIMARY KEY(run_id, step, layer, head));
CREATE TABLE spikes(
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL, metric TEXT NOT NULL, value REAL, z_score REAL,
    kind TEXT NOT NULL, tier INTEGER NOT NULL,
    probe_step INTEGER NOT NULL DEFAULT -1,
    probe_max_logit REAL, baseline_max_logit REAL,
    probe_qk_norm REAL, baseline_qk_norm REAL,
    diagnosis TEXT NOT NULL DEFAULT '');
CREATE INDEX spikes_by_run ON spikes(run_id, step);
CREATE TABLE events(
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL, kind TEXT NOT NULL,
    params_json TEXT NOT NULL DEFAULT '{}', source TEXT NOT NULL DEFAULT 'config');
CREATE INDEX events_by_run ON events(run_id, step);
CREATE TABLE checkpoints(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL, path TEXT NOT NULL, created_at TEXT NOT NULL DEFAULT '',
    PRIMARY KEY(run_id, step));
)sql",
    // 2: which attention kernel each step ran ('fused' or 'explicit'; NULL = not recorded)
    R"sql(
ALTER TABLE step_metrics ADD COLUMN attention_path TEXT;
)sql",
    // 3: user events no longer carry a hidden "_intervention" parameter (source says it)
    R"sql(
UPDATE events SET params_json = json_remove(params_json, '$._intervention')
 WHERE json_valid(params_json) AND json_type(params_json, '$._intervention') IS NOT NULL;
)sql",
    // 4: NaN logits are counted on their own instead of landing in the zero bin
    R"sql(
ALTER TABLE histograms ADD COLUMN nan INTEGER NOT NULL DEFAULT 0;
)sql",
    // 5: logit alarms, the first probe per layer past an intervention line
    R"sql(
CREATE TABLE logit_alarms(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    layer INTEGER NOT NULL, metric TEXT NOT NULL, step INTEGER NOT NULL,
    value REAL, threshold REAL, kind TEXT NOT NULL, tier INTEGER NOT NULL,
    text TEXT NOT NULL DEFAULT '',
    PRIMARY KEY(run_id, layer, metric));
)sql",
    // 6: attention maps keep their input bytes (shown on hover) and why they were taken
    R"sql(
ALTER TABLE attention_maps ADD COLUMN tokens BLOB;
ALTER TABLE attention_maps ADD COLUMN reason TEXT NOT NULL DEFAULT 'periodic';
)sql",
    // 7: saved comparisons. run_ids is a JSON array of run ids in display order, settings_json
    // the app's view settings. No foreign key: deleting a run leaves its id in the comparison.
    R"sql(
CREATE TABLE comparisons(
    name TEXT PRIMARY KEY,
    run_ids TEXT NOT NULL,
    settings_json TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL DEFAULT '',
    updated_at TEXT NOT NULL DEFAULT '');
)sql",
    // 8: sweeps, and runs that carry a UUID (merging shard databases skips a run already
    // present) and their sweep coordinates. Older runs get a UUID made from what identifies
    // them (kLegacyRunUuid), so that importing the same old file twice is still a no-op.
    R"sql(
CREATE TABLE sweeps(
    id INTEGER PRIMARY KEY,
    uuid TEXT UNIQUE NOT NULL,
    name TEXT UNIQUE NOT NULL,
    definition_json TEXT NOT NULL,
    points INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'running',
    created_at TEXT NOT NULL DEFAULT '',
    updated_at TEXT NOT NULL DEFAULT '',
    pid INTEGER, host TEXT);
ALTER TABLE runs ADD COLUMN uuid TEXT;
UPDATE runs SET uuid = 'legacy:' || created_at || ':' || ifnull(host, '') || ':' ||
                       ifnull(pid, 0) || ':' || id;
CREATE UNIQUE INDEX runs_by_uuid ON runs(uuid);
ALTER TABLE runs ADD COLUMN sweep_id INTEGER;  -- sweeps.id; sweeps are never deleted
ALTER TABLE runs ADD COLUMN sweep_point INTEGER;
ALTER TABLE runs ADD COLUMN sweep_coords TEXT;
CREATE INDEX runs_by_sweep ON runs(sweep_id, sweep_point);
)sql",
    // 9: QK-Clip (Kimi K2's MuonClip): one row per head whose W_q and W_k were each scaled by
    // `factor` = sqrt(tau / s_max) after the update of `step` (NULL s_max = NaN).
    R"sql(
CREATE TABLE qk_clips(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL, layer INTEGER NOT NULL, head INTEGER NOT NULL,
    s_max REAL, factor REAL,
    PRIMARY KEY(run_id, step, layer, head)) WITHOUT ROWID;
)sql",
    // 10: output-logit divergence (Wortsman et al. 2023) and the optimizer's update, per step:
    // log Z over the vocabulary (mean and max over tokens), the largest output logit, the
    // z-loss term mean(log Z^2) and the L2 norm of the parameter update. NULL in older rows.
    R"sql(
ALTER TABLE step_metrics ADD COLUMN logz_mean REAL;
ALTER TABLE step_metrics ADD COLUMN logz_max REAL;
ALTER TABLE step_metrics ADD COLUMN out_logit_max REAL;
ALTER TABLE step_metrics ADD COLUMN z_loss_term REAL;
ALTER TABLE step_metrics ADD COLUMN update_norm REAL;
)sql",
    // 11: runs trained outside qklab and logged through the Python package (app/python): where
    // a run came from ('qklab' for its own), the user's own config as JSON, and the scalars
    // they log that are not qklab step metrics, one row per name and step.
    R"sql(
ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT 'qklab';
ALTER TABLE runs ADD COLUMN user_config TEXT NOT NULL DEFAULT '';
CREATE TABLE custom_scalars(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name TEXT NOT NULL, step INTEGER NOT NULL, value REAL,
    PRIMARY KEY(run_id, name, step)) WITHOUT ROWID;
)sql",
    // 12: what each change to a run did (qklab/analysis/change_reports.h): the loss (and what the
    // trend
    // before led to expect), attention entropy and the max logit softmax sees over the steps
    // from the change on (to report_step) against as many before it; one row per change, by its
    // step and event kind.
    R"sql(
CREATE TABLE change_reports(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL, kind TEXT NOT NULL, report_step INTEGER NOT NULL,
    loss_before REAL, loss_after REAL, loss_expected REAL, loss_z REAL,
    entropy_before REAL, entropy_after REAL,
    max_logit_before REAL, max_logit_after REAL,
    moved INTEGER NOT NULL DEFAULT 0,
    text TEXT NOT NULL DEFAULT '',
    PRIMARY KEY(run_id, step, kind));
)sql",
    // 13: the forecasts (qklab/analysis/forecast.h): a warning at `step` that `metric` of layer
    // `layer` (head `head`, -1 = the layer) passes `threshold` at `predicted_step`; one row per
    // step, layer and head.
    R"sql(
CREATE TABLE forecasts(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL, kind TEXT NOT NULL, layer INTEGER NOT NULL, head INTEGER NOT NULL,
    metric TEXT NOT NULL, value REAL, threshold REAL, rate REAL,
    predicted_step INTEGER NOT NULL, text TEXT NOT NULL DEFAULT '',
    PRIMARY KEY(run_id, step, layer, head));
)sql",
    // 14: the attention sink and the massive activations (Qiu et al. 2025, gated attention):
    // the attention mass on position 0 and the largest |value| of the layer's output (probes.cpp;
    // NULL in older rows and where a run could not measure it).
    R"sql(
ALTER TABLE probe_stats ADD COLUMN first_token_share REAL;
ALTER TABLE probe_stats ADD COLUMN max_activation REAL;
)sql",
    // 15: output embedding centring (Stollenwerk et al. 2026): ||mu||, the norm of the output
    // embedding's mean row, per step (NULL in older rows).
    R"sql(
ALTER TABLE step_metrics ADD COLUMN mu_norm REAL;
)sql",
#ifdef QKLAB_EXTRA_COLUMNS
    kExtraColumnsMigration,  // the test build's (record_columns.cpp)
#endif
};

constexpr int kLatestVersion = static_cast<int>(std::size(kMigrations));

std::string hex32(int64_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08llX", static_cast<unsigned long long>(v) & 0xffffffffULL);
    return buf;
}

// A file that says it is qklab's schema `version` must have that schema's tables (real tables,
// not views) with their columns: otherwise the first query fails deep inside a reader with
// "no such table" (exit 1), or a view runs whatever its author wrote. The expected schema is
// built by replaying the migrations in memory.
void checkSchema(Database& db, int64_t version) {
    const auto schema = schemaOfVersion(static_cast<int>(version));
    Database& expected = *schema;
    Statement tables(expected, "SELECT name FROM sqlite_master WHERE type = 'table'");
    Statement kind(db, "SELECT type FROM sqlite_master WHERE name = ?");
    while (tables.step()) {
        const std::string table = tables.columnText("name");
        kind.reset();
        kind.bindAll(table);
        const std::string type = kind.step() ? kind.columnText("type") : "";
        if (type != "table")
            throw Error(ErrorCode::NotQklabDatabase,
                        db.path() + " is not a usable qklab database: schema version " +
                            std::to_string(version) + " has a table '" + table + "' but the file " +
                            (type.empty() ? std::string("has none") : "has a " + type));
        std::set<std::string> have;
        Statement cols(db, "SELECT name FROM pragma_table_info(?)");
        cols.bindAll(table);
        while (cols.step()) have.insert(cols.columnText("name"));
        Statement want(expected, "SELECT name FROM pragma_table_info(?)");
        want.bindAll(table);
        while (want.step())
            if (!have.count(want.columnText("name")))
                throw Error(ErrorCode::NotQklabDatabase,
                            db.path() + " is not a usable qklab database: its table '" + table +
                                "' has no column '" + want.columnText("name") +
                                "' (schema version " + std::to_string(version) + ")");
    }
}

// Refuses files that belong to someone else before anything is written to them.
void checkIdentity(Database& db) {
    int64_t appId = db.queryInt("PRAGMA application_id");  // SQLITE_NOTADB surfaces here
    int64_t version = db.queryInt("PRAGMA user_version");
    int64_t objects = db.queryInt("SELECT count(*) FROM sqlite_master");
    if (appId == kQklabApplicationId) {
        if (version > kLatestVersion)
            throw Error(ErrorCode::Unsupported,
                        db.path() + " has qklab schema version " + std::to_string(version) +
                            " but this build knows versions up to " +
                            std::to_string(kLatestVersion) + "; it was written by a newer qklab");
        checkSchema(db, version);
        return;
    }
    if (appId == 0 && objects == 0 && version == 0) return;  // new or empty file: ours now
    throw Error(ErrorCode::NotQklabDatabase,
                db.path() + " is not a qklab database: its application_id is " + hex32(appId) +
                    " (qklab's is " + hex32(kQklabApplicationId) + ") and it holds " +
                    std::to_string(objects) + " schema objects");
}

void enableWal(Database& db) {
    std::string mode = db.queryText("PRAGMA journal_mode=WAL");
    // In-memory databases cannot use WAL and report "memory"; there is no second reader anyway.
    if (mode == "wal" || (db.isMemory() && mode == "memory")) return;
    throw Error(ErrorCode::Database,
                "cannot enable WAL journaling on " + db.path() + " (journal_mode is '" + mode +
                    "'); concurrent readers need it — is the file on a network filesystem?");
}

void migrate(Database& db) {
    // Cheap check first: an up-to-date file must not take the write lock just to be opened.
    if (db.queryInt("PRAGMA user_version") >= kLatestVersion) return;
    Transaction tx(db);
    // Re-read under the lock: another process may have migrated while we waited for it.
    int64_t version = db.queryInt("PRAGMA user_version");
    if (version == 0) db.exec("PRAGMA application_id=" + std::to_string(kQklabApplicationId));
    for (int64_t v = version; v < kLatestVersion; ++v) db.exec(kMigrations[v]);
    db.exec("PRAGMA user_version=" + std::to_string(kLatestVersion));
    tx.commit();
}

}  // namespace

int latestSchemaVersion() {
    return kLatestVersion;
}

std::unique_ptr<Database> schemaOfVersion(int version) {
    auto db = std::make_unique<Database>(":memory:");
    for (int v = 0; v < std::min(version, kLatestVersion); ++v) db->exec(kMigrations[v]);
    return db;
}

std::unique_ptr<Database> openRunDatabase(const std::string& path) {
    if (path.empty()) throw Error(ErrorCode::InvalidRequest, "the database path is empty");
    refuseSqliteCompanion(path);  // opening one would drop its database's locks
    // SQLite would block on a FIFO and read a device: only a regular file (or none) is opened.
    if (std::string p = specialFileProblem(path, "database"); !p.empty())
        throw Error(ErrorCode::InvalidRequest, p);
    if (path != ":memory:") {
        std::filesystem::path parent = std::filesystem::path(path).parent_path();
        std::error_code ec;
        if (!parent.empty()) std::filesystem::create_directories(parent, ec);
        if (ec)
            throw Error(ErrorCode::Database, "cannot create directory " + parent.string() +
                                                 " for " + path + ": " + ec.message());
    }
    auto db = std::make_unique<Database>(path);
    checkIdentity(*db);
    enableWal(*db);
    // NORMAL is durable against a killed process in WAL mode (only power loss can drop the
    // last commits), and avoids an fsync per flush.
    db->exec("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL");
    migrate(*db);
    return db;
}

// Read-only media without the WAL index (-shm) that SQLite needs to read a WAL: opened
// "immutable", SQLite would ignore the WAL and see an empty or stale file. The database and its
// WAL are copied into a private temporary folder instead and read there; the copy goes when the
// connection closes. Nothing is ever written next to the original.
std::unique_ptr<Database> openPrivateCopy(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::string dir = (fs::temp_directory_path(ec) / "qklab-read-XXXXXX").string();
    if (ec || !mkdtemp(dir.data()))
        throw Error(ErrorCode::Io, "cannot read " + path +
                                       ": its WAL needs an index that cannot be created next to "
                                       "it, and no private copy can be made in the temp folder");
    const std::string copy = dir + "/copy.db";
    fs::copy_file(path, copy, ec);
    if (!ec) fs::copy_file(path + "-wal", copy + "-wal", ec);
    if (ec) {
        fs::remove_all(dir, ec);
        throw Error(ErrorCode::Io, "cannot read " + path +
                                       ": its WAL needs an index that cannot be created next to "
                                       "it, and copying it to " +
                                       dir + " failed: " + ec.message());
    }
    auto db = Database::openReadOnly(path, false, copy);
    db->removeOnClose(dir);
    return db;
}

bool walHasFrames(const std::string& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path + "-wal", ec);
    return !ec && size > 32;  // a WAL header is 32 bytes; frames follow it
}

std::unique_ptr<Database> openRunDatabaseForReading(const std::string& path) {
    if (path.empty()) throw Error(ErrorCode::InvalidRequest, "the database path is empty");
    refuseSqliteCompanion(path);
    if (std::string p = specialFileProblem(path, "database"); !p.empty())
        throw Error(ErrorCode::InvalidRequest, p);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw Error(ErrorCode::MissingFile, "there is no database at " + path);
    if (!std::filesystem::is_regular_file(path, ec))
        throw Error(ErrorCode::NotQklabDatabase, path + " is not a file, so not a qklab database");
    if (std::filesystem::file_size(path, ec) == 0 && !ec)
        throw Error(ErrorCode::NotFound, path + " is an empty file: it holds no runs yet");
    auto db = Database::openReadOnly(path, false);
    try {
        checkIdentity(*db);  // the first read: a WAL file needs its -shm index here
    } catch (const Error& e) {
        if (e.code() != ErrorCode::Database) throw;
        // Read-only media: no WAL index can be created. Nobody can be writing such a file, so
        // it may be read without locks, or from a private copy when its WAL holds data.
        db = walHasFrames(path) ? openPrivateCopy(path) : Database::openReadOnly(path, true);
        checkIdentity(*db);
    }
    if (db->queryInt("PRAGMA user_version") == 0)  // a SQLite file with no qklab schema yet
        throw Error(ErrorCode::NotFound, path + " holds no qklab runs yet (no schema)");
    return db;
}

std::string thisHostName() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
    return buf;
}

std::string utcNowIso8601() {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace qklab
