// export_command.cpp — `qklab-cli export`: all recorded data of one run, as CSV or JSON.
#include "export_command.h"

#include <iostream>

#include "qklab/store/run_export.h"
#include "stored_runs.h"

namespace qklab::cli {

void addExportOptions(CLI::App& cmd, ExportArgs& args, Database& db) {
    cmd.add_option("run", args.runRef, "run id or name")->required();
    cmd.add_option("--format", args.format,
                   "csv (a row per step: the step metrics, the custom scalars, then each "
                   "layer's probe columns) or json (every table)")
        ->check(CLI::IsMember({"csv", "json"}));
    cmd.add_option("--output,-o", args.output, "file to write (default: standard output)");
    cmd.add_flag("--force", args.force, "overwrite a file that is a SQLite database");
    db.addOption(cmd, args.dbPath);
}

int cmdExport(const ExportArgs& args) {
    const std::unique_ptr<RunStore> store = openStoreToRead(args.dbPath, args.runRef);
    const int64_t id = store->findRun(args.runRef).id;
    const std::string text = args.format == "csv" ? runExportCsv(*store, id)
                                                  : jsonText(runExportJson(*store, id), 1) + "\n";
    if (args.output.empty()) {
        std::cout << text;
        return 0;
    }
    writeExport(text, args.output, args.dbPath, args.force);
    return 0;
}

}  // namespace qklab::cli
