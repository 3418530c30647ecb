// stored_runs.h — what the commands that read stored runs share: the store opened for reading,
// JSON for the terminal, and an export file written whole or not at all.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "qklab/store/run_store.h"

namespace qklab::cli {

// The store, read-only: readers never write (no migration, no status update: a dead writer's
// run shows as interrupted), and a database on read-only media can be read. A missing file is
// "no run `runRef`" (NotFound) when a run is asked for.
std::unique_ptr<RunStore> openStoreToRead(const std::string& dbPath, const std::string& runRef);

// JSON for the terminal or a file: text from a database that is not UTF-8 (someone else's
// file) becomes U+FFFD instead of an exception halfway through the output.
std::string jsonText(const nlohmann::json& j, int indent);

// Writes `text` to `path` next to it and renames it over it, so that a failed or interrupted
// export never leaves half a file. Refuses the database being read (dbPath, its companions),
// special files, and any SQLite database unless `force`.
void writeExport(const std::string& text, const std::string& path, const std::string& dbPath,
                 bool force);

}  // namespace qklab::cli
