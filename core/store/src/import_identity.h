// import_identity.h — when a run or a sweep of another qklab file is the one here with the
// same UUID (import_identity.cpp), and the per-run tables an import copies.
//
// A UUID is no proof: anyone can copy one out of `export --format json`. A source run may
// update the run here that has its UUID only when it is provably that run continued, and a
// source sweep may add its runs to the sweep here that has its UUID only when it is the same
// grid. Otherwise the import is refused (store_import.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sqlite_db.h"

namespace qklab {

// Every per-run table an import copies (checkpoints aside: their files are copied).
extern const char* const kImportedRunTables[11];

bool hasTable(Database& db, const std::string& table);
// Columns of `table` that both files have, in dst's order, less those in `skip`.
std::vector<std::string> sharedColumns(Database& src, Database& dst, const std::string& table,
                                       const std::set<std::string>& skip);

// "" when a source sweep (definition_json and points as stored there) is the same grid as ours:
// the same base preset, set, axes, zip groups and seeds, and as many points. Otherwise what
// differs, in words. Its name and "why" may differ.
std::string sweepDifference(const std::string& ourDefinition, int64_t ourPoints,
                            const std::string& theirDefinition, int64_t theirPoints);

// A source run (id srcId in `src`, schema srcVersion) that claims to continue run dstId of
// `dst`, and the sweep here it would belong to (its sweep found by UUID, or none).
struct Continuation {
    Database& src;
    int srcVersion;
    int64_t srcId;
    Database& dst;
    int64_t dstId;
    std::optional<int64_t> sweepHere;
};

// "" when the source run is run dstId continued: the same config (config_json, and the user's
// config of a run logged from Python), the same sweep and point, and every row run dstId holds
// found unchanged in the source, or every row before dstId's newest checkpoint (a copy resumed
// from it, which computed the steps after it again). Otherwise why not, in words.
std::string continuationRefusal(const Continuation& c);

}  // namespace qklab
