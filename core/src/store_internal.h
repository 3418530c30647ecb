// store_internal.h — what run_store.cpp shares with the store's other translation units
// (store_sweeps.cpp): reading a `runs` row the same way everywhere.
#pragma once

#include <string>

#include "qklab/run_store.h"
#include "sqlite_db.h"

namespace qklab {

constexpr int kSweepsVersion = 8;   // the schema that added sweeps, run UUIDs and coordinates
constexpr int kQkClipsVersion = 9;  // the schema that added the qk_clips table

// The select list (table alias r) that readRun decodes, for a file of schema `version`.
std::string runColumns(int version);
// One row of SELECT runColumns(..): a dead writer's running run reads as interrupted.
RunInfo readRun(const Statement& st);
// A running run or sweep on this host whose process is gone.
bool writerIsGone(int64_t pid, const std::string& host);

}  // namespace qklab
