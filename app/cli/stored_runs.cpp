// stored_runs.cpp — see stored_runs.h.
#include "stored_runs.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "qklab/util/error.h"
#include "qklab/util/input_file.h"

namespace qklab::cli {
namespace {

// True when `path` names the file itself or its WAL / shared-memory companions.
bool isDatabaseOrCompanion(const std::string& path, const std::string& dbPath) {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        const std::string p = dbPath + suffix;
        if (fs::exists(p, ec) && fs::exists(path, ec) && fs::equivalent(path, p, ec)) return true;
    }
    return false;
}

bool looksLikeSqlite(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char header[16] = {};
    return in.read(header, sizeof header) && std::memcmp(header, "SQLite format 3", 16) == 0;
}

}  // namespace

std::unique_ptr<RunStore> openStoreToRead(const std::string& dbPath, const std::string& runRef) {
    try {
        return std::make_unique<RunStore>(dbPath, StoreAccess::ReadOnly);
    } catch (const Error& e) {
        if (e.code() != ErrorCode::MissingFile || runRef.empty()) throw;
        throw Error(ErrorCode::NotFound,
                    std::string(e.what()) + ", so there is no run '" + runRef.substr(0, 80) + "'");
    }
}

std::string jsonText(const nlohmann::json& j, int indent) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void writeExport(const std::string& text, const std::string& path, const std::string& dbPath,
                 bool force) {
    if (isDatabaseOrCompanion(path, dbPath))
        throw Error(ErrorCode::InvalidRequest,
                    "refusing to export over " + path + ": it is the database being read");
    // A FIFO would block the SQLite-header check below, and the rename would replace it.
    if (std::string problem = specialFileProblem(path, "--output"); !problem.empty())
        throw Error(ErrorCode::InvalidRequest,
                    problem + " (leave --output out to write to standard output)");
    if (!force && looksLikeSqlite(path))
        throw Error(ErrorCode::InvalidRequest,
                    "refusing to overwrite " + path + ": it is a SQLite database (use --force)");
    const std::string tmp = path + ".qklab-tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out || !(out << text) || !out.flush()) {
            std::remove(tmp.c_str());
            throw Error(ErrorCode::Io, "cannot write " + path);
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw Error(ErrorCode::Io, "cannot write " + path + ": " + std::strerror(errno));
    }
}

}  // namespace qklab::cli
