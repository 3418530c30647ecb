// compare_command.cpp — `qklab-cli compare`: the config differences and a summary table of
// stored runs.
#include "compare_command.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "qklab/analysis/alignment.h"
#include "qklab/analysis/compare.h"
#include "qklab/analysis/spikes.h"
#include "qklab/store/run_store.h"
#include "qklab/util/error.h"

namespace qklab::cli {
namespace {

using Table = std::vector<std::vector<std::string>>;

// A cell wider than this wraps onto more lines: a preset's `why` is a paragraph, and on one
// line it made the diff wider than any terminal (and every other column with it).
constexpr size_t kMaxCellWidth = 40;

// Columns the terminal gives the text: UTF-8 continuation bytes take none.
size_t displayWidth(const std::string& s) {
    return size_t(std::count_if(s.begin(), s.end(), [](char ch) { return (ch & 0xC0) != 0x80; }));
}

// The byte offset after the first `columns` characters of `s`.
size_t offsetAfter(const std::string& s, size_t columns) {
    size_t i = 0;
    for (size_t seen = 0; i < s.size(); ++i)
        if ((s[i] & 0xC0) != 0x80 && seen++ == columns) break;
    return i;
}

// Lines of at most `width` columns, broken at the last space (dropped) or after the last comma
// that fits (JSON has no spaces), else mid-word; never inside a UTF-8 character.
std::vector<std::string> wrapCell(std::string rest, size_t width) {
    std::vector<std::string> lines;
    while (displayWidth(rest) > width) {
        const size_t cut = offsetAfter(rest, width);  // < rest.size(): the text is wider
        size_t end = cut, next = cut;
        for (size_t i = cut; i > 0; --i) {
            if (rest[i] == ' ') {
                end = i;
                next = i + 1;
                break;
            }
            if (rest[i - 1] == ',') {
                end = next = i;
                break;
            }
        }
        std::string line = rest.substr(0, end);
        while (!line.empty() && line.back() == ' ') line.pop_back();
        lines.push_back(line);
        rest.erase(0, next);
    }
    lines.push_back(rest);
    return lines;
}

// Columns padded to their widest line; the first left-aligned, the rest as `rightAlign` says
// (numbers line up on the right). A long cell wraps (wrapCell) and its row takes as many
// lines. Cells are names and config values from the database, so control characters are
// escaped (a name holding ESC[2J must not clear the terminal).
void printTable(const Table& cells, bool rightAlign) {
    std::vector<std::vector<std::vector<std::string>>> rows;  // row, cell, line
    std::vector<size_t> width;
    for (const auto& row : cells) {
        rows.emplace_back();
        for (size_t c = 0; c < row.size(); ++c) {
            rows.back().push_back(wrapCell(printableText(row[c]), kMaxCellWidth));
            if (width.size() <= c) width.push_back(0);
            for (const auto& line : rows.back().back())
                width[c] = std::max(width[c], displayWidth(line));
        }
    }
    for (const auto& row : rows) {
        size_t height = 0;
        for (const auto& cell : row) height = std::max(height, cell.size());
        for (size_t l = 0; l < height; ++l) {
            std::string line;
            for (size_t c = 0; c < row.size(); ++c) {
                const std::string text = l < row[c].size() ? row[c][l] : std::string();
                const std::string pad(width[c] - displayWidth(text), ' ');
                if (c > 0) line += "  ";
                line += c > 0 && rightAlign ? pad + text : text + pad;
            }
            while (!line.empty() && line.back() == ' ') line.pop_back();
            std::cout << line << "\n";
        }
    }
}

// --group-by KEY in JSON: each group's value, label and run ids.
nlohmann::ordered_json groupsJson(const std::vector<RunInfo>& runs,
                                  const std::vector<ComparedConfig>& configs,
                                  const std::string& key) {
    auto out = nlohmann::ordered_json::array();
    for (const RunGroup& g : groupByKey(configs, key)) {
        auto ids = nlohmann::ordered_json::array();
        for (size_t i : g.members) ids.push_back(runs[i].id);
        out.push_back({{"value", g.value}, {"label", g.label}, {"runs", ids}});
    }
    return out;
}

// Runs trained outside qklab, one line each, then what their config rows mean: qklab recorded
// only what it observed (the diff leaves the rest out as unknown); their own settings are the
// user.* rows above (the whole user config: show RUN).
void printOutsideQklab(const std::vector<RunInfo>& runs) {
    bool any = false;
    for (const RunInfo& r : runs) {
        if (!trainedOutsideQklab(r)) continue;
        std::cout << (any ? "" : "\n") << "run " << r.id << " '"
                  << printableText(r.name.substr(0, 80)) << "' was trained outside qklab ("
                  << printableText(r.source.substr(0, 80)) << ")\n";
        any = true;
    }
    if (any)
        std::cout << "  qklab recorded only what it observed of these runs (model shape, QK-norm, "
                     "softcap, MLA, probe settings); the rest of qklab's config is unknown, and "
                     "their own settings are the user.* rows (all of them: qklab-cli show RUN)\n";
}

// --align RULE: each run's anchor step (or none, and why), and the values at steps from it.
struct AlignedRun {
    Anchor anchor;
    // alignedMetrics() x alignedOffsets(); none where the run has no value there.
    std::vector<std::vector<std::optional<double>>> values;
};

AlignedRun alignRun(RunStore& store, const RunInfo& info, const AlignRule& rule) {
    const auto steps = store.stepMetrics(info.id);
    const auto probes = store.probeStats(info.id, -1);
    const auto spikes = store.spikes(info.id);
    const auto events = store.events(info.id);
    const AlignRows rows{&info, &steps, &probes, &spikes, &events};
    AlignedRun out{findAnchor(rows, rule), {}};
    for (const auto& metric : alignedMetrics()) {
        out.values.emplace_back();
        for (int64_t offset : alignedOffsets())
            out.values.back().push_back(out.anchor.step
                                            ? metricAtStep(rows, metric, *out.anchor.step + offset)
                                            : std::nullopt);
    }
    return out;
}

std::string offsetText(int64_t offset) {
    return (offset > 0 ? "+" : "") + std::to_string(offset);
}

nlohmann::ordered_json alignJson(const std::vector<RunInfo>& runs, const AlignRule& rule,
                                 const std::vector<AlignedRun>& aligned) {
    nlohmann::ordered_json out;
    out["rule"] = alignRuleText(rule);
    out["anchor"] = alignAnchorName(rule);
    out["offsets"] = alignedOffsets();
    out["runs"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < runs.size(); ++i) {
        const Anchor& a = aligned[i].anchor;
        nlohmann::ordered_json run{{"id", runs[i].id}, {"name", runs[i].name}};
        run["anchor_step"] = a.step ? nlohmann::ordered_json(*a.step) : nullptr;
        run[a.step ? "at" : "never"] = a.what;
        run["values"] = nlohmann::ordered_json::object();
        for (size_t m = 0; m < alignedMetrics().size(); ++m) {
            auto values = nlohmann::ordered_json::array();
            for (const auto& v : aligned[i].values[m])  // JSON has no NaN: null
                values.push_back(v && std::isfinite(*v) ? nlohmann::ordered_json(*v) : nullptr);
            run["values"][alignedMetrics()[m]] = values;
        }
        out["runs"].push_back(run);
    }
    return out;
}

void printJson(const std::vector<RunInfo>& runs, const std::vector<ComparedConfig>& configs,
               const std::vector<RunSummary>& summaries, const std::string& groupBy,
               const std::optional<AlignRule>& rule, const std::vector<AlignedRun>& aligned) {
    nlohmann::ordered_json out;
    out["runs"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < runs.size(); ++i)
        out["runs"].push_back({{"id", runs[i].id},
                               {"name", runs[i].name},
                               {"source", runs[i].source},
                               {"user_config", nlohmann::ordered_json(configs[i].user)}});
    // Registry order, then user.*, as in the text table; numbers stay numbers.
    out["diff"] = nlohmann::ordered_json::object();
    for (const auto& row : configDiff(configs)) {
        if (!row.differs) continue;
        auto values = nlohmann::ordered_json::array();
        for (const auto& v : row.jsonValues) values.push_back(nlohmann::ordered_json(v));
        out["diff"][row.key] = values;
    }
    out["summary"] = nlohmann::ordered_json::array();
    for (const auto& s : summaries)
        out["summary"].push_back(nlohmann::ordered_json(summaryToJson(s)));
    out["seed_groups"] = nlohmann::ordered_json::array();
    for (const auto& group : seedGroups(configs)) {
        auto ids = nlohmann::ordered_json::array();
        for (size_t i : group) ids.push_back(runs[i].id);
        out["seed_groups"].push_back(ids);
    }
    if (!groupBy.empty()) out["groups"] = groupsJson(runs, configs, groupBy);
    if (rule) out["align"] = alignJson(runs, *rule, aligned);
    std::cout << out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

void printDiff(const std::vector<RunInfo>& runs, const std::vector<ComparedConfig>& configs,
               bool allKeys) {
    Table table{{"key"}};
    for (const auto& r : runs) table[0].push_back(r.name);
    for (const auto& row : configDiff(configs)) {
        if (!row.differs && !allKeys) continue;
        table.push_back({row.key});
        table.back().insert(table.back().end(), row.values.begin(), row.values.end());
    }
    if (table.size() == 1) {
        std::cout << "config: no differences (--all shows every key)\n";
        return;
    }
    std::cout << (allKeys ? "config:\n" : "config differences:\n");
    printTable(table, false);
}

void printSummary(const std::vector<RunSummary>& summaries) {
    Table table{{"run"}};
    for (const auto& c : summaryColumns()) table[0].push_back(c.title);
    for (const auto& s : summaries) {
        table.push_back({s.name});
        for (const auto& c : summaryColumns()) table.back().push_back(c.text(s));
    }
    std::cout << "\nsummary:\n";
    printTable(table, true);
}

// Runs that differ only in their seed: the spread between them is noise, not the settings.
void printSeedGroups(const std::vector<RunInfo>& runs, const std::vector<ComparedConfig>& configs) {
    for (const auto& group : seedGroups(configs)) {
        if (group.size() < 2) continue;
        std::string names;
        for (size_t i : group) names += (names.empty() ? "" : ", ") + printableText(runs[i].name);
        std::cout << "\nsame config but for run.seed: " << names << "\n";
    }
}

// --group-by KEY: the runs by their value of KEY, one line a group.
void printGroups(const std::vector<RunInfo>& runs, const std::vector<ComparedConfig>& configs,
                 const std::string& key) {
    std::cout << "\ngroups by " << printableText(key) << ":\n";
    for (const RunGroup& g : groupByKey(configs, key)) {
        std::string names;
        for (size_t i : g.members)
            names += (names.empty() ? "" : ", ") + printableText(runs[i].name);
        std::cout << "  " << printableText(g.label) << ": " << names << "\n";
    }
}

// Every run's anchor ("never: why" for a run without one: listed, not dropped), then the values
// at steps from it of the runs that have one.
void printAligned(const std::vector<RunInfo>& runs, const AlignRule& rule,
                  const std::vector<AlignedRun>& aligned) {
    std::cout << "\naligned at " << alignAnchorName(rule) << " (" << alignRuleText(rule) << "):\n";
    Table anchors{{"run", "anchor step", "at"}};
    for (size_t i = 0; i < runs.size(); ++i) {
        const Anchor& a = aligned[i].anchor;
        anchors.push_back({runs[i].name, a.step ? std::to_string(*a.step) : "never", a.what});
    }
    printTable(anchors, false);
    Table values{{"run, metric"}};  // one left-aligned column: the rest are numbers
    for (int64_t offset : alignedOffsets()) values[0].push_back(offsetText(offset));
    for (size_t i = 0; i < runs.size(); ++i) {
        if (!aligned[i].anchor.step) continue;
        for (size_t m = 0; m < alignedMetrics().size(); ++m) {
            values.push_back({runs[i].name + ", " + thresholdMetricTitle(alignedMetrics()[m])});
            for (const auto& v : aligned[i].values[m])
                values.back().push_back(v ? diagnosisNumber(*v) : "-");
        }
    }
    if (values.size() == 1) return;
    std::cout << "\nvalues at steps from the anchor (raw max logit: the latest probe at or "
                 "before the step):\n";
    printTable(values, true);
}

// The option's help, from the table of rules.
std::string alignHelp() {
    std::string help = "align the runs at their own anchor and print the values at steps from it:";
    for (const AlignKindInfo& k : alignKinds())
        help += std::string("\n  ") + k.syntax + ": " + k.help;
    return help;
}

// What the run trained with, its user config included. An unreadable config or intervention is
// compared as the defaults / left out, and said: a silent fallback would show a difference that is
// not there.
ComparedConfig trainedConfig(const RunInfo& info) {
    try {
        return comparedConfig(info, /*strict=*/true);
    } catch (const Error& e) {
        std::cerr << "warning: " << e.what() << " (compared as far as it could be read)\n";
        return comparedConfig(info);
    }
}

}  // namespace

void addCompareOptions(CLI::App& cmd, CompareArgs& args, Database& db) {
    cmd.add_option("runs", args.runRefs, "run ids or names (at least two)")->required();
    cmd.add_flag("--json", args.asJson, "machine-readable output");
    cmd.add_flag("--all", args.allKeys, "every config key, not only the differences");
    cmd.add_option("--group-by", args.groupBy,
                   "list the runs grouped by their value of this config key (optim.lr; "
                   "user.lr for the lr of a Python run's user config)");
    cmd.add_option("--align", args.align, alignHelp());
    db.addOption(cmd, args.dbPath);
}

// Prints the comparison on stdout. An unknown run is NotFound (exit 2).
int cmdCompare(const CompareArgs& o) {
    if (o.runRefs.size() < 2) {
        std::cerr << "qklab-cli compare: needs at least 2 runs, got " << o.runRefs.size() << "\n";
        return 2;
    }
    // A bad rule exits 2 before anything is read.
    std::optional<AlignRule> rule;
    if (!o.align.empty()) rule = parseAlignRule(o.align);
    // Readers never write: no migration, no status update, read-only media work.
    std::unique_ptr<RunStore> opened;
    try {
        opened = std::make_unique<RunStore>(o.dbPath, StoreAccess::ReadOnly);
    } catch (const Error& e) {
        if (e.code() != ErrorCode::MissingFile) throw;
        throw Error(ErrorCode::NotFound, std::string(e.what()) + ", so there is no run '" +
                                             o.runRefs.front().substr(0, 80) + "'");
    }
    RunStore& store = *opened;
    std::vector<RunInfo> runs;
    std::vector<ComparedConfig> configs;
    std::vector<RunSummary> summaries;
    for (const auto& ref : o.runRefs) {
        runs.push_back(store.findRun(ref));
        configs.push_back(trainedConfig(runs.back()));
        summaries.push_back(summarizeRun(store, runs.back().id));
    }
    if (!o.groupBy.empty()) groupByKey(configs, o.groupBy);  // an unknown key: exit 2 first
    std::vector<AlignedRun> aligned;
    if (rule)
        for (const auto& r : runs) aligned.push_back(alignRun(store, r, *rule));
    if (o.asJson) {
        printJson(runs, configs, summaries, o.groupBy, rule, aligned);
        return 0;
    }
    printDiff(runs, configs, o.allKeys);
    printOutsideQklab(runs);
    printSeedGroups(runs, configs);
    if (!o.groupBy.empty()) printGroups(runs, configs, o.groupBy);
    printSummary(summaries);
    if (rule) printAligned(runs, *rule, aligned);
    return 0;
}

}  // namespace qklab::cli
