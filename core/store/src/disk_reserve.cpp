// disk_reserve.cpp — see disk_reserve.h.
#include "disk_reserve.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "qklab/util/error.h"

namespace qklab {

namespace {

// An open file without a name in `dir`: O_TMPFILE where the file system has it, else a named
// one removed at once. -1 when the folder cannot be written.
int unnamedFile(const std::string& dir) {
    int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    std::string name = dir + "/.qklab-disk-reserve-XXXXXX";
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
    return fd;
}

}  // namespace

DiskReserve::DiskReserve(const std::string& dbPath) {
    if (dbPath.empty() || dbPath == ":memory:") return;
    const std::filesystem::path parent = std::filesystem::path(dbPath).parent_path();
    const std::string dir = parent.empty() ? "." : parent.string();
    const int fd = unnamedFile(dir);
    if (fd < 0) return;  // a folder that cannot be written: the database is read there anyway
    // posix_fallocate really allocates the blocks (a sparse file would free nothing).
    const int rc = ::posix_fallocate(fd, 0, kDiskReserveBytes);
    if (rc == 0) {
        m_fd = fd;
        return;
    }
    ::close(fd);
    if (rc == ENOSPC || rc == EDQUOT)
        throw Error(ErrorCode::Io, "the disk holding " + dbPath +
                                       " is full: a run keeps 1 MiB free there to store why it "
                                       "stopped, and not even that is left (" +
                                       std::strerror(rc) + "). Free some space and start again.");
}

DiskReserve::~DiskReserve() {
    release();
}

DiskReserve::DiskReserve(DiskReserve&& other) noexcept : m_fd(other.m_fd) {
    other.m_fd = -1;
}

DiskReserve& DiskReserve::operator=(DiskReserve&& other) noexcept {
    if (this != &other) {
        release();
        m_fd = other.m_fd;
        other.m_fd = -1;
    }
    return *this;
}

bool DiskReserve::release() {
    if (m_fd < 0) return false;
    ::close(m_fd);  // the last descriptor of an unlinked file: its blocks are free again
    m_fd = -1;
    return true;
}

}  // namespace qklab
