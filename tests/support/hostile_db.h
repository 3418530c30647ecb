// hostile_db.h — raw SQLite access and small qklab databases for the tests of files from others
// (issue 22): a shard or a colleague's database is written with the real RunWriter, then edited
// behind qklab's back the way a hostile or damaged file would be.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"

namespace hostile {

namespace fs = std::filesystem;

// Runs SQL on a file without qklab (no checks, no limits). False when SQLite refuses it.
inline bool rawExec(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    bool ok = sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
              sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
    sqlite3_close(db);
    return ok;
}

// The first column of the first row as text ("" when none).
inline std::string rawText(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    std::string out;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        out.assign(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                   static_cast<size_t>(sqlite3_column_bytes(st, 0)));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

inline int64_t rawInt(const std::string& path, const std::string& sql) {
    const std::string t = rawText(path, sql);
    return t.empty() ? -1 : std::stoll(t);
}

// A run of `steps` steps (loss 3.0 .. ), one probe, one spike, one user event, and a checkpoint
// file at the last step in the database's own folder (where the trainer puts it). Returns its id.
inline int64_t writeRun(const std::string& db, const std::string& name, qklab::RunStatus status,
                        int64_t steps = 3, bool checkpoint = true) {
    qklab::NewRun nr;
    nr.name = name;
    nr.configJson = R"({"schedule": {"steps": 100}, "why": "a test"})";
    qklab::RunWriter w(db, nr);
    for (int64_t s = 0; s < steps; ++s) {
        qklab::StepMetrics m;
        m.step = s;
        m.loss = 3.0 + 0.1 * static_cast<double>(s);
        m.lr = 1e-3;
        w.addStep(m);
    }
    qklab::ProbeStats p;
    p.layer = 0;
    p.head = -1;
    p.logitMaxRaw = 12;
    w.addProbe(p);
    qklab::Spike sp;
    sp.step = 1;
    sp.metric = "loss";
    w.addSpike(sp);
    w.addEvent({1, "lr_multiplier", R"({"factor": 0.5})", "user"});
    if (checkpoint) {
        const std::string dir = db + ".checkpoints/run-" + std::to_string(w.runId());
        fs::create_directories(dir);
        const std::string file = dir + "/step-" + std::to_string(steps) + ".pt";
        std::ofstream(file) << "weights of " << name;
        w.addCheckpoint({steps, file, {}});
    }
    w.finish(status);
    return w.runId();
}

inline std::string fileText(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// A fresh temporary folder, removed by the destructor.
struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "qklab-hostile-XXXXXX").string();
        if (mkdtemp(tmpl.data())) path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace hostile
