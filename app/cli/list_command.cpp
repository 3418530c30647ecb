// list_command.cpp — `qklab-cli list`: the stored runs, as a table or JSON.
#include "list_command.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "qklab/store/record_columns.h"
#include "qklab/store/run_export.h"
#include "stored_runs.h"

namespace qklab::cli {
namespace {

// A column per run-list column (qklab/store/record_columns.h), as wide as its widest cell: text on
// the left, numbers on the right. Names and dates come from the file: runListText escapes them,
// so that ESC[2J cannot clear the screen.
void printRunTable(const std::vector<RunInfo>& runs) {
    const std::vector<const RunColumn*> columns = listedRunColumns();
    std::vector<std::vector<std::string>> rows(1);
    for (const RunColumn* c : columns) rows[0].push_back(c->title);
    for (const RunInfo& r : runs) {
        rows.emplace_back();
        for (const RunColumn* c : columns) rows.back().push_back(runListText(*c, r));
    }
    std::vector<size_t> width(columns.size());
    for (const auto& row : rows)
        for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    for (const auto& row : rows) {
        std::string line;
        for (size_t i = 0; i < row.size(); ++i) {
            const std::string pad(width[i] - row[i].size(), ' ');
            const bool left = columns[i]->type == ColumnType::Text;
            line += (i ? "  " : "") + (left ? row[i] + pad : pad + row[i]);
        }
        std::printf("%s\n", line.substr(0, line.find_last_not_of(' ') + 1).c_str());
    }
}

}  // namespace

void addListOptions(CLI::App& cmd, ListArgs& args, Database& db) {
    cmd.add_flag("--json", args.asJson, "machine-readable output");
    db.addOption(cmd, args.dbPath);
}

int cmdList(const ListArgs& args) {
    const std::unique_ptr<RunStore> store = openStoreToRead(args.dbPath, "");
    const auto runs = store->listRuns();
    if (!args.asJson) {
        printRunTable(runs);
        return 0;
    }
    auto arr = nlohmann::json::array();
    for (const auto& r : runs) arr.push_back(runSummaryJson(*store, r.id));
    std::cout << jsonText(arr, 2) << "\n";
    return 0;
}

}  // namespace qklab::cli
