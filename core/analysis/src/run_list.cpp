// run_list.cpp — the run list's formats (qklab/analysis/run_list.h).
#include "qklab/analysis/run_list.h"

#include <cstdio>
#include <cstring>

#include "qklab/util/text_util.h"

namespace qklab {

const std::vector<RunListFormatRow>& runListFormats() {
    using F = RunListFormat;
    static const std::vector<RunListFormatRow> rows{
        {"final_val_loss", F::Loss},    {"final_loss", F::Loss}, {"max_logit_raw", F::Logit},
        {"max_logit_capped", F::Logit}, {"created_at", F::Time}, {"finished_at", F::Time},
    };
    return rows;
}

RunListFormat runListFormat(const RunColumn& c) {
    for (const RunListFormatRow& row : runListFormats())
        if (std::strcmp(row.column, c.name) == 0) return row.format;
    return RunListFormat::Plain;
}

std::string runListText(const RunColumn& c, const RunInfo& r) {
    const ColumnValue v = c.get(r);
    if (std::holds_alternative<std::monostate>(v)) return "-";
    const auto number = numberOf(v);
    const RunListFormat format = runListFormat(c);
    if (number && (format == RunListFormat::Loss || format == RunListFormat::Logit)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, format == RunListFormat::Loss ? "%.4f" : "%.4g", *number);
        return buf;
    }
    // Names and dates come from the file: escaped, so that ESC[2J cannot clear the screen.
    return printableText(csvText(v));
}

}  // namespace qklab
