// value_command.cpp — `qklab-cli value`: the numbers a lesson placeholder stands for, read
// from a stored run. Scripts check stated numbers with it (scripts/check-claims.py), with the
// same syntax and meaning as the lessons' {{…}} (qklab/lesson_values.h).
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "qklab/error.h"
#include "qklab/lesson_values.h"
#include "stored_runs.h"

namespace qklab::cli {

namespace {

// "logit_max_raw max" or "{{logit_max_raw max}}": the one placeholder it holds.
LessonValue parseExpression(const std::string& expression) {
    const bool braced = expression.rfind("{{", 0) == 0;
    const std::vector<LessonValue> values =
        lessonValuesIn(braced ? expression : "{{" + expression + "}}");
    if (values.size() != 1 || expression.find("}}") != expression.rfind("}}"))
        throw Error(ErrorCode::InvalidConfig,
                    "value: \"" + expression + "\" is not one expression such as \"loss last\"");
    if (!values.front().run.empty())
        throw Error(ErrorCode::InvalidConfig,
                    "value: \"" + expression + "\": run= is the lessons' own; name the run first");
    return values.front();
}

std::string exactText(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return buf;
}

}  // namespace

void addValueOptions(CLI::App& cmd, ValueArgs& args, Database& db) {
    cmd.add_option("run", args.runRef, "run id or name")->required();
    cmd.add_option(
           "expression", args.expressions,
           "a lesson placeholder without its braces: \"logit_max_raw max\", \"loss at=10\", "
           "\"entropy last layer=0\", \"logit_max_raw first_above=100\" (docs/LESSONS.md)")
        ->required();
    cmd.add_flag("--json", args.asJson,
                 "one JSON object: each expression and its value (null: none)");
    db.addOption(cmd, args.dbPath);
}

int cmdValue(const ValueArgs& args) {
    std::vector<LessonValue> values;
    for (const std::string& e : args.expressions) values.push_back(parseExpression(e));
    const std::unique_ptr<RunStore> store = openStoreToRead(args.dbPath, args.runRef);
    const int64_t id = store->findRun(args.runRef).id;
    const std::vector<StepMetrics> steps = store->stepMetrics(id);
    const std::vector<ProbeStats> probes = store->probeStats(id, -1);
    const LessonRunRows rows{&steps, &probes};
    nlohmann::json j = nlohmann::json::object();
    for (size_t i = 0; i < values.size(); ++i) {
        const std::optional<double> x = lessonValueNumber(values[i], rows);
        if (args.asJson)
            j[args.expressions[i]] = x ? nlohmann::json(*x) : nlohmann::json(nullptr);
        else
            std::cout << (x ? exactText(*x) : "none") << "\n";
    }
    if (args.asJson) std::cout << jsonText(j, 2) << "\n";
    return 0;
}

}  // namespace qklab::cli
