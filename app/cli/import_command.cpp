// import_command.cpp — `qklab-cli import`: copy every run of a database (e.g. a colleague's)
// into yours.
#include "import_command.h"

#include <filesystem>
#include <iostream>
#include <set>

#include "qklab/store/run_store.h"

namespace qklab::cli {

namespace fs = std::filesystem;

namespace {

bool absent(const std::string& path) {
    std::error_code ec;
    return !fs::exists(fs::symlink_status(path, ec));
}

// A target database the import creates: its file, SQLite's companions and its checkpoint
// folder (those that were not there before) are removed again when the import fails, so that
// a failed merge into a new target (a full disk, a refused source) leaves no target behind.
// An existing target is left alone: a writer may hold committed rows in its WAL.
class NewFiles {
  public:
    explicit NewFiles(const std::string& db) {
        if (!absent(db)) return;
        for (const std::string& p :
             {db, db + "-wal", db + "-shm", db + "-journal", checkpointFolder(db)})
            if (!p.empty() && absent(p)) m_absent.push_back(p);
    }
    void removeCreated() const {
        for (const std::string& p : m_absent) {
            std::error_code ec;
            fs::remove_all(p, ec);
        }
    }

  private:
    std::vector<std::string> m_absent;
};

int importInto(const std::vector<std::string>& sources, const std::string& into) {
    RunStore store(into);
    const std::vector<ImportResult> results = store.importAll(sources);
    int64_t imported = 0, updated = 0, skipped = 0;
    std::set<int64_t> sweeps;
    for (size_t i = 0; i < sources.size(); ++i) {
        const ImportResult& r = results[i];
        imported += r.imported;
        updated += r.updated;
        skipped += r.skipped;
        sweeps.insert(r.sweepIds.begin(), r.sweepIds.end());
        for (const auto& rename : r.renamed)
            std::cerr << "renamed (a name taken here, or one the name rule refuses): " << rename
                      << "\n";
        for (const auto& note : r.notes) std::cerr << "note: " << note << "\n";
        std::cerr << sources[i] << ": " << r.imported << " imported, "
                  << (r.updated ? std::to_string(r.updated) + " updated, " : "") << r.skipped
                  << " already present\n";
    }
    std::cerr << imported << " runs imported, "
              << (updated ? std::to_string(updated) + " updated, " : "") << skipped
              << " skipped (already in " << into << ")\n";
    for (int64_t id : sweeps) {
        const SweepInfo s = store.sweep(id);
        std::cerr << "sweep " << printableText(s.name) << " (" << s.id << "): " << s.status << ", "
                  << store.sweepRuns(id).size() << " of " << s.points << " points\n";
    }
    return 0;
}

}  // namespace

void addImportOptions(CLI::App& cmd, ImportArgs& args, Database& db) {
    cmd.add_option("file", args.files, "database to read")->required();
    db.addOption(cmd, args.dbPath, "run database to add to");
}

int cmdImport(const ImportArgs& args) {
    return importDatabases(args.files, args.dbPath);
}

// Every source is checked whole before the target is created or opened (a missing or bad
// file used to leave an empty target behind), then each is imported in a transaction of its
// own; a target this call created is removed again if any of them fails.
int importDatabases(const std::vector<std::string>& sources, const std::string& into) {
    for (const std::string& src : sources) checkImportSource(src);
    const NewFiles created(into);
    try {
        return importInto(sources, into);
    } catch (...) {
        created.removeCreated();  // the store is closed: unwinding importInto closed it
        throw;
    }
}

}  // namespace qklab::cli
