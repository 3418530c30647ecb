// qklab/analysis/run_list.h — how the run list writes a run column. The store's table
// (runColumns(), qklab/store/record_columns.h) says what a column holds; this table says how the
// readers that print it write it: the CLI's `list` and the app's run list.
#pragma once

#include <string>
#include <vector>

#include "qklab/store/record_columns.h"

namespace qklab {

// Plain: as stored; Loss: 4 decimals; Logit: 4 significant digits; Time: an ISO 8601 time,
// which the app shows in local time.
enum class RunListFormat { Plain, Loss, Logit, Time };

struct RunListFormatRow {
    const char* column;  // a run column's name
    RunListFormat format;
};
// Every run column written other than plainly, once.
const std::vector<RunListFormatRow>& runListFormats();
// The format of run column `c` (Plain where the table does not name it).
RunListFormat runListFormat(const RunColumn& c);

// A run-list cell as the CLI prints it: "-" when absent, losses with 4 decimals, logits with 4
// significant digits, text made printable (printableText).
std::string runListText(const RunColumn& c, const RunInfo& r);

}  // namespace qklab
