// run_list_test.cpp — the run list's formats (qklab/analysis/run_list.h): each names a run
// column, and the cells are written as the CLI's `list` always wrote them.
#include "qklab/analysis/run_list.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace qklab;

namespace {

std::string cell(const char* column, const RunInfo& r) {
    const RunColumn* c = findColumn(runColumns(), column);
    EXPECT_NE(c, nullptr) << column;
    return c ? runListText(*c, r) : "";
}

}  // namespace

TEST(RunList, EveryFormatNamesOneRunColumn) {
    std::set<std::string> seen;
    for (const RunListFormatRow& row : runListFormats()) {
        EXPECT_NE(findColumn(runColumns(), row.column), nullptr) << row.column;
        EXPECT_TRUE(seen.insert(row.column).second) << row.column << " is formatted twice";
    }
    EXPECT_EQ(runListFormat(*findColumn(runColumns(), "name")), RunListFormat::Plain);
}

TEST(RunList, LossesHaveFourDecimalsLogitsFourDigitsAndTextIsEscaped) {
    RunInfo r;
    r.name = "a\x1b[2Jb";
    r.finalLoss = 3.343782424926758;
    r.maxLogitRaw = 1.123518943786621;
    r.finalValLoss = std::nan("");
    r.stepsDone = 20;
    r.createdAt = "2026-12-04T08:06:39Z";
    EXPECT_EQ(cell("final_loss", r), "3.3438");
    EXPECT_EQ(cell("final_val_loss", r), "nan");
    EXPECT_EQ(cell("max_logit_raw", r), "1.124");
    EXPECT_EQ(cell("steps_done", r), "20");
    EXPECT_EQ(cell("created_at", r), "2026-12-04T08:06:39Z");
    EXPECT_EQ(cell("name", r).find('\x1b'), std::string::npos) << cell("name", r);
    r.maxLogitRaw.reset();
    EXPECT_EQ(cell("max_logit_raw", r), "-");
}
