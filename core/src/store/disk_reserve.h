// disk_reserve.h — room kept on the database's disk so that a run that fills it can still say
// why it stopped.
//
// When the disk fills up while a run writes its rows, the failed commit is rolled back, but
// storing the run's status ("failed: the disk is full") is a write too, and on a full disk it
// failed as well: the run was left "running", later read as interrupted, with no reason. Each
// writer therefore makes sure a 1 MiB file is allocated next to the database
// (<db>.checkpoints/.disk-reserve); a writer whose commit fails deletes it before storing the
// failed status, and the next writer allocates it again.
#pragma once

#include <cstdint>
#include <string>

namespace qklab {

constexpr int64_t kDiskReserveBytes = 1 << 20;

std::string diskReservePath(const std::string& dbPath);
// Allocates the reserve when it is missing (best effort: a disk already too full for it keeps
// none). Nothing for ":memory:".
void ensureDiskReserve(const std::string& dbPath);
// Deletes the reserve; true when there was one to free.
bool releaseDiskReserve(const std::string& dbPath);

}  // namespace qklab
