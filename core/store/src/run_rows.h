// run_rows.h — reading a `runs` row the same way everywhere (run_store.cpp defines it;
// store_sweeps.cpp and store_import.cpp read runs too), and telling whether a run's writer is gone.
#pragma once

#include <string>

#include "qklab/store/run_store.h"
#include "sqlite_db.h"

namespace qklab {

// The select list (table alias r) that readRun decodes, for a file of schema `version`: the
// columns of runColumns() (qklab/store/record_columns.h), then the writer's pid and host.
std::string runSelectList(int version);
// One row of SELECT runSelectList(..): a dead writer's running run reads as interrupted.
RunInfo readRun(const Statement& st);

// A running run or sweep on this host whose process is gone.
bool writerIsGone(int64_t pid, const std::string& host);

}  // namespace qklab
