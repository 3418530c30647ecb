// qklab/util/input_file.h — reading a file someone else made: a preset, a sweep file, a lesson, a
// corpus. Every such file is hostile input: /dev/zero never ends (a lesson naming it as its
// preset once grew the app to 21 GB), a FIFO blocks the reader until a writer comes, and a
// directory or a socket is no document at all. So every reader goes through this one helper:
// only a regular file (after symlinks), only up to a stated size, and opened without blocking.
// Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "qklab/util/error.h"

namespace qklab {

// One kind of input file: the name its messages use and the most bytes it may have.
struct InputFileKind {
    const char* what;           // "preset", "sweep file", "lesson", "data.source"
    int64_t maxBytes;           // larger files are refused without being read
    const char* noun = "file";  // "... is a FIFO, not a regular <noun>"
};

// The limits, one table: JSON documents people write by hand (the largest shipped one is a
// few KiB; a normalised sweep of 10,000 points stays far below) and training text.
constexpr int64_t kMaxJsonFileBytes = int64_t(4) << 20;  // 4 MiB
constexpr InputFileKind kPresetFile{"preset", kMaxJsonFileBytes};
constexpr InputFileKind kSweepFile{"sweep file", kMaxJsonFileBytes};
constexpr InputFileKind kLessonFile{"lesson", kMaxJsonFileBytes};
constexpr InputFileKind kCorpusFile{"data.source", int64_t(1) << 30, "text file"};  // 1 GiB

// "4 MiB", "1 GiB": a limit as messages and --help state it.
std::string limitText(int64_t bytes);

// Why `path` cannot be read as `kind`, or "" when it can: one stat() (symlinks followed), nothing
// opened. *code (when given): MissingFile for a path that does not exist or cannot be reached,
// InvalidConfig for a special file or one over the limit.
std::string inputFileProblem(const std::string& path, const InputFileKind& kind,
                             ErrorCode* code = nullptr);

// The whole file. Opened with O_NONBLOCK (a FIFO with no writer does not block the open),
// then the opened descriptor is checked with fstat(): a path swapped for a FIFO or a device
// after a check is still refused. At most kind.maxBytes are read, also when the file grows
// meanwhile. Throws Error with the code of inputFileProblem(), naming the kind, the path and,
// for a file too large, the limit.
std::string readInputFile(const std::string& path, const InputFileKind& kind);

// For a database, which SQLite opens itself: "" when `path` does not exist (it will be created)
// or is a regular file; else why not ("... is a FIFO (named pipe), not a regular file"). A FIFO
// would block SQLite's open; a device or a directory is no database.
std::string specialFileProblem(const std::string& path, const std::string& what);

// A value someone else wrote, for a message: in JSON quotes with control characters escaped
// (a newline cannot split the message) and clipped to about `limit` bytes.
std::string quotedValue(const std::string& value, size_t limit = 60);

}  // namespace qklab
