// import_check.cpp — what importing accepts from another qklab file.
//
// A shard or a colleague's database is someone else's file: one row with a status this build
// has no name for, a name holding ESC sequences or a config nested 100000 deep used to be
// copied as it was and then broke every reader of the target. Every row is checked here
// before anything is written; the first bad value refuses the whole file, naming the file,
// the run (or sweep) and the column.
//
// Each column of the file's schema version (replayed in memory) must hold what its declared
// type says (an integer, a number or the text 'NaN' that bindOptReal writes, bounded text, a
// bounded blob) and what its column table's import rule adds (qklab/store/record_columns.h:
// paragraphs or one line, names, JSON objects, statuses, kinds, steps from 0), one table scan
// each. Then what relates rows: UUIDs, sweeps and the sweep references of runs.
#include "import_check.h"

#include <map>
#include <set>

#include "qklab/config/sweep.h"
#include "qklab/store/record_columns.h"
#include "qklab/store/run_store.h"
#include "qklab/util/text_util.h"
#include "schema.h"
#include "sqlite_db.h"

namespace qklab {

namespace {

constexpr int64_t kMaxLineBytes = 64 << 10;  // one line of text: a name, a date, a tag list
constexpr int64_t kMaxTextBytes = static_cast<int64_t>(kMaxStoredJsonBytes);  // JSON, notes
constexpr int64_t kMaxBlobBytes = 8 << 20;  // histogram counts, map tokens
constexpr size_t kMaxUuidBytes = 100;

using Text = ImportRule::Text;

// SQL true when text column c holds a control character: any C0 but tab, line feed and
// carriage return where line breaks are allowed, DEL, and the C1 range U+0080..U+009F.
std::string controlGlob(const std::string& c, bool multiLine) {
    const std::string c0 = multiLine ? "char(1) || '-' || char(8) || char(11) || char(12) || "
                                       "char(14) || '-' || char(31)"
                                     : "char(1) || '-' || char(31)";
    return "(" + c + " GLOB '*[' || " + c0 + " || char(127) || char(128) || '-' || char(159) || " +
           "']*' OR instr(CAST(" + c + " AS BLOB), x'00') > 0)";
}

struct ColumnRule {
    std::string name, sql, expected;
    Text text;
};

// The rule of one column from its declared type (`type`, `notNull`) and its import rule.
ColumnRule columnRule(const std::string& table, const std::string& c, const std::string& type,
                      bool notNull) {
    const ImportRule rule = importRuleOf(table, c);
    std::string sql, expected;
    if (type == "INTEGER") {
        sql = "typeof(" + c + ") = 'integer'";
        expected = "an integer";
    } else if (type == "REAL") {
        sql = "(typeof(" + c + ") IN ('real', 'integer') OR " + c + " IS 'NaN')";
        expected = "a number";
    } else if (type == "BLOB") {
        const int64_t limit = rule.maxBytes > 0 ? rule.maxBytes : kMaxBlobBytes;
        sql = "(typeof(" + c + ") = 'blob' AND length(" + c + ") <= " + std::to_string(limit) + ")";
        expected = "at most " + std::to_string(limit) + " bytes of binary data";
    } else if (rule.text == Text::Name) {
        // Any bytes: a name the rule refuses is stored under it (nameUnderTheRule), escaped.
        sql = "(typeof(" + c + ") = 'text' AND length(CAST(" + c +
              " AS BLOB)) <= " + std::to_string(kMaxLineBytes) + ")";
        expected = "text of at most " + std::to_string(kMaxLineBytes) + " bytes";
    } else {  // TEXT (and anything undeclared): bounded text without control characters
        const bool multi = rule.text != Text::Line;
        const int64_t limit = rule.maxBytes > 0 ? rule.maxBytes
                              : multi           ? kMaxTextBytes
                                                : kMaxLineBytes;
        sql = "(typeof(" + c + ") = 'text' AND length(CAST(" + c +
              " AS BLOB)) <= " + std::to_string(limit) + " AND NOT " + controlGlob(c, multi) + ")";
        expected = std::string(multi ? "text" : "one line of text") + " of at most " +
                   std::to_string(limit) + " bytes without control characters";
    }
    if (!rule.check.empty()) {
        sql += " AND (" + rule.check + ")";
        expected = rule.meaning;  // what it means says more than its type
    }
    sql = notNull || rule.required ? "(" + c + " IS NOT NULL AND " + sql + ")"
                                   : "(" + c + " IS NULL OR (" + sql + "))";
    return {c, sql, expected, rule.text};
}

struct TableInfo {
    std::vector<ColumnRule> rules;
    std::vector<std::string> key;  // primary key columns
};

TableInfo tableInfo(Database& schema, const std::string& table) {
    TableInfo t;
    std::map<int64_t, std::string> key;
    Statement st(schema,
                 "SELECT name, upper(type) AS type, \"notnull\", pk FROM pragma_table_info(?)");
    st.bindAll(table);
    while (st.step()) {
        const std::string c = st.columnText("name");
        if (st.columnInt("pk") > 0) key[st.columnInt("pk")] = c;
        if (table != "runs" && c == "run_id") continue;  // rows of missing runs are not copied
        if (c == "id" && table != "runs" && table != "sweeps") continue;  // new ids are given
        t.rules.push_back(
            columnRule(table, c, st.columnText("type"), st.columnInt("notnull") != 0));
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

// The column a row of `table` names its run (or sweep) by.
std::string ownerOf(const std::string& table) {
    return table == "runs" || table == "sweeps" ? "id" : "run_id";
}

// One scan of `table`: the first row breaking a column rule refuses the file.
void checkColumns(Database& src, const std::string& path, const std::string& table,
                  const TableInfo& t) {
    if (t.rules.empty()) return;
    const std::string owner = ownerOf(table);
    std::string which = "CASE", any;
    for (size_t i = 0; i < t.rules.size(); ++i) {
        which += " WHEN NOT " + t.rules[i].sql + " THEN " + std::to_string(i);
        any += (any.empty() ? "NOT " : " OR NOT ") + t.rules[i].sql;
    }
    Statement st(src, "SELECT " + owner + " AS owner, " + which + " END AS rule FROM " + table +
                          " WHERE " + any + " LIMIT 1");
    if (!st.step()) return;
    const int64_t id = st.columnInt("owner");
    const ColumnRule& rule = t.rules[static_cast<size_t>(st.columnInt("rule"))];
    Statement value(src, "SELECT typeof(" + rule.name + ") AS type, substr(CAST(" + rule.name +
                             " AS BLOB), 1, 80) AS start FROM " + table + " WHERE " + owner +
                             " = ? AND NOT " + rule.sql + " LIMIT 1");
    value.bindAll(id);
    const bool found = value.step();
    const std::string type = found ? value.columnText("type") : "?";
    const std::string shown = found ? clipped(printableText(value.columnText("start")), 60) : "";
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
    Statement st(src, "SELECT " + key.front() + " AS first_key FROM " + table + " GROUP BY " +
                          joined(key) + " HAVING count(*) > 1 LIMIT 1");
    if (st.step())
        throw Error(ErrorCode::NotQklabDatabase,
                    path + ": table " + table + " holds two rows with the same " + joined(key) +
                        " (" + clipped(printableText(st.columnText("first_key")), 60) +
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
        const std::string row = "sweep " + std::to_string(st.columnInt("id"));
        checkUuid(path, row, st.columnText("uuid"), uuids);
        // A name the rule refuses is stored under the rule (nameUnderTheRule), not refused.
        try {  // its messages start with the origin given: "<file>: sweep 2: ..."
            parseStoredSweep(st.columnText("definition_json"), path + ": " + row);
        } catch (const Error& e) {
            throw Error(ErrorCode::NotQklabDatabase,
                        std::string(e.what()) + ". Nothing was imported.");
        }
        points[st.columnInt("id")] = st.columnInt("points");
    }
    return points;
}

// Every JSON column of `table` (ImportRule::Text::Json) holds a JSON object or "".
void checkJsonColumns(Database& src, const std::string& path, const std::string& table,
                      const TableInfo& t) {
    for (const ColumnRule& rule : t.rules) {
        if (rule.text != Text::Json && rule.text != Text::PythonJson) continue;
        Statement st(src, "SELECT " + ownerOf(table) + " AS owner, " + rule.name +
                              " AS json FROM " + table + " WHERE " + rule.name + " IS NOT NULL");
        while (st.step()) {
            // qklab.init(config=): older packages wrote bare NaN / Infinity, read as "nan".
            const std::string text = rule.text == Text::PythonJson
                                         ? quoteNonFiniteNumbers(st.columnText("json"))
                                         : st.columnText("json");
            checkJsonObject(path, rowName(table, st.columnInt("owner")), rule.name, text, true);
        }
    }
}

// Runs: UUIDs, and the sweep and grid point each sweep member names.
void checkRuns(Database& src, int version, const std::string& path,
               const std::map<int64_t, int64_t>& sweepPoints) {
    const bool sweeps = hasFeature(version, SchemaFeature::Sweeps);
    Statement st(src, std::string("SELECT r.id AS id, r.name AS name, ") +
                          (sweeps ? "r.uuid AS uuid, r.sweep_id AS sweep_id, r.sweep_point AS "
                                    "sweep_point, r.sweep_coords AS sweep_coords"
                                  : std::string(kLegacyRunUuid) +
                                        " AS uuid, NULL AS sweep_id, NULL AS sweep_point, NULL AS "
                                        "sweep_coords") +
                          " FROM runs r");
    std::set<std::string> uuids;
    while (st.step()) {
        const std::string row = "run " + std::to_string(st.columnInt("id")) + " ('" +
                                clipped(printableText(st.columnText("name")), 60) + "')";
        checkUuid(path, row, st.columnText("uuid"), uuids);
        const std::optional<int64_t> sweepId = st.columnOptInt("sweep_id");
        if (!sweepId) continue;
        const auto sweep = sweepPoints.find(*sweepId);
        if (sweep == sweepPoints.end())
            refuse(path, row, "sweep_id " + std::to_string(*sweepId) + " names no sweep");
        const std::optional<int64_t> point = st.columnOptInt("sweep_point");
        if (point && *point >= sweep->second)
            refuse(path, row,
                   "sweep_point " + std::to_string(*point) + " is outside its sweep's " +
                       std::to_string(sweep->second) + " points");
        if (!st.isNull("sweep_coords"))
            checkJsonObject(path, row, "sweep_coords", st.columnText("sweep_coords"), false);
    }
}

}  // namespace

void checkImportRows(Database& src, int version, const std::string& path) {
    const auto schema = schemaOfVersion(version);
    Statement tables(*schema, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    while (tables.step()) {
        const std::string table = tables.columnText("name");
        if (table == "comparisons") continue;  // not imported
        const TableInfo t = tableInfo(*schema, table);
        checkColumns(src, path, table, t);
        checkKey(src, path, table, t.key);
        checkJsonColumns(src, path, table, t);
    }
    const std::map<int64_t, int64_t> sweepPoints = hasFeature(version, SchemaFeature::Sweeps)
                                                       ? checkSweeps(src, path)
                                                       : std::map<int64_t, int64_t>{};
    checkRuns(src, version, path, sweepPoints);
}

}  // namespace qklab
