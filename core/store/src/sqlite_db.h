// sqlite_db.h — a thin RAII layer over the sqlite3 C API (after SQLiteCpp / qBittorrent).
//
// Database owns one connection, Statement one prepared statement, Transaction one
// BEGIN IMMEDIATE .. COMMIT that rolls back in its destructor unless commit() was called.
// Every failure throws qklab::Error{Database} naming the file, the SQL and sqlite3_errmsg;
// a file that is not SQLite at all throws Error{NotQklabDatabase}. A connection belongs to
// one thread at a time: the store gives each reader and each writer its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace qklab {

class Database {
  public:
    // The largest text or blob a connection reads or writes (SQLite's own default is 1 GB): a
    // file with a bigger value fails with Error{NotQklabDatabase} instead of allocating it.
    // An attention map of a 4096-token context is 64 MiB.
    static constexpr int kMaxValueBytes = 256 << 20;

    // Opens (creating when missing) the file; ":memory:" gives a private in-memory database.
    // The busy timeout lets readers and the single writer of other connections wait for each
    // other briefly instead of failing at once with "database is locked".
    explicit Database(const std::string& path, int busyTimeoutMs = 5000);
    // Opens an existing file for reading only (never creates it). `immutable` is for media
    // nobody can write (no WAL index can be created there): SQLite then takes no locks.
    // `file`, when given, is what is opened (a private copy) while messages name `path`.
    static std::unique_ptr<Database> openReadOnly(const std::string& path, bool immutable,
                                                  const std::string& file = {});
    ~Database();
    // A folder (a private copy of the file) removed, with everything in it, once closed.
    void removeOnClose(const std::string& folder) { m_removeOnClose = folder; }
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    sqlite3* handle() const { return m_db; }
    const std::string& path() const { return m_path; }
    bool isMemory() const;

    // Runs one or more statements that return no rows (DDL, PRAGMA writes).
    void exec(const std::string& sql);
    // First column of the first row (PRAGMAs, counts); NULL or no row gives 0 / "".
    int64_t queryInt(const std::string& sql);
    std::string queryText(const std::string& sql);

    int64_t lastInsertId() const;
    int changes() const;

    // Throws the Error describing the connection's last failure (rc = the failing code).
    [[noreturn]] void fail(int rc, const std::string& sql) const;

  private:
    Database(const std::string& path, int busyTimeoutMs, int flags, const std::string& uri);
    sqlite3* m_db = nullptr;
    std::string m_path;
    int m_busyTimeoutMs;
    std::string m_removeOnClose;
};

// Parameter indexes are 1-based and column indexes 0-based, as in the C API.
class Statement {
  public:
    Statement(Database& db, const std::string& sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bindInt(int index, int64_t value);
    Statement& bindReal(int index, double value);  // NaN is stored as NULL (SQLite would anyway)
    // NULL for nullopt; a NaN is stored as the text 'NaN' so it stays distinct from "absent".
    Statement& bindOptReal(int index, const std::optional<double>& value);
    Statement& bindText(int index, const std::string& value);
    Statement& bindBlob(int index, const void* data, size_t bytes);
    Statement& bindNull(int index);
    // The value of column `col` of `from`'s current row, whatever its type (copying rows
    // between files without decoding them).
    Statement& bindColumn(int index, const Statement& from, int col);
    // Binds the values to parameters 1, 2, ... in order, as SQLiteCpp's variadic bind does:
    // integers (bindInt), floating point (bindReal), std::optional<double> (bindOptReal),
    // text, and nullptr for NULL.
    template <class... Values>
    Statement& bindAll(const Values&... values) {
        int index = 0;
        (bindOne(++index, values), ...);
        return *this;
    }

    bool step();   // true while a row is available
    void exec();   // steps to completion, then resets so the statement can be reused
    void reset();  // rewinds; bindings stay until rebound

    bool isNull(int col) const;
    int64_t columnInt(int col) const;
    double columnReal(int col) const;  // NULL (how NaN comes back), text or a blob: NaN
    std::optional<double> columnOptReal(int col) const;  // NULL -> nullopt, 'NaN' -> NaN
    std::string columnText(int col) const;               // NULL -> ""
    std::vector<unsigned char> columnBlob(int col) const;

  private:
    template <class T>
    void bindOne(int index, const T& value) {
        if constexpr (std::is_same_v<T, std::nullptr_t>)
            bindNull(index);
        else if constexpr (std::is_integral_v<T>)
            bindInt(index, static_cast<int64_t>(value));
        else if constexpr (std::is_floating_point_v<T>)
            bindReal(index, static_cast<double>(value));
        else if constexpr (std::is_same_v<T, std::optional<double>>)
            bindOptReal(index, value);
        else
            bindText(index, std::string(value));
    }

    Database& m_db;
    sqlite3_stmt* m_stmt = nullptr;
    std::string m_sql;
};

// BEGIN IMMEDIATE takes the write lock up front: a deferred transaction that later upgrades
// to a write can fail with SQLITE_BUSY without the busy handler ever being consulted.
class Transaction {
  public:
    explicit Transaction(Database& db);
    ~Transaction();  // rolls back unless committed; never throws
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;

    void commit();

  private:
    Database& m_db;
    bool m_done = false;
};

}  // namespace qklab
