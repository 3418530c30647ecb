// sqlite_db.cpp — the RAII wrappers of sqlite_db.h: every sqlite3 call is checked and a
// failure becomes a qklab::Error that names the database file and the SQL involved.
#include "sqlite_db.h"

#include <sqlite3.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "qklab/util/error.h"

namespace qklab {

namespace {

bool isBusy(int rc) {
    int primary = rc & 0xff;
    return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

}  // namespace

// ---- Database ----

Database::Database(const std::string& path, int busyTimeoutMs)
    : Database(path, busyTimeoutMs, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, path) {}

std::unique_ptr<Database> Database::openReadOnly(const std::string& path, bool immutable,
                                                 const std::string& file) {
    // A URI, so that "immutable=1" can be passed; the path is percent-encoded where needed.
    std::string uri = "file:";
    for (unsigned char c : file.empty() ? path : file) {
        if (c == '%' || c == '?' || c == '#' || c < 0x20) {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", c);
            uri += buf;
        } else {
            uri += static_cast<char>(c);
        }
    }
    uri += immutable ? "?mode=ro&immutable=1" : "?mode=ro";
    return std::unique_ptr<Database>(
        new Database(path, 5000, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, uri));
}

Database::Database(const std::string& path, int busyTimeoutMs, int flags, const std::string& uri)
    : m_path(path), m_busyTimeoutMs(busyTimeoutMs) {
    int rc = sqlite3_open_v2(uri.c_str(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
        sqlite3_close_v2(m_db);
        m_db = nullptr;
        throw Error(ErrorCode::Database, "cannot open database " + path + ": " + msg);
    }
    // Extended codes distinguish e.g. a UNIQUE violation from other constraint failures.
    sqlite3_extended_result_codes(m_db, 1);
    sqlite3_busy_timeout(m_db, busyTimeoutMs);
    // Any file may be someone else's (a colleague's database, a Slurm shard): SQLite's advice
    // for untrusted files. No SQL function runs from the schema (views, triggers, defaults),
    // the schema cannot be written around SQLite's checks, and no value is over kMaxValueBytes.
    sqlite3_db_config(m_db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    sqlite3_db_config(m_db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
    sqlite3_limit(m_db, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
}

Database::~Database() {
    // close_v2 defers the close until any statement someone still holds is finalized.
    sqlite3_close_v2(m_db);
    if (!m_removeOnClose.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(m_removeOnClose, ec);
    }
}

bool Database::isMemory() const {
    return m_path == ":memory:" || m_path.empty();
}

void Database::fail(int rc, const std::string& sql) const {
    std::string msg = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
    int primary = rc & 0xff;
    // The statement is named, not dumped: a query over every column is a screenful.
    const std::string shown = sql.size() > 120 ? sql.substr(0, 117) + "..." : sql;
    // A damaged or foreign file is bad input (exit 2), not a failure of qklab or of SQLite.
    if (primary == SQLITE_NOTADB)
        throw Error(ErrorCode::NotQklabDatabase, m_path + " is not a qklab database: " + msg);
    if (primary == SQLITE_FULL)
        throw Error(ErrorCode::Io, "the disk holding " + m_path + " is full (" + msg + ")");
    if (primary == SQLITE_CORRUPT)
        throw Error(ErrorCode::NotQklabDatabase,
                    m_path + " is damaged (truncated or overwritten?): " + msg);
    if (primary == SQLITE_TOOBIG)
        throw Error(ErrorCode::NotQklabDatabase,
                    m_path + " holds a value larger than qklab reads (" + msg + ")");
    if (isBusy(rc))
        throw Error(ErrorCode::Database,
                    "database " + m_path + " is locked by another connection (gave up after " +
                        std::to_string(m_busyTimeoutMs) + " ms) running `" + shown + "`: " + msg);
    throw Error(ErrorCode::Database,
                "SQLite error on " + m_path + " running `" + shown + "`: " + msg);
}

void Database::exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &err);
    sqlite3_free(err);  // errmsg() below reports the same text
    if (rc != SQLITE_OK) fail(rc, sql);
}

int64_t Database::queryInt(const std::string& sql) {
    Statement st(*this, sql);
    return st.step() ? st.columnInt(0) : 0;
}

std::string Database::queryText(const std::string& sql) {
    Statement st(*this, sql);
    return st.step() ? st.columnText(0) : std::string();
}

int64_t Database::lastInsertId() const {
    return sqlite3_last_insert_rowid(m_db);
}

int Database::changes() const {
    return sqlite3_changes(m_db);
}

// ---- Statement ----

Statement::Statement(Database& db, const std::string& sql) : m_db(db), m_sql(sql) {
    int rc = sqlite3_prepare_v2(db.handle(), sql.c_str(), static_cast<int>(sql.size()), &m_stmt,
                                nullptr);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(m_stmt);
        m_stmt = nullptr;
        db.fail(rc, sql);
    }
}

Statement::~Statement() {
    sqlite3_finalize(m_stmt);
}

Statement& Statement::bindInt(int index, int64_t value) {
    int rc = sqlite3_bind_int64(m_stmt, index, value);
    if (rc != SQLITE_OK) m_db.fail(rc, m_sql);
    return *this;
}

Statement& Statement::bindReal(int index, double value) {
    if (std::isnan(value)) return bindNull(index);
    int rc = sqlite3_bind_double(m_stmt, index, value);
    if (rc != SQLITE_OK) m_db.fail(rc, m_sql);
    return *this;
}

Statement& Statement::bindOptReal(int index, const std::optional<double>& value) {
    if (!value) return bindNull(index);
    if (std::isnan(*value)) return bindText(index, "NaN");
    return bindReal(index, *value);
}

Statement& Statement::bindText(int index, const std::string& value) {
    int rc = sqlite3_bind_text(m_stmt, index, value.data(), static_cast<int>(value.size()),
                               SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) m_db.fail(rc, m_sql);
    return *this;
}

Statement& Statement::bindBlob(int index, const void* data, size_t bytes) {
    // A zero-length blob with a null pointer would bind NULL; keep it an empty blob.
    static const char kEmpty = 0;
    int rc = sqlite3_bind_blob64(m_stmt, index, bytes ? data : &kEmpty, bytes, SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) m_db.fail(rc, m_sql);
    return *this;
}

Statement& Statement::bindColumn(int index, const Statement& from, int col) {
    int rc = sqlite3_bind_value(m_stmt, index, sqlite3_column_value(from.m_stmt, col));
    if (rc != SQLITE_OK) m_db.fail(rc, m_sql);
    return *this;
}

Statement& Statement::bindNull(int index) {
    int rc = sqlite3_bind_null(m_stmt, index);
    if (rc != SQLITE_OK) m_db.fail(rc, m_sql);
    return *this;
}

bool Statement::step() {
    int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    // Reset before throwing so a cached statement is usable again after the caller recovers.
    sqlite3_reset(m_stmt);
    m_db.fail(rc, m_sql);
}

void Statement::exec() {
    while (step()) {
    }
    sqlite3_reset(m_stmt);
}

void Statement::reset() {
    sqlite3_reset(m_stmt);
}

bool Statement::isNull(int col) const {
    return sqlite3_column_type(m_stmt, col) == SQLITE_NULL;
}

int64_t Statement::columnInt(int col) const {
    return sqlite3_column_int64(m_stmt, col);
}

double Statement::columnReal(int col) const {
    // A REAL column turns numeric text into a number as it stores it, so text left in one is
    // not a number: bindOptReal's 'NaN', or an imported file's. sqlite3_column_double would
    // read it as 0, which a reader would show as a healthy value.
    const int type = sqlite3_column_type(m_stmt, col);
    if (type == SQLITE_NULL || type == SQLITE_TEXT || type == SQLITE_BLOB)
        return std::numeric_limits<double>::quiet_NaN();
    return sqlite3_column_double(m_stmt, col);
}

std::optional<double> Statement::columnOptReal(int col) const {
    switch (sqlite3_column_type(m_stmt, col)) {
        case SQLITE_NULL:
            return std::nullopt;
        case SQLITE_TEXT:  // bindOptReal's 'NaN'; any other text is not a number either
        case SQLITE_BLOB:
            return std::numeric_limits<double>::quiet_NaN();
        default:
            return sqlite3_column_double(m_stmt, col);
    }
}

std::string Statement::columnText(int col) const {
    const unsigned char* text = sqlite3_column_text(m_stmt, col);
    if (!text) return {};
    return std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(m_stmt, col));
}

std::vector<unsigned char> Statement::columnBlob(int col) const {
    const auto* data = static_cast<const unsigned char*>(sqlite3_column_blob(m_stmt, col));
    int bytes = sqlite3_column_bytes(m_stmt, col);  // after column_blob, as the docs require
    if (!data || bytes <= 0) return {};
    return std::vector<unsigned char>(data, data + bytes);
}

// ---- Transaction ----

Transaction::Transaction(Database& db) : m_db(db) {
    m_db.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
    if (!m_done) sqlite3_exec(m_db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
    m_db.exec("COMMIT");
    m_done = true;
}

}  // namespace qklab
