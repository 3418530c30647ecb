// faulty_vfs.cpp — see faulty_vfs.h. A shim sqlite3_file holds the real file right after
// itself; every method forwards to it, and xWrite consults the armed fault first.
#include "faulty_vfs.h"

#include <sqlite3.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace qklab::testsupport {
namespace {

struct Shim {
    sqlite3_file base;  // first: SQLite sees a Shim as an sqlite3_file
    sqlite3_file* real;
    std::string* path;
};

sqlite3_vfs g_vfs;
sqlite3_vfs* g_real = nullptr;
sqlite3_io_methods g_methods;
std::mutex g_mutex;
WriteFault g_fault = WriteFault::None;
std::string g_pathPart;
int g_remaining = -1;  // refusals left; < 0: no limit
std::atomic<int> g_refused{0};

sqlite3_file* real(sqlite3_file* f) {
    return reinterpret_cast<Shim*>(f)->real;
}

WriteFault faultFor(const Shim* s) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_fault == WriteFault::None || !s->path || g_remaining == 0) return WriteFault::None;
    return s->path->find(g_pathPart) == std::string::npos ? WriteFault::None : g_fault;
}

// Counts one refusal against the armed budget.
void refuse() {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_remaining > 0) --g_remaining;
    ++g_refused;
}

int shimWrite(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
    auto* s = reinterpret_cast<Shim*>(f);
    switch (faultFor(s)) {
        case WriteFault::IoError:
            refuse();
            return SQLITE_IOERR_WRITE;
        case WriteFault::FullDisk: {
            sqlite3_int64 size = 0;
            s->real->pMethods->xFileSize(s->real, &size);
            if (offset + amount > size) {
                refuse();
                return SQLITE_FULL;
            }
            break;
        }
        case WriteFault::None:
            break;
    }
    return s->real->pMethods->xWrite(s->real, data, amount, offset);
}

int shimTruncate(sqlite3_file* f, sqlite3_int64 size) {
    auto* s = reinterpret_cast<Shim*>(f);
    if (faultFor(s) == WriteFault::IoError) {
        refuse();
        return SQLITE_IOERR_TRUNCATE;
    }
    return s->real->pMethods->xTruncate(s->real, size);
}

int shimClose(sqlite3_file* f) {
    auto* s = reinterpret_cast<Shim*>(f);
    const int rc = s->real->pMethods ? s->real->pMethods->xClose(s->real) : SQLITE_OK;
    delete s->path;
    s->path = nullptr;
    return rc;
}

// The remaining methods only forward.
int shimRead(sqlite3_file* f, void* d, int n, sqlite3_int64 o) {
    return real(f)->pMethods->xRead(real(f), d, n, o);
}
int shimSync(sqlite3_file* f, int flags) {
    return real(f)->pMethods->xSync(real(f), flags);
}
int shimFileSize(sqlite3_file* f, sqlite3_int64* size) {
    return real(f)->pMethods->xFileSize(real(f), size);
}
int shimLock(sqlite3_file* f, int level) {
    return real(f)->pMethods->xLock(real(f), level);
}
int shimUnlock(sqlite3_file* f, int level) {
    return real(f)->pMethods->xUnlock(real(f), level);
}
int shimCheckReserved(sqlite3_file* f, int* out) {
    return real(f)->pMethods->xCheckReservedLock(real(f), out);
}
int shimFileControl(sqlite3_file* f, int op, void* arg) {
    return real(f)->pMethods->xFileControl(real(f), op, arg);
}
int shimSectorSize(sqlite3_file* f) {
    return real(f)->pMethods->xSectorSize(real(f));
}
int shimDeviceCharacteristics(sqlite3_file* f) {
    return real(f)->pMethods->xDeviceCharacteristics(real(f));
}
int shimShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
    return real(f)->pMethods->xShmMap(real(f), page, size, extend, out);
}
int shimShmLock(sqlite3_file* f, int offset, int n, int flags) {
    return real(f)->pMethods->xShmLock(real(f), offset, n, flags);
}
void shimShmBarrier(sqlite3_file* f) {
    real(f)->pMethods->xShmBarrier(real(f));
}
int shimShmUnmap(sqlite3_file* f, int deleteFlag) {
    return real(f)->pMethods->xShmUnmap(real(f), deleteFlag);
}

int shimOpen(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* outFlags) {
    auto* s = reinterpret_cast<Shim*>(f);
    s->base.pMethods = nullptr;
    s->real = reinterpret_cast<sqlite3_file*>(s + 1);
    s->path = new std::string(name ? name : "");
    const int rc = g_real->xOpen(g_real, name, s->real, flags, outFlags);
    if (rc != SQLITE_OK || !s->real->pMethods) {
        delete s->path;
        s->path = nullptr;
        return rc;
    }
    s->base.pMethods = &g_methods;
    return rc;
}

// Version 2: WAL needs the xShm methods; leaving out xFetch keeps every read on xRead.
void buildMethods() {
    g_methods = sqlite3_io_methods{};
    g_methods.iVersion = 2;
    g_methods.xClose = shimClose;
    g_methods.xRead = shimRead;
    g_methods.xWrite = shimWrite;
    g_methods.xTruncate = shimTruncate;
    g_methods.xSync = shimSync;
    g_methods.xFileSize = shimFileSize;
    g_methods.xLock = shimLock;
    g_methods.xUnlock = shimUnlock;
    g_methods.xCheckReservedLock = shimCheckReserved;
    g_methods.xFileControl = shimFileControl;
    g_methods.xSectorSize = shimSectorSize;
    g_methods.xDeviceCharacteristics = shimDeviceCharacteristics;
    g_methods.xShmMap = shimShmMap;
    g_methods.xShmLock = shimShmLock;
    g_methods.xShmBarrier = shimShmBarrier;
    g_methods.xShmUnmap = shimShmUnmap;
}

}  // namespace

void installFaultyVfs() {
    static std::once_flag once;
    std::call_once(once, [] {
        g_real = sqlite3_vfs_find(nullptr);
        buildMethods();
        g_vfs = *g_real;  // the path, randomness, time and dlopen methods are the real VFS's
        g_vfs.zName = "qklab-faulty";
        g_vfs.szOsFile = static_cast<int>(sizeof(Shim)) + g_real->szOsFile;
        g_vfs.xOpen = shimOpen;
        g_vfs.pAppData = nullptr;
        sqlite3_vfs_register(&g_vfs, /*makeDflt=*/1);
    });
}

void armWriteFault(WriteFault fault, const std::string& pathPart, int count) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_fault = fault;
    g_pathPart = pathPart;
    g_remaining = count;
    g_refused = 0;
}

void disarmWriteFault() {
    armWriteFault(WriteFault::None, {});
}

int refusedWrites() {
    return g_refused.load();
}

}  // namespace qklab::testsupport
