// disk_reserve.cpp — see disk_reserve.h.
#include "store/disk_reserve.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace qklab {

std::string diskReservePath(const std::string& dbPath) {
    return dbPath + ".checkpoints/.disk-reserve";
}

void ensureDiskReserve(const std::string& dbPath) {
    if (dbPath.empty() || dbPath == ":memory:") return;
    const std::string path = diskReservePath(dbPath);
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    // O_EXCL: the writers of one database (a sweep's workers) share one reserve.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return;  // there already is one, or the folder cannot be written
    // posix_fallocate really allocates the blocks (a sparse file would free nothing).
    const bool ok = ::posix_fallocate(fd, 0, kDiskReserveBytes) == 0;
    ::close(fd);
    if (!ok) std::remove(path.c_str());
}

bool releaseDiskReserve(const std::string& dbPath) {
    if (dbPath.empty() || dbPath == ":memory:") return false;
    return std::remove(diskReservePath(dbPath).c_str()) == 0;
}

}  // namespace qklab
