// sqlite_files.cpp — see sqlite_files.h.
#include "sqlite_files.h"

#include <sys/stat.h>

#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

namespace qklab {
namespace {

struct Companion {
    const char* suffix;
    const char* what;
};
constexpr Companion kCompanions[] = {
    {"-wal", "write-ahead log"}, {"-shm", "shared-memory index"}, {"-journal", "rollback journal"}};

bool endsWith(const std::string& s, const std::string& tail) {
    return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool identityOf(const std::string& path, uint64_t& device, uint64_t& inode) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return false;
    device = static_cast<uint64_t>(st.st_dev);
    inode = static_cast<uint64_t>(st.st_ino);
    return true;
}

}  // namespace

void refuseSqliteCompanion(const std::string& path) {
    for (const Companion& c : kCompanions) {
        if (!endsWith(path, c.suffix)) continue;
        const std::string db = path.substr(0, path.size() - std::string(c.suffix).size());
        throw Error(ErrorCode::InvalidRequest,
                    clipped(path, 200) + " is SQLite's " + c.what + " of " + clipped(db, 200) +
                        ", not a database: open " + clipped(db, 200) + " itself");
    }
}

std::optional<JournalIdentity> JournalIdentity::of(const std::string& dbPath) {
    JournalIdentity id;
    if (!identityOf(dbPath + "-wal", id.walDevice, id.walInode) ||
        !identityOf(dbPath + "-shm", id.shmDevice, id.shmInode))
        return std::nullopt;
    return id;
}

std::string JournalIdentity::changeSince(const std::string& dbPath) const {
    const struct {
        const char* suffix;
        uint64_t device, inode;
    } files[] = {{"-wal", walDevice, walInode}, {"-shm", shmDevice, shmInode}};
    for (const auto& f : files) {
        uint64_t device = 0, inode = 0;
        const std::string path = dbPath + f.suffix;
        if (!identityOf(path, device, inode)) return path + " was deleted";
        if (device != f.device || inode != f.inode) return path + " was replaced by a new file";
    }
    return {};
}

}  // namespace qklab
