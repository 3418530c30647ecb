// store_internal.h — what run_store.cpp shares with the store's other translation units
// (store_sweeps.cpp, store_import.cpp, run_writer.cpp): reading a `runs` row the same way
// everywhere, and reading checkpoint paths.
#pragma once

#include <memory>
#include <string>

#include "qklab/run_store.h"
#include "store/schema.h"
#include "store/sqlite_db.h"

namespace qklab {

// The select list (table alias r) that readRun decodes, for a file of schema `version`: the
// columns of runColumns() (qklab/record_columns.h), then the writer's pid and host.
std::string runSelectList(int version);
// One row of SELECT runSelectList(..): a dead writer's running run reads as interrupted.
RunInfo readRun(const Statement& st);

// A running run or sweep on this host whose process is gone.
bool writerIsGone(int64_t pid, const std::string& host);

// Every row of the qklab database `src` (schema `version`, named `path` in messages) that an
// import would copy is checked (import_check.cpp): the first bad value throws
// Error{NotQklabDatabase} naming the file, the run or sweep and the column.
void checkImportRows(Database& src, int version, const std::string& path);

// ---- checkpoint paths (checkpoint_paths.cpp) ----

// What the checkpoints table stores for `file`, a checkpoint of run `runId` of the database at
// dbPath: "run-<id>/<name>", relative to checkpointFolder(dbPath), when the file is directly in
// the run's folder. Any other path is returned as given (and reads back refused).
std::string storedCheckpointPath(const std::string& dbPath, int64_t runId, const std::string& file);
// A stored checkpoint path of run `runId` made usable: `path` is the absolute file, directly in
// the run's own folder of the database at dbPath after symlinks and ".." are resolved, or ""
// with `refused` saying why. Reads the current relative form and the cwd-relative or absolute
// paths that older builds stored.
CheckpointInfo resolveCheckpoint(const std::string& dbPath, int64_t runId, int64_t step,
                                 const std::string& stored);

}  // namespace qklab
