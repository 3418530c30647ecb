// import_check.h — the checks an import runs on every row of the file it copies from
// (import_check.cpp), before store_import.cpp copies anything.
#pragma once

#include <string>

#include "sqlite_db.h"

namespace qklab {

// Every row of the qklab database `src` (schema `version`, named `path` in messages) that an
// import would copy is checked: the first bad value throws Error{NotQklabDatabase} naming the
// file, the run or sweep and the column.
void checkImportRows(Database& src, int version, const std::string& path);

}  // namespace qklab
