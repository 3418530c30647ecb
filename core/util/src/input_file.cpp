// input_file.cpp — regular files only, bounded, never blocking (see qklab/util/input_file.h).
#include "qklab/util/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "qklab/util/text_util.h"

namespace qklab {

namespace {

// A path in a message: long enough for a real path, short enough for a pasted megabyte.
std::string quotedPath(const std::string& path) {
    return "\"" + clipped(path, 160) + "\"";
}

const char* fileTypeName(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "a special file";
}

std::string notRegular(const std::string& path, const InputFileKind& kind, mode_t mode) {
    return std::string(kind.what) + ": " + quotedPath(path) + " is " + fileTypeName(mode) +
           ", not a regular " + kind.noun;
}

std::string tooLarge(const std::string& path, const InputFileKind& kind, const std::string& size) {
    return std::string(kind.what) + ": " + quotedPath(path) + " has " + size +
           " bytes; the limit is " + limitText(kind.maxBytes) + " (" +
           std::to_string(kind.maxBytes) + " bytes)";
}

std::string unreadable(const std::string& path, const InputFileKind& kind, int err) {
    return std::string(kind.what) + ": cannot read " + kind.noun + " " + quotedPath(path) + ": " +
           (err == ENOENT ? std::string("no such file") : std::string(std::strerror(err)));
}

// The problem with what stat()/fstat() said, or "".
std::string statProblem(const std::string& path, const InputFileKind& kind, const struct stat& st,
                        ErrorCode* code) {
    if (code) *code = ErrorCode::InvalidConfig;
    if (!S_ISREG(st.st_mode)) return notRegular(path, kind, st.st_mode);
    if (st.st_size > kind.maxBytes) return tooLarge(path, kind, std::to_string(st.st_size));
    return {};
}

// Closes the descriptor on every way out of readInputFile.
struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

std::string limitText(int64_t bytes) {
    if (bytes >= (int64_t(1) << 30) && bytes % (int64_t(1) << 30) == 0)
        return std::to_string(bytes >> 30) + " GiB";
    if (bytes >= (int64_t(1) << 20) && bytes % (int64_t(1) << 20) == 0)
        return std::to_string(bytes >> 20) + " MiB";
    if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
    return std::to_string(bytes) + " bytes";
}

std::string inputFileProblem(const std::string& path, const InputFileKind& kind, ErrorCode* code) {
    // A NUL ends the path the system sees: "a.json\0x" would open a.json.
    if (path.find('\0') != std::string::npos) {
        if (code) *code = ErrorCode::InvalidConfig;
        return std::string(kind.what) + ": " + quotedValue(path) + " is no file name (a NUL byte)";
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        if (code) *code = ErrorCode::MissingFile;
        return unreadable(path, kind, errno);
    }
    return statProblem(path, kind, st, code);
}

std::string readInputFile(const std::string& path, const InputFileKind& kind) {
    // The stat first: a device or a socket is refused without even being opened.
    ErrorCode code = ErrorCode::InvalidConfig;
    if (std::string p = inputFileProblem(path, kind, &code); !p.empty()) throw Error(code, p);
    const Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
    if (f.fd < 0) throw Error(ErrorCode::MissingFile, unreadable(path, kind, errno));
    // The file opened may not be the file checked (a path swapped meanwhile): check it again.
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) throw Error(ErrorCode::MissingFile, unreadable(path, kind, errno));
    if (std::string p = statProblem(path, kind, st, &code); !p.empty()) throw Error(code, p);
    std::string text;
    text.reserve(static_cast<size_t>(st.st_size));
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(f.fd, buf, sizeof buf);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            throw Error(ErrorCode::Io, unreadable(path, kind, errno));
        }
        // A file that grows while it is read (or a /proc file that reports size 0) stops at
        // the limit: more is refused, never read on.
        if (static_cast<int64_t>(text.size()) + n > kind.maxBytes)
            throw Error(ErrorCode::InvalidConfig,
                        tooLarge(path, kind, "more than " + std::to_string(kind.maxBytes)));
        text.append(buf, static_cast<size_t>(n));
    }
    return text;
}

std::string quotedValue(const std::string& value, size_t limit) {
    return shortJson(nlohmann::json(value), limit);
}

std::string specialFileProblem(const std::string& path, const std::string& what) {
    struct stat st {};
    // Absent (it will be created) or unreachable (the opener says why): nothing to refuse here.
    if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return {};
    return what + " " + quotedPath(path) + " is " + fileTypeName(st.st_mode) +
           ", not a regular file";
}

}  // namespace qklab
