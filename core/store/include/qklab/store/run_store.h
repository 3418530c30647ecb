// qklab/store/run_store.h — the SQLite run store.
//
// One file holds many runs. WAL journal (checked at open), foreign keys on, schema migrated by
// PRAGMA user_version, application_id marks the file as qklab's. One writer per run batches
// rows per transaction (RunWriter); any number of readers (RunStore instances, other
// processes) read alongside. A run whose writing process died shows as Interrupted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "qklab/config/names.h"
#include "qklab/store/records.h"
#include "qklab/util/printable_text.h"  // what every reader that prints a stored name uses

namespace qklab {

class Database;  // sqlite_db.h

// Where a run sits in a sweep (schema 8): the sweep's id in this file, the grid point's
// index and its coordinates (a JSON object, dotted key -> value).
struct SweepMembership {
    int64_t sweepId = 0;
    int64_t point = -1;
    std::string coordsJson = "{}";
};

struct RunInfo {
    int64_t id = 0;
    std::string name;
    RunStatus status = RunStatus::Running;
    std::string configJson;
    int64_t seed = 0;
    std::string device, torchVersion, appVersion;
    std::string createdAt, finishedAt;   // ISO 8601 UTC
    std::string notes, tags;             // tags: comma separated
    int64_t stepsDone = 0;               // last step whose metrics are stored (+1)
    std::optional<double> finalLoss;     // the last finite training-step loss
    std::optional<double> finalValLoss;  // the latest validation loss (NaN when it diverged)
    std::optional<double> maxLogitRaw, maxLogitCapped;
    int64_t spikes = 0;
    int64_t logitAlarms = 0;
    int64_t qkClips = 0;        // QK-Clip rows (one per head and step clipped; schema 9)
    std::string statusMessage;  // why it failed / diverged
    // The user's mid-run interventions (source "user"), by step: with the config's own
    // events they say what the run actually trained with.
    std::vector<EventRecord> interventions;
    std::string uuid;  // unique across files: merging and importing skip a run already present
    std::optional<SweepMembership> sweep;
    // "qklab" for a run qklab trained; "python: <model kind>" for one the user trained and
    // logged through the Python package (schema 11), whose config is userConfigJson.
    std::string source = "qklab";
    std::string userConfigJson;
};

// A sweep (schema 8): its normalised definition (qklab/config/sweep.h), grid size and status
// ("running", "stopped", "finished", "partial" after a merge of some shards; a running sweep
// whose process is gone reads as "interrupted").
struct SweepInfo {
    int64_t id = 0;
    std::string uuid, name, definitionJson;
    int64_t points = 0;
    std::string status = "running";
    std::string createdAt, updatedAt;
};

// What RunStore::importRuns did with one source file.
struct ImportResult {
    int64_t imported = 0, skipped = 0;  // skipped: a run with the same UUID was already here
    // Runs already here (same UUID) updated, same id, name, notes and tags, because the source
    // holds more of them (more steps, or as many and an end: a shard merged while its task
    // still ran) and is provably that run continued (see importRuns).
    int64_t updated = 0;
    // "old -> new" where a name was taken by another run, or the name rule refuses it
    // (nameUnderTheRule; "scalar old -> new" for a custom scalar).
    std::vector<std::string> renamed;
    std::vector<int64_t> sweepIds;  // sweeps (in this store) the imported runs belong to
    // Lines for the user: checkpoints not copied (and why), runs still being written.
    std::vector<std::string> notes;
};

// Throws, as RunStore::importRuns would, unless sourcePath is a qklab database whose every row
// an import accepts (Error{NotQklabDatabase} naming the file, the run and the column, ...).
// Reads only: `merge` and `import` check every source before creating or opening the target.
void checkImportSource(const std::string& sourcePath);

// Readers (list, show, export, the app's views) never write: a read-only store opens an
// existing file without creating, migrating or updating anything, also on read-only media.
enum class StoreAccess { ReadWrite, ReadOnly };

// A run the user trained in their own loop and logged through the Python package (source
// "python: ..."): qklab has its rows but neither its model nor its optimizer.
bool trainedOutsideQklab(const RunInfo& r);
// Why qklab cannot `action` such a run ("resume", "generate from", "intervene in"): "run 3 was
// trained outside qklab (python: hf-llama): qklab cannot resume a model it does not have";
// "" for qklab's own runs.
std::string outsideQklabReason(const RunInfo& r, const std::string& action);

// The folder that holds every checkpoint file of the database at dbPath: "<dbPath>.checkpoints",
// with one "run-<id>" folder per run ("" for ":memory:"). The checkpoints table stores paths
// relative to it ("run-7/step-621.pt"), and qklab opens or deletes checkpoint files only there.
std::string checkpointFolder(const std::string& dbPath);

// A comparison of runs (the app's Compare tab) saved under a name. runIds keep the display
// order and outlive their runs: a deleted run's id stays, and readers report it as missing.
// settingsJson is the app's own view settings (a JSON object the store does not interpret).
struct SavedComparison {
    static constexpr size_t kMinRuns = 2, kMaxRuns = 12;  // what saveComparison accepts
    std::string name;
    std::vector<int64_t> runIds;
    std::string settingsJson = "{}";
    std::string createdAt, updatedAt;  // ISO 8601 UTC, set by the store
};

class RunStore {
  public:
    // Opens (creating and migrating when new or empty) the database at path; ":memory:" works.
    // Throws Error{NotQklabDatabase} for a corrupt file or one written by another program.
    // ReadOnly: throws MissingFile when there is no file; an older schema is read as it is.
    explicit RunStore(const std::string& path, StoreAccess access = StoreAccess::ReadWrite);
    ~RunStore();
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    const std::string& path() const;
    int schemaVersion() const;
    bool readOnly() const;

    // Runs still marked running whose process is gone become Interrupted. Returns how many.
    // (Reads show such runs as interrupted anyway; a read-only store writes nothing.)
    int markInterruptedRuns();

    // Resuming: claims the run for this process in one IMMEDIATE transaction (its status
    // must be stopped, interrupted, failed or diverged; it becomes running with this pid), so
    // that a second resume started at the same time is refused ("already being resumed").
    // Returns the run as it was. releaseResumeClaim puts the old status back when the resume
    // could not start.
    RunInfo claimForResume(int64_t runId);
    void releaseResumeClaim(const RunInfo& before);
    // The newest checkpoint whose file exists in the run's own checkpoint folder. Rows whose
    // files are gone stay (the file may come back: only a writer that replaces them drops them).
    std::optional<CheckpointInfo> newestUsableCheckpoint(int64_t runId);

    std::vector<RunInfo> listRuns();
    RunInfo run(int64_t id);                       // throws Error{NotFound}
    RunInfo findRun(const std::string& idOrName);  // id or unique name; throws NotFound
    std::vector<StepMetrics> stepMetrics(int64_t runId, int64_t fromStep = 0);
    std::vector<ProbeStats> probeStats(int64_t runId, std::optional<int32_t> head = std::nullopt,
                                       int64_t fromStep = 0);
    std::vector<LogitHistogram> histograms(int64_t runId, int32_t layer, int32_t head);
    std::vector<int64_t> histogramSteps(int64_t runId);
    std::vector<AttentionMap> attentionMaps(int64_t runId, int64_t step);
    std::vector<int64_t> attentionMapSteps(int64_t runId);
    std::vector<Spike> spikes(int64_t runId);
    std::vector<LogitAlarm> logitAlarms(int64_t runId);  // by step, then layer
    // The heads QK-Clip scaled, by step, layer, head (none in a file from before schema 9).
    std::vector<QkClip> qkClips(int64_t runId);
    // What each change to the run did, by step and kind (none before schema 12).
    std::vector<ChangeReport> changeReports(int64_t runId);
    std::vector<Forecast> forecasts(int64_t runId);          // by step, then layer and head
    std::vector<CustomScalar> customScalars(int64_t runId);  // by name, then step
    std::vector<EventRecord> events(int64_t runId);
    // By step; each path resolved inside checkpointFolder(path()) (see CheckpointInfo).
    std::vector<CheckpointInfo> checkpoints(int64_t runId);
    int64_t maxRunId();  // cheap change detection for the GUI
    // Changes whenever another connection commits (PRAGMA data_version): with maxRunId() it
    // tells a polling GUI whether anything needs re-reading, without reading any table.
    int64_t dataVersion();

    void renameRun(int64_t id, const std::string& name);
    void setNotes(int64_t id, const std::string& notes);
    void setTags(int64_t id, const std::string& tags);
    void deleteRun(int64_t id);  // all rows of the run (checkpoint files stay)

    // Saved comparisons (schema 7). save inserts or replaces by name, keeping an existing
    // one's createdAt and setting updatedAt (c.createdAt / c.updatedAt are ignored). It refuses
    // (InvalidRequest) a name checkRunName would refuse, fewer than 2 or more than 12 run ids,
    // and settings that are not a JSON object. Readers work on a ReadOnly store; a file older
    // than schema 7 read as it is has none. comparison/deleteComparison throw NotFound.
    void saveComparison(const SavedComparison& c);
    std::vector<SavedComparison> comparisons();  // by name
    SavedComparison comparison(const std::string& name);
    void deleteComparison(const std::string& name);

    // Sweeps (schema 8). addSweep inserts the sweep as running, owned by this process, or
    // returns the id of the one with the same UUID (every shard of a Slurm sweep adds it); a
    // name taken by another sweep is refused (InvalidRequest). claimSweep makes a stopped or
    // interrupted sweep this process's again; a sweep whose process still runs is refused.
    // owned = false (a shard of a Slurm sweep): no process owns it; its status is "partial".
    int64_t addSweep(const SweepInfo& s, bool owned = true);
    void claimSweep(int64_t id);
    void setSweepStatus(int64_t id, const std::string& status);
    std::vector<SweepInfo> sweeps();  // by id
    SweepInfo sweep(int64_t id);      // throws NotFound
    SweepInfo findSweep(const std::string& idOrName);
    std::vector<RunInfo> sweepRuns(int64_t sweepId);  // by point, then id
    // A run whose process died (a crash) without writing its end: failed, with why. Only a
    // run still marked running changes.
    void markRunFailed(int64_t runId, const std::string& message);
    // The training loss of the run's first step (the loss at initialisation), if stored.
    std::optional<double> firstStepLoss(int64_t runId);

    // Copies every run of the qklab database at sourcePath (read only, never written) with all
    // its rows into this store: new ids, a taken name gets " (uuid prefix)" appended, and the
    // runs' sweeps are added or found by UUID. A run whose UUID is already here is skipped,
    // unless the source holds more of it (ImportResult::updated): then that run's rows are
    // replaced, provided the source is that run continued (the same config and sweep point,
    // every row of ours in it, or every row before our newest checkpoint), and the source's
    // checkpoints are added where it has none. A source sweep with a sweep's UUID here must be
    // the same grid. Otherwise Error{InvalidRequest} naming both and why, nothing stored.
    // Checkpoint files are copied into checkpointFolder(path()), or left out with a note;
    // none of this store's is ever overwritten or deleted. Every row is checked first
    // (checkImportSource); one transaction: all of a file or nothing (checkpoint files are
    // copied before it, so the write lock is brief).
    ImportResult importRuns(const std::string& sourcePath);
    // Several files, one after the other, each as importRuns: a bad file commits nothing of
    // itself, but the files before it stay imported. For all or nothing, checkImportSource
    // every file first (merge and import do).
    std::vector<ImportResult> importAll(const std::vector<std::string>& sourcePaths);

  private:
    std::unique_ptr<Database> m_db;
    bool m_readOnly = false;
    int m_version = 0;  // schema version of the file (a reader does not migrate it)
};

// $XDG_DATA_HOME/qklab/runs.db, or ~/.local/share/qklab/runs.db when XDG_DATA_HOME is unset
// or relative (home from $HOME, else the password database).
std::string defaultDatabasePath();

// A random RFC 4122 version-4 UUID, lower-case hex with dashes (runs and sweeps carry one).
std::string newUuid();

}  // namespace qklab
