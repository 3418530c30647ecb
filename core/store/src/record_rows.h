// record_rows.h — storing and reading the rows of a record table (qklab/store/record_columns.h):
// the SQL is built from the table, values are bound to slots in column order and decoded in
// the same order, so no statement names or numbers a record's columns itself.
#pragma once

#include <string>
#include <vector>

#include "qklab/store/record_columns.h"
#include "sqlite_db.h"

namespace qklab {

inline void bindValue(Statement& st, int slot, ColumnType type, const ColumnValue& value) {
    if (const double* d = std::get_if<double>(&value)) {
        if (type == ColumnType::OptionalReal)
            st.bindOptReal(slot, *d);
        else
            st.bindReal(slot, *d);
    } else if (const int64_t* i = std::get_if<int64_t>(&value)) {
        st.bindInt(slot, *i);
    } else if (const std::string* s = std::get_if<std::string>(&value)) {
        st.bindText(slot, *s);
    } else if (const ColumnBytes* b = std::get_if<ColumnBytes>(&value)) {
        st.bindBlob(slot, b->data(), b->size());  // none: an empty blob, not NULL
    } else {
        st.bindNull(slot);
    }
}

inline ColumnValue readValue(const Statement& st, int col, ColumnType type) {
    switch (type) {
        case ColumnType::Real:
            return st.columnReal(col);
        case ColumnType::OptionalReal: {
            const auto v = st.columnOptReal(col);
            return v ? ColumnValue(*v) : ColumnValue();
        }
        case ColumnType::Integer:
            return st.isNull(col) ? ColumnValue() : ColumnValue(st.columnInt(col));
        case ColumnType::Blob:
            return st.isNull(col) ? ColumnValue() : ColumnValue(st.columnBlob(col));
        case ColumnType::Text:
            break;
    }
    return st.isNull(col) ? ColumnValue() : ColumnValue(st.columnText(col));
}

// What a reader selects for a column: a column newer than the file (schema `version`) reads as
// absent, as a run column's `before`.
template <class Record>
std::string selected(const RecordColumn<Record>& c, int version) {
    return version >= c.since ? c.name : "NULL";
}
inline std::string selected(const RunColumn& c, int version) {
    return version >= c.since ? c.select : c.before;
}

template <class Column>
std::string selectList(const std::vector<Column>& columns, int version) {
    std::string out;
    for (const Column& c : columns) out += (out.empty() ? "" : ", ") + selected(c, version);
    return out;
}

// The statement's current row as a record: result column i holds columns[i].
template <class Record, class Column>
Record decodeRow(const Statement& st, const std::vector<Column>& columns) {
    Record row;
    for (size_t i = 0; i < columns.size(); ++i)
        columns[i].set(row, readValue(st, static_cast<int>(i), columns[i].type));
    return row;
}

// INSERT [OR IGNORE | OR REPLACE] INTO <table>(run_id, <columns>) VALUES(?, ...).
template <class Record>
std::string insertSql(const RecordTable<Record>& t) {
    using Insert = typename RecordTable<Record>::Insert;
    std::string names = "run_id", marks = "?";
    for (const auto& c : t.columns) {
        names += std::string(", ") + c.name;
        marks += ", ?";
    }
    const char* verb = t.insert == Insert::KeepFirst  ? "INSERT OR IGNORE"
                       : t.insert == Insert::KeepLast ? "INSERT OR REPLACE"
                                                      : "INSERT";
    return std::string(verb) + " INTO " + t.table + "(" + names + ") VALUES(" + marks + ")";
}

// Binds and runs `st` (insertSql(t)) once per row.
template <class Record>
void insertRows(Statement& st, const RecordTable<Record>& t, int64_t runId,
                const std::vector<Record>& rows) {
    for (const Record& row : rows) {
        st.bindInt(1, runId);
        int slot = 2;
        for (const auto& c : t.columns) bindValue(st, slot++, c.type, c.get(row));
        st.exec();
    }
}

// One run's rows where `where` holds (SQL over the table's columns, "" for all; its ?s are
// bound to `keys`), in the table's order; none in a file (schema `version`) older than the
// table: a reader reads an older file as it is.
template <class Record, class... Keys>
std::vector<Record> readRowsWhere(Database& db, int version, const RecordTable<Record>& t,
                                  int64_t runId, const std::string& where, Keys... keys) {
    std::vector<Record> out;
    if (version < t.since) return out;
    Statement st(db, "SELECT " + selectList(t.columns, version) + " FROM " + t.table +
                         " WHERE run_id = ?" + (where.empty() ? "" : " AND " + where) +
                         " ORDER BY " + t.order);
    st.bindAll(runId, keys...);
    while (st.step()) out.push_back(decodeRow<Record>(st, t.columns));
    return out;
}

// One run's rows from step `fromStep` on.
template <class Record>
std::vector<Record> readRows(Database& db, int version, const RecordTable<Record>& t, int64_t runId,
                             int64_t fromStep = 0) {
    return readRowsWhere(db, version, t, runId, "step >= ?", fromStep);
}

}  // namespace qklab
