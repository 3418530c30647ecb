// proc_locks.h — the POSIX advisory locks this process holds on a file, from /proc/locks.
//
// SQLite's locks are per process and vanish when any descriptor of the file is closed; the
// tests that guard against that count them before and after.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace qklab::testsupport {

// How many POSIX lock ranges this process holds on `path` (0 when it holds none).
inline int heldPosixLocks(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return 0;
    std::ifstream in("/proc/locks");
    std::string line;
    int count = 0;
    const std::string me = std::to_string(::getpid());
    // "1: POSIX  ADVISORY  READ 1234 08:01:123456 1073741826 1073742335"
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string index, type, mode, access, pid, device;
        if (!(fields >> index >> type)) continue;
        if (type == "->") fields >> type;  // a waiter line
        fields >> mode >> access >> pid >> device;
        if (type != "POSIX" || pid != me) continue;
        const auto colon = device.rfind(':');
        if (colon != std::string::npos &&
            device.substr(colon + 1) == std::to_string(static_cast<unsigned long long>(st.st_ino)))
            ++count;
    }
    return count;
}

}  // namespace qklab::testsupport
