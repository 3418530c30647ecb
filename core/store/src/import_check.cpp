// import_check.cpp — what importing accepts from another qklab file.
//
// A shard or a colleague's database is someone else's file: one row with a status this build
// has no name for, a name holding ESC sequences or a config nested 100000 deep used to be
// copied as it was and then broke every reader of the target. Every row is checked here
// before anything is written; the first bad value refuses the whole file, naming the file,
// the run (or sweep) and the column.
//
// The generic part comes from the schema itself: each column of the file's schema version
// (replayed in memory) must hold what its declared type says (an integer, a number or the
// text 'NaN' that bindOptReal writes, one line of bounded text, a bounded blob), one table scan
// each. Then the values with a meaning: statuses, kinds, names, UUIDs, JSON, sweep references.
#include "import_check.h"

#include <map>
#include <set>

#include "qklab/config/sweep.h"
#include "qklab/store/records.h"
#include "qklab/store/run_store.h"
#include "qklab/util/text_util.h"
#include "schema.h"
#include "sqlite_db.h"

namespace qklab {

namespace {

constexpr int64_t kMaxLineBytes = 64 << 10;  // one line of text: a name, a date, a tag list
constexpr int64_t kMaxTextBytes = static_cast<int64_t>(kMaxStoredJsonBytes);  // JSON, notes
constexpr int64_t kMaxMapSize = 8192;       // an attention map's side (T)
constexpr int64_t kMaxBlobBytes = 8 << 20;  // histogram counts, map tokens
constexpr size_t kMaxUuidBytes = 100;

// Text columns that may hold line breaks and tabs (paragraphs, JSON). Every other text column
// is one line: it is printed in tables.
const std::set<std::string> kMultiLine{
    "notes",       "status_message",  "diagnosis",    "text",       "config_json",
    "params_json", "definition_json", "sweep_coords", "user_config"};

std::string quoted(const std::string& names) {
    return "(" + names + ")";
}

// "'a', 'b', ...": every name of E (an Unknown value has none), as SQL and in messages.
template <class E>
std::string quotedNames() {
    std::string out;
    for (const char* name : Choices<E>::names)
        out += std::string(out.empty() ? "" : ", ") + "'" + name + "'";
    return out;
}

// SQL true when text column c holds a control character: any C0 but tab, line feed and
// carriage return where line breaks are allowed, DEL, and the C1 range U+0080..U+009F.
std::string controlGlob(const std::string& c, bool multiLine) {
    const std::string c0 = multiLine ? "char(1) || '-' || char(8) || char(11) || char(12) || "
                                       "char(14) || '-' || char(31)"
                                     : "char(1) || '-' || char(31)";
    return "(" + c + " GLOB '*[' || " + c0 + " || char(127) || char(128) || '-' || char(159) || " +
           "']*' OR instr(CAST(" + c + " AS BLOB), x'00') > 0)";
}

// What column `c` of `table` must hold, beyond its declared type, and in words.
std::pair<std::string, std::string> meaningRule(const std::string& table, const std::string& c) {
    if (table == "runs" && c == "status")
        return {c + " IN " + quoted(quotedNames<RunStatus>()),
                "one of " + quotedNames<RunStatus>()};
    if ((table == "spikes" || table == "logit_alarms") && c == "kind")
        return {c + " IN " + quoted(quotedNames<SpikeKind>()),
                "one of " + quotedNames<SpikeKind>()};
    if (table == "events" && c == "source")
        return {c + " IN ('config', 'user')", "'config' or 'user'"};
    if (c == "step" || c == "steps_done" || c == "sweep_point")
        return {c + " >= 0", "an integer from 0"};
    if (table == "attention_maps" && c == "size")
        return {c + " BETWEEN 0 AND " + std::to_string(kMaxMapSize),
                "an integer from 0 to " + std::to_string(kMaxMapSize)};
    if (table == "attention_maps" && c == "weights")
        return {"length(weights) = size * size * 4", "a blob of size x size float32 weights"};
    if (table == "histograms" && c == "counts")
        return {"length(counts) % 8 = 0", "a blob of whole int64 counts"};
    if (table == "sweeps" && c == "points")
        return {c + " BETWEEN 0 AND " + std::to_string(kMaxSweepPoints),
                "an integer from 0 to " + std::to_string(kMaxSweepPoints)};
    return {"", ""};
}

struct ColumnRule {
    std::string name, sql, expected;
};

// The rule of one column from its declared type (`type`, `notNull`) and its meaning.
ColumnRule columnRule(const std::string& table, const std::string& c, const std::string& type,
                      bool notNull) {
    std::string sql, expected;
    if (type == "INTEGER") {
        sql = "typeof(" + c + ") = 'integer'";
        expected = "an integer";
    } else if (type == "REAL") {
        sql = "(typeof(" + c + ") IN ('real', 'integer') OR " + c + " IS 'NaN')";
        expected = "a number";
    } else if (type == "BLOB") {
        const int64_t limit = table == "attention_maps" && c == "weights"
                                  ? int64_t{Database::kMaxValueBytes}
                                  : kMaxBlobBytes;
        sql = "(typeof(" + c + ") = 'blob' AND length(" + c + ") <= " + std::to_string(limit) + ")";
        expected = "at most " + std::to_string(limit) + " bytes of binary data";
    } else if (c == "name" && (table == "runs" || table == "sweeps" || table == "custom_scalars")) {
        // Any bytes: a name the rule refuses is stored under it (nameUnderTheRule), escaped.
        sql = "(typeof(" + c + ") = 'text' AND length(CAST(" + c +
              " AS BLOB)) <= " + std::to_string(kMaxLineBytes) + ")";
        expected = "text of at most " + std::to_string(kMaxLineBytes) + " bytes";
    } else {  // TEXT (and anything undeclared): bounded text without control characters
        const bool multi = kMultiLine.count(c) > 0;
        const int64_t limit = multi ? kMaxTextBytes : kMaxLineBytes;
        sql = "(typeof(" + c + ") = 'text' AND length(CAST(" + c +
              " AS BLOB)) <= " + std::to_string(limit) + " AND NOT " + controlGlob(c, multi) + ")";
        expected = std::string(multi ? "text" : "one line of text") + " of at most " +
                   std::to_string(limit) + " bytes without control characters";
    }
    const auto [meaning, words] = meaningRule(table, c);
    if (!meaning.empty()) {
        sql += " AND " + meaning;
        expected = words;  // what it means says more than its type
    }
    // uuid was added without NOT NULL (older rows were backfilled), but every run has one.
    const bool required = notNull || c == "uuid";
    sql = required ? "(" + c + " IS NOT NULL AND " + sql + ")"
                   : "(" + c + " IS NULL OR (" + sql + "))";
    return {c, sql, expected};
}

struct TableInfo {
    std::vector<ColumnRule> rules;
    std::vector<std::string> key;  // primary key columns
};

TableInfo tableInfo(Database& schema, const std::string& table) {
    TableInfo t;
    std::map<int64_t, std::string> key;
    Statement st(schema, "SELECT name, upper(type), \"notnull\", pk FROM pragma_table_info(?)");
    st.bindText(1, table);
    while (st.step()) {
        const std::string c = st.columnText(0);
        if (st.columnInt(3) > 0) key[st.columnInt(3)] = c;
        if (table != "runs" && c == "run_id") continue;  // rows of missing runs are not copied
        if (c == "id" && table != "runs" && table != "sweeps") continue;  // new ids are given
        t.rules.push_back(columnRule(table, c, st.columnText(1), st.columnInt(2) != 0));
    }
    for (const auto& [i, c] : key) t.key.push_back(c);
    return t;
}

std::string joined(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
}

// "run 3" / "sweep 2" / "run 3 (table spikes)" for a row found by a query over `table`.
std::string rowName(const std::string& table, int64_t id) {
    if (table == "runs") return "run " + std::to_string(id);
    if (table == "sweeps") return "sweep " + std::to_string(id);
    return "run " + std::to_string(id) + ", table " + table;
}

// One scan of `table`: the first row breaking a column rule refuses the file.
void checkColumns(Database& src, const std::string& path, const std::string& table,
                  const TableInfo& t) {
    if (t.rules.empty()) return;
    const std::string owner = table == "runs" || table == "sweeps" ? "id" : "run_id";
    std::string which = "CASE", any;
    for (size_t i = 0; i < t.rules.size(); ++i) {
        which += " WHEN NOT " + t.rules[i].sql + " THEN " + std::to_string(i);
        any += (any.empty() ? "NOT " : " OR NOT ") + t.rules[i].sql;
    }
    Statement st(src, "SELECT " + owner + ", " + which + " END FROM " + table + " WHERE " + any +
                          " LIMIT 1");
    if (!st.step()) return;
    const int64_t id = st.columnInt(0);
    const ColumnRule& rule = t.rules[static_cast<size_t>(st.columnInt(1))];
    Statement value(src, "SELECT typeof(" + rule.name + "), substr(CAST(" + rule.name +
                             " AS BLOB), 1, 80) FROM " + table + " WHERE " + owner +
                             " = ? AND NOT " + rule.sql + " LIMIT 1");
    value.bindInt(1, id);
    const bool found = value.step();
    const std::string type = found ? value.columnText(0) : "?";
    const std::string shown = found ? clipped(printableText(value.columnText(1)), 60) : "";
    throw Error(ErrorCode::NotQklabDatabase,
                path + ": " + rowName(table, id) + ": " + rule.name + " holds " +
                    (type == "null" ? std::string("NULL") : type + " '" + shown + "'") +
                    "; expected " + rule.expected + ". Nothing was imported.");
}

// A primary key the file's table may not enforce (a hand-made table) must still be unique:
// a duplicate would fail the copy half-way.
void checkKey(Database& src, const std::string& path, const std::string& table,
              const std::vector<std::string>& key) {
    if (key.empty()) return;
    Statement st(src, "SELECT " + joined(key) + " FROM " + table + " GROUP BY " + joined(key) +
                          " HAVING count(*) > 1 LIMIT 1");
    if (st.step())
        throw Error(ErrorCode::NotQklabDatabase,
                    path + ": table " + table + " holds two rows with the same " + joined(key) +
                        " (" + clipped(printableText(st.columnText(0)), 60) +
                        ", ...). Nothing was imported.");
}

[[noreturn]] void refuse(const std::string& path, const std::string& row, const std::string& what) {
    throw Error(ErrorCode::NotQklabDatabase,
                path + ": " + row + ": " + what + ". Nothing was imported.");
}

void checkUuid(const std::string& path, const std::string& row, const std::string& uuid,
               std::set<std::string>& seen) {
    bool ok = !uuid.empty() && uuid.size() <= kMaxUuidBytes;
    for (unsigned char c : uuid) ok = ok && c >= 0x20 && c < 0x7f;
    if (!ok)
        refuse(path, row,
               "uuid '" + clipped(printableText(uuid), 60) + "' is not 1 to " +
                   std::to_string(kMaxUuidBytes) + " printable ASCII characters");
    if (!seen.insert(uuid).second)
        refuse(path, row, "uuid '" + clipped(uuid, 60) + "' belongs to another row too");
}

// The JSON object stored in a column ("" allowed where `emptyOk`).
void checkJsonObject(const std::string& path, const std::string& row, const std::string& column,
                     const std::string& text, bool emptyOk) {
    if (text.empty() && emptyOk) return;
    try {
        if (!parseStoredJson(text, column).is_object())
            refuse(path, row, column + " is not a JSON object: '" + clipped(text, 60) + "'");
    } catch (const Error& e) {
        if (e.code() != ErrorCode::NotQklabDatabase) throw;
        refuse(path, row, e.what());
    }
}

// Sweeps: UUID, name, a definition a reader can expand. Returns id -> grid size.
std::map<int64_t, int64_t> checkSweeps(Database& src, const std::string& path) {
    std::map<int64_t, int64_t> points;
    std::set<std::string> uuids;
    Statement st(src, "SELECT id, uuid, name, definition_json, points FROM sweeps");
    while (st.step()) {
        const std::string row = "sweep " + std::to_string(st.columnInt(0));
        checkUuid(path, row, st.columnText(1), uuids);
        // A name the rule refuses is stored under the rule (nameUnderTheRule), not refused.
        try {  // its messages start with the origin given: "<file>: sweep 2: ..."
            parseStoredSweep(st.columnText(3), path + ": " + row);
        } catch (const Error& e) {
            throw Error(ErrorCode::NotQklabDatabase,
                        std::string(e.what()) + ". Nothing was imported.");
        }
        points[st.columnInt(0)] = st.columnInt(4);
    }
    return points;
}

void checkRuns(Database& src, int version, const std::string& path,
               const std::map<int64_t, int64_t>& sweepPoints) {
    const bool sweeps = hasFeature(version, SchemaFeature::Sweeps);
    const bool external = hasFeature(version, SchemaFeature::ExternalRuns);
    Statement st(src, std::string("SELECT r.id, r.name, r.config_json, ") +
                          (sweeps ? "r.uuid, r.sweep_id, r.sweep_point, r.sweep_coords"
                                  : std::string(kLegacyRunUuid) + ", NULL, NULL, NULL") +
                          (external ? ", r.user_config" : ", ''") + " FROM runs r");
    std::set<std::string> uuids;
    while (st.step()) {
        const std::string row = "run " + std::to_string(st.columnInt(0)) + " ('" +
                                clipped(printableText(st.columnText(1)), 60) + "')";
        checkUuid(path, row, st.columnText(3), uuids);
        checkJsonObject(path, row, "config_json", st.columnText(2), true);
        // qklab.init(config=): older packages wrote bare NaN / Infinity, read as "nan" / "inf".
        checkJsonObject(path, row, "user_config", quoteNonFiniteNumbers(st.columnText(7)), true);
        if (st.isNull(4)) continue;
        const auto sweep = sweepPoints.find(st.columnInt(4));
        if (sweep == sweepPoints.end())
            refuse(path, row, "sweep_id " + std::to_string(st.columnInt(4)) + " names no sweep");
        if (!st.isNull(5) && st.columnInt(5) >= sweep->second)
            refuse(path, row,
                   "sweep_point " + std::to_string(st.columnInt(5)) + " is outside its sweep's " +
                       std::to_string(sweep->second) + " points");
        if (!st.isNull(6)) checkJsonObject(path, row, "sweep_coords", st.columnText(6), false);
    }
}

void checkEventParams(Database& src, const std::string& path) {
    Statement st(src, "SELECT run_id, step, params_json FROM events");
    while (st.step())
        checkJsonObject(path,
                        "run " + std::to_string(st.columnInt(0)) + ", event at step " +
                            std::to_string(st.columnInt(1)),
                        "params_json", st.columnText(2), true);
}

}  // namespace

void checkImportRows(Database& src, int version, const std::string& path) {
    const auto schema = schemaOfVersion(version);
    Statement tables(*schema, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    while (tables.step()) {
        const std::string table = tables.columnText(0);
        if (table == "comparisons") continue;  // not imported
        const TableInfo t = tableInfo(*schema, table);
        checkColumns(src, path, table, t);
        checkKey(src, path, table, t.key);
    }
    const std::map<int64_t, int64_t> sweepPoints = hasFeature(version, SchemaFeature::Sweeps)
                                                       ? checkSweeps(src, path)
                                                       : std::map<int64_t, int64_t>{};
    checkRuns(src, version, path, sweepPoints);
    checkEventParams(src, path);
}

}  // namespace qklab
