// column_makers.h — how record_columns.cpp makes a table's column of a record's field: the
// value conversions, the blob encodings and the makers (column, blobColumn) with their import
// rules (importedAs, checked, counted, required). Private to the store.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "qklab/store/record_columns.h"
#include "qklab/util/choices.h"

namespace qklab::column_makers {

inline int64_t integerOf(const ColumnValue& v) {
    const int64_t* i = std::get_if<int64_t>(&v);
    return i ? *i : 0;
}

inline double realOf(const ColumnValue& v) {
    return numberOf(v).value_or(std::numeric_limits<double>::quiet_NaN());
}

inline std::string textOf(const ColumnValue& v) {
    const std::string* s = std::get_if<std::string>(&v);
    return s ? *s : std::string();
}

inline ColumnBytes bytesOf(const ColumnValue& v) {
    const ColumnBytes* b = std::get_if<ColumnBytes>(&v);
    return b ? *b : ColumnBytes();
}

// Counts and weights are stored little-endian, whatever the machine.
inline ColumnBytes int64Bytes(const std::vector<int64_t>& values) {
    ColumnBytes out(values.size() * 8);
    for (size_t i = 0; i < values.size(); ++i) {
        auto v = static_cast<uint64_t>(values[i]);
        for (int b = 0; b < 8; ++b) out[i * 8 + b] = static_cast<unsigned char>(v >> (8 * b));
    }
    return out;
}

// Trailing bytes short of a whole value are dropped (a hand-edited blob).
inline std::vector<int64_t> int64sOf(const ColumnBytes& bytes) {
    std::vector<int64_t> out(bytes.size() / 8);
    for (size_t i = 0; i < out.size(); ++i) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; --b) v = (v << 8) | bytes[i * 8 + b];
        out[i] = static_cast<int64_t>(v);
    }
    return out;
}

inline ColumnBytes floatBytes(const std::vector<float>& values) {
    ColumnBytes out(values.size() * 4);
    for (size_t i = 0; i < values.size(); ++i) {
        uint32_t v;
        std::memcpy(&v, &values[i], sizeof v);
        for (int b = 0; b < 4; ++b) out[i * 4 + b] = static_cast<unsigned char>(v >> (8 * b));
    }
    return out;
}

inline std::vector<float> floatsOf(const ColumnBytes& bytes) {
    std::vector<float> out(bytes.size() / 4);
    for (size_t i = 0; i < out.size(); ++i) {
        uint32_t v = 0;
        for (int b = 3; b >= 0; --b) v = (v << 8) | bytes[i * 4 + b];
        std::memcpy(&out[i], &v, sizeof v);
    }
    return out;
}

template <class T>
constexpr ColumnType columnTypeOf() {
    if constexpr (std::is_same_v<T, double>)
        return ColumnType::Real;
    else if constexpr (std::is_same_v<T, std::optional<double>>)
        return ColumnType::OptionalReal;
    else if constexpr (std::is_integral_v<T>)
        return ColumnType::Integer;
    else
        return ColumnType::Text;  // text, and enums by their Choices name
}

template <class T>
ColumnValue valueOf(const T& field) {
    if constexpr (std::is_same_v<T, std::optional<double>>)
        return field ? ColumnValue(*field) : ColumnValue();
    else if constexpr (std::is_enum_v<T>)
        return std::string(nameOrUnknown(field));
    else if constexpr (std::is_integral_v<T>)
        return static_cast<int64_t>(field);
    else
        return field;
}

template <class T>
T fieldOf(const ColumnValue& v) {
    if constexpr (std::is_same_v<T, double>)
        return realOf(v);
    else if constexpr (std::is_same_v<T, std::optional<double>>)
        return numberOf(v);
    else if constexpr (std::is_integral_v<T>)
        return static_cast<T>(integerOf(v));
    else if constexpr (std::is_enum_v<T>)  // a name this build does not know: Unknown
        return parseChoice<T>(textOf(v)).value_or(T::Unknown);
    else
        return textOf(v);
}

// "'a', 'b', ...": every name of E (an Unknown value has none), as SQL and in messages.
template <class E>
std::string quotedNames() {
    std::string out;
    for (const char* name : Choices<E>::names)
        out += std::string(out.empty() ? "" : ", ") + "'" + name + "'";
    return out;
}

// The record's field as a column. An enum's column imports only the names E has.
template <class Record, class T>
RecordColumn<Record> column(const char* name, const char* title, T Record::*field, int since = 1) {
    RecordColumn<Record> c{name,
                           title,
                           columnTypeOf<T>(),
                           [field](const Record& r) { return valueOf(r.*field); },
                           [field](Record& r, const ColumnValue& v) { r.*field = fieldOf<T>(v); },
                           since};
    if constexpr (std::is_enum_v<T>) {
        c.import.check = std::string(name) + " IN (" + quotedNames<T>() + ")";
        c.import.meaning = "one of " + quotedNames<T>();
    }
    return c;
}

// The column as it is imported.
template <class Column>
Column importedAs(Column c, ImportRule::Text text,
                  ImportRule::OnContinue onContinue = ImportRule::OnContinue::Taken) {
    c.import.text = text;
    c.import.onContinue = onContinue;
    return c;
}

// The column imported with `check` (SQL over the row), meaning `meaning`.
template <class Column>
Column checked(Column c, std::string check, std::string meaning) {
    c.import.check = std::move(check);
    c.import.meaning = std::move(meaning);
    return c;
}

// An integer from 0 to `most` (none: no upper bound).
template <class Column>
Column counted(Column c, std::optional<int64_t> most = std::nullopt) {
    const std::string name = c.name;
    if (!most) return checked(std::move(c), name + " >= 0", "an integer from 0");
    const std::string m = std::to_string(*most);
    return checked(std::move(c), name + " BETWEEN 0 AND " + m, "an integer from 0 to " + m);
}

// Every record's step: from 0.
template <class Record>
RecordColumn<Record> stepColumn(int64_t Record::*field) {
    return counted(column("step", "step", field));
}

// The record's field as a blob: `encode` makes the stored bytes of the field, `decode` the
// field of the stored bytes (none when the value is NULL).
template <class Record, class T, class Encode, class Decode>
RecordColumn<Record> blobColumn(const char* name, const char* title, T Record::*field,
                                Encode encode, Decode decode, int since = 1) {
    return {name,
            title,
            ColumnType::Blob,
            [field, encode](const Record& r) { return ColumnValue(encode(r.*field)); },
            [field, decode](Record& r, const ColumnValue& v) { r.*field = decode(bytesOf(v)); },
            since};
}

// A column every imported row has, whatever its schema declares (a UUID added without NOT
// NULL: older rows were backfilled).
template <class Column>
Column required(Column c) {
    c.import.required = true;
    return c;
}

// Text stored as NULL when empty (not recorded).
template <class Record>
RecordColumn<Record> nullWhenEmpty(RecordColumn<Record> c) {
    c.get = [get = c.get](const Record& r) {
        ColumnValue v = get(r);
        return textOf(v).empty() ? ColumnValue() : v;
    };
    return c;
}

}  // namespace qklab::column_makers
