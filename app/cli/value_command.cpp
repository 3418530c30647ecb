// value_command.cpp — `qklab-cli value`: the numbers a lesson placeholder stands for, read
// from a stored run. Scripts check stated numbers with it (scripts/check-claims.py), with the
// same syntax and meaning as the lessons' {{…}} (qklab/analysis/lesson_values.h).
#include "value_command.h"

#include <cmath>
#include <cstdio>
#include <iostream>

#include "qklab/analysis/lesson_values.h"
#include "qklab/util/error.h"
#include "qklab/util/input_file.h"
#include "stored_runs.h"

namespace qklab::cli {

namespace {

// "logit_max_raw max" or "{{logit_max_raw max}}": the one placeholder it holds.
LessonValue parseExpression(const std::string& expression) {
    const bool braced = expression.rfind("{{", 0) == 0;
    const std::string placeholder = braced ? expression : "{{" + expression + "}}";
    // Exactly "{{…}}": one pair of braces, nothing after them.
    const bool one = placeholder.find("{{", 2) == std::string::npos &&
                     placeholder.find("}}") == placeholder.size() - 2;
    const std::vector<LessonValue> values =
        one ? lessonValuesIn(placeholder) : std::vector<LessonValue>{};
    if (values.size() != 1)
        throw Error(ErrorCode::InvalidConfig, "value: " + quotedValue(expression, 80) +
                                                  " is not one expression such as \"loss last\"");
    if (!values.front().run.empty())
        throw Error(ErrorCode::InvalidConfig, "value: " + quotedValue(expression, 80) +
                                                  ": run= is the lessons' own; name the run first");
    return values.front();
}

std::string exactText(double x) {
    if (std::isnan(x)) return "nan";  // a diverged value, never shown as a number
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
           "\"entropy last layer=0\", \"logit_max_raw first_above=100\", \"custom:train/acc max\", "
           "\"forecast eta\" "
           "(docs/LESSONS.md)")
        ->required();
    cmd.add_flag("--json", args.asJson,
                 "one JSON object: each expression and its value (null: none or NaN; the "
                 "run's status beside them as \"run_status\")");
    db.addOption(cmd, args.dbPath);
}

int cmdValue(const ValueArgs& args) {
    std::vector<LessonValue> values;
    for (const std::string& e : args.expressions) values.push_back(parseExpression(e));
    const std::unique_ptr<RunStore> store = openStoreToRead(args.dbPath, args.runRef);
    const RunInfo run = store->findRun(args.runRef);
    const int64_t id = run.id;
    const std::vector<StepMetrics> steps = store->stepMetrics(id);
    const std::vector<ProbeStats> probes = store->probeStats(id, -1);
    const std::vector<CustomScalar> scalars = store->customScalars(id);
    const std::vector<Forecast> forecasts = store->forecasts(id);
    const LessonRunRows rows{&steps, &probes, &scalars, &forecasts};
    nlohmann::json j = nlohmann::json::object();
    for (size_t i = 0; i < values.size(); ++i) {
        const std::optional<double> x = lessonValueNumber(values[i], rows);
        if (args.asJson)  // JSON has no NaN: null, and the status says whether it diverged
            j[args.expressions[i]] = x && !std::isnan(*x) ? nlohmann::json(*x) : nullptr;
        else
            std::cout << (x ? exactText(*x) : "none") << "\n";
    }
    j["run_status"] = toString(run.status);
    if (args.asJson) std::cout << jsonText(j, 2) << "\n";
    return 0;
}

}  // namespace qklab::cli
