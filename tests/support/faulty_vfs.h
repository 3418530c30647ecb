// faulty_vfs.h — a SQLite VFS for tests that injects write failures into a chosen database.
//
// It wraps the default (unix) VFS and becomes the default itself, so every connection the code
// under test opens goes through it. Disarmed it passes everything through. Armed for a file
// (a substring of its path: the database, its -wal or -journal), it fails that file's writes:
//   FullDisk: a write that would grow the file fails with SQLITE_FULL, as ENOSPC does; writes
//             into space the file already has succeed, as they do on a real full disk.
//   IoError:  every write fails with SQLITE_IOERR_WRITE (a dying disk, a yanked USB stick).
#pragma once

#include <string>

namespace qklab::testsupport {

enum class WriteFault { None, FullDisk, IoError };

// Registers the wrapper as the default VFS (idempotent). Call before opening connections.
void installFaultyVfs();
// Fails writes to files whose path contains `pathPart` from now on (None disarms): the next
// `count` writes the fault applies to, or all of them when count < 0.
void armWriteFault(WriteFault fault, const std::string& pathPart, int count = -1);
void disarmWriteFault();
// How many writes were refused since the last arm.
int refusedWrites();

}  // namespace qklab::testsupport
