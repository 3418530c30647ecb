// disk_reserve.h — room kept on the database's disk so that a run that fills it can still say
// why it stopped.
//
// When the disk fills up while a run writes its rows, the failed commit is rolled back, but
// storing the run's status ("failed: the disk is full") is a write too, and on a full disk it
// failed as well: the run was left "running", later read as interrupted, with no reason. Each
// writer therefore holds 1 MiB allocated next to the database, in a file of its own that has no
// name (unlinked as soon as it is made, so a killed writer leaves nothing behind and the kernel
// frees it); a writer whose commit fails frees it before storing the failed status. A writer
// that cannot allocate its reserve because the disk is full does not start: it could not store
// why it failed (the writers of one database shared a single reserve file, so a second writer
// that failed after the first had nothing left to free, and one started on a nearly full disk
// had none at all).
#pragma once

#include <cstdint>
#include <string>

namespace qklab {

constexpr int64_t kDiskReserveBytes = 1 << 20;

class DiskReserve {
  public:
    DiskReserve() = default;
    // Allocates kDiskReserveBytes in the folder of the database at dbPath (nothing for
    // ":memory:"). Throws Error{Io} saying the disk is full when it has not that much room;
    // other failures (a folder that cannot be written) keep none, as before.
    explicit DiskReserve(const std::string& dbPath);
    ~DiskReserve();
    DiskReserve(DiskReserve&& other) noexcept;
    DiskReserve& operator=(DiskReserve&& other) noexcept;
    DiskReserve(const DiskReserve&) = delete;
    DiskReserve& operator=(const DiskReserve&) = delete;

    bool held() const { return m_fd >= 0; }
    // Frees the reserve's blocks; true when there was one to free.
    bool release();

  private:
    int m_fd = -1;
};

}  // namespace qklab
