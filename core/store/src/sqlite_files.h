// sqlite_files.h — the files SQLite keeps beside a database, and what must never happen to them.
//
// SQLite's locks are POSIX advisory locks, owned by the process: closing ANY descriptor of a
// database, its -wal or its -shm drops every lock the process holds on that file, though
// SQLite's own connections keep believing they hold them. Another process may then checkpoint
// and delete the WAL the connections of this one still write to; their commits go to a
// deleted file and, with several writers, the database is corrupted. So:
//   - a companion file (-wal, -shm, -journal) is never opened as a database (the open and the
//     close that follows would drop the locks of the database it belongs to);
//   - a writer remembers which WAL and -shm it writes through, and checks after each commit
//     that they are still the files on disk (JournalIdentity), so that a lost lock stops the
//     run at once instead of losing its rows without a word.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace qklab {

// Throws Error{InvalidRequest} when path names a -wal, -shm or -journal file: "… is SQLite's
// write-ahead log of runs.db; open runs.db itself".
void refuseSqliteCompanion(const std::string& path);

// The identity (device, inode) of a WAL-mode database's -wal and -shm files.
struct JournalIdentity {
    uint64_t walDevice = 0, walInode = 0, shmDevice = 0, shmInode = 0;

    // Both files as they are on disk now; nullopt when either is missing (not in WAL mode yet,
    // or ":memory:").
    static std::optional<JournalIdentity> of(const std::string& dbPath);
    // Empty while both files are still these; otherwise what changed, for an error message.
    std::string changeSince(const std::string& dbPath) const;
};

}  // namespace qklab
