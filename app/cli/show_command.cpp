// show_command.cpp — `qklab-cli show`: the summary and config of one run, its forecasts (and,
// in JSON, its logit alarms).
#include "show_command.h"

#include <iostream>

#include "qklab/store/run_export.h"
#include "qklab/util/text_util.h"
#include "stored_runs.h"

namespace qklab::cli {

void addShowOptions(CLI::App& cmd, ShowArgs& args, Database& db) {
    cmd.add_option("run", args.runRef, "run id or name")->required();
    cmd.add_flag("--json", args.asJson, "machine-readable output");
    db.addOption(cmd, args.dbPath);
}

int cmdShow(const ShowArgs& args) {
    const std::unique_ptr<RunStore> store = openStoreToRead(args.dbPath, args.runRef);
    const int64_t id = store->findRun(args.runRef).id;
    nlohmann::json j;
    j["summary"] = runSummaryJson(*store, id);
    j["config"] = runConfigJson(*store, id);  // within the JSON limits: exit 2, not a crash
    j["alarms"] = logitAlarmsJson(*store, id);
    j["forecasts"] = forecastsJson(*store, id);
    // A run trained outside qklab: its own config is what it ran with (qklab's holds the
    // model's shape and the probe settings).
    const nlohmann::json userConfig = userConfigJson(*store, id);
    if (!userConfig.is_null()) j["user_config"] = userConfig;
    if (args.asJson) {
        std::cout << jsonText(j, 2) << "\n";
        return 0;
    }
    std::cout << "summary:\n"
              << jsonText(j["summary"], 2) << "\nconfig:\n"
              << jsonText(j["config"], 2) << "\n";
    if (!userConfig.is_null()) std::cout << "user config:\n" << jsonText(userConfig, 2) << "\n";
    if (!j["forecasts"].empty()) std::cout << "forecasts:\n";
    for (const auto& f : j["forecasts"])  // the text is the file's: made printable
        std::cout << "  step " << f.value("step", int64_t{0}) << ": "
                  << printableText(f.value("text", std::string())) << "\n";
    return 0;
}

}  // namespace qklab::cli
