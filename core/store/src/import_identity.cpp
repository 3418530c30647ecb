// import_identity.cpp — see import_identity.h.
//
// Rows are compared step by step: both files' rows of one table are read in step order, and
// each step's rows of ours must all be among the source's (as a multiset, every value equal, a
// REAL to the bit). The source may hold more at a step we have: a spike waits for the next
// probe and is committed after later steps, so a copy taken while the run was written can miss
// rows of steps it has.
#include "import_identity.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "qklab/config/sweep.h"
#include "qklab/util/error.h"
#include "schema.h"

namespace qklab {

const char* const kImportedRunTables[11] = {
    "step_metrics", "probe_stats", "histograms",     "attention_maps", "spikes",   "events",
    "logit_alarms", "qk_clips",    "custom_scalars", "change_reports", "forecasts"};

namespace {

std::vector<std::string> tableColumns(Database& db, const std::string& table) {
    std::vector<std::string> out;
    Statement st(db, "SELECT name FROM pragma_table_info(?)");
    st.bindText(1, table);
    while (st.step()) out.push_back(st.columnText(0));
    return out;
}

template <class T>
void appendBytes(std::string& out, const T& value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out.append(bytes, sizeof(T));
}

// Reads one table's rows of one run in step order, a step at a time, each row encoded as bytes
// (every value's type and exact content) so that two rows are equal when every value is.
class StepGroups {
  public:
    StepGroups(Database& db, const std::string& table, const std::vector<std::string>& cols,
               int64_t runId)
        : m_columns(cols.size()), m_st(db, selectSql(table, cols)) {
        m_st.bindInt(1, runId);
        m_pending = m_st.step();
    }
    // Loads the next step's rows, sorted; false when there are none left.
    bool next() {
        m_rows.clear();
        if (!m_pending) return false;
        m_step = m_st.columnInt(0);
        while (m_pending && m_st.columnInt(0) == m_step) {
            m_rows.push_back(encodedRow());
            m_pending = m_st.step();
        }
        std::sort(m_rows.begin(), m_rows.end());
        return true;
    }
    int64_t step() const { return m_step; }
    const std::vector<std::string>& rows() const { return m_rows; }

  private:
    static std::string selectSql(const std::string& table, const std::vector<std::string>& cols) {
        std::string sql = "SELECT step";
        for (const auto& c : cols) sql += ", typeof(" + c + "), " + c;
        return sql + " FROM " + table + " WHERE run_id = ? ORDER BY step";
    }
    std::string encodedRow() const {
        std::string out;
        for (size_t i = 0; i < m_columns; ++i) {
            const int at = 1 + 2 * static_cast<int>(i);
            const std::string type = m_st.columnText(at);
            out += type.empty() ? '?' : type[0];  // blob, integer, null, real, text
            if (type == "integer") {
                appendBytes(out, m_st.columnInt(at + 1));
            } else if (type == "real") {
                double v = m_st.columnReal(at + 1);
                if (v == 0) v = 0;  // -0.0 is 0.0, as SQLite compares them
                appendBytes(out, v);
            } else if (type == "text") {
                const std::string t = m_st.columnText(at + 1);
                appendBytes(out, t.size());
                out += t;
            } else if (type == "blob") {
                const std::vector<unsigned char> b = m_st.columnBlob(at + 1);
                appendBytes(out, b.size());
                out.append(b.begin(), b.end());
            }
        }
        return out;
    }

    size_t m_columns;
    Statement m_st;
    bool m_pending = false;
    int64_t m_step = 0;
    std::vector<std::string> m_rows;
};

// The first step at which a row of ours in `table` is not in the source, if any.
std::optional<int64_t> firstMissingStep(const Continuation& c, const std::string& table) {
    if (!hasTable(c.src, table)) {  // an older file: none of our rows there
        Statement st(c.dst, "SELECT min(step) FROM " + table + " WHERE run_id = ?");
        st.bindInt(1, c.dstId);
        st.step();
        return st.isNull(0) ? std::nullopt : std::optional<int64_t>(st.columnInt(0));
    }
    const auto cols = sharedColumns(c.src, c.dst, table, {"run_id", "id"});
    StepGroups ours(c.dst, table, cols, c.dstId), theirs(c.src, table, cols, c.srcId);
    bool more = theirs.next();
    while (ours.next()) {
        while (more && theirs.step() < ours.step()) more = theirs.next();
        if (!more || theirs.step() != ours.step() ||
            !std::includes(theirs.rows().begin(), theirs.rows().end(), ours.rows().begin(),
                           ours.rows().end()))
            return ours.step();
    }
    return std::nullopt;
}

// The value of one column of a runs row as text, "" for NULL (both sides alike).
struct RunIdentity {
    std::string config, userConfig, sweepPoint, sweepCoords;
};

RunIdentity readIdentity(Database& db, int64_t id, bool sweeps, bool userConfig) {
    Statement st(db,
                 std::string("SELECT config_json, ") + (userConfig ? "user_config" : "''") +
                     (sweeps ? ", ifnull(sweep_point, ''), ifnull(sweep_coords, '')" : ", '', ''") +
                     " FROM runs WHERE id = ?");
    st.bindInt(1, id);
    if (!st.step()) return {};
    return {st.columnText(0), st.columnText(1), st.columnText(2), st.columnText(3)};
}

// Why the runs rows say the source run is another run, or "".
std::string identityDifference(const Continuation& c) {
    const auto srcCols = tableColumns(c.src, "runs");
    const bool userConfig =
        std::find(srcCols.begin(), srcCols.end(), "user_config") != srcCols.end();
    const bool sweeps = hasFeature(c.srcVersion, SchemaFeature::Sweeps);
    const RunIdentity theirs = readIdentity(c.src, c.srcId, sweeps, userConfig);
    const RunIdentity ours = readIdentity(c.dst, c.dstId, true, userConfig);
    if (theirs.config != ours.config) return "its config differs from ours";
    if (theirs.userConfig != ours.userConfig) return "its user config differs from ours";
    Statement sweep(c.dst, "SELECT sweep_id FROM runs WHERE id = ?");
    sweep.bindInt(1, c.dstId);
    sweep.step();
    const std::optional<int64_t> ourSweep =
        sweep.isNull(0) ? std::nullopt : std::optional<int64_t>(sweep.columnInt(0));
    if (ourSweep != c.sweepHere || theirs.sweepPoint != ours.sweepPoint ||
        theirs.sweepCoords != ours.sweepCoords)
        return "it belongs to another sweep or grid point than ours";
    return "";
}

// The top-level keys of two definitions that differ, "axes, seeds".
std::string differingKeys(const nlohmann::json& a, const nlohmann::json& b) {
    std::string out;
    for (const char* key : {"base", "set", "axes", "zip", "seeds"}) {
        const nlohmann::json none;
        if (a.value(key, none) != b.value(key, none))
            out += (out.empty() ? "" : ", ") + std::string(key);
    }
    return out;
}

}  // namespace

bool hasTable(Database& db, const std::string& table) {
    Statement st(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
    st.bindText(1, table);
    return st.step();
}

std::vector<std::string> sharedColumns(Database& src, Database& dst, const std::string& table,
                                       const std::set<std::string>& skip) {
    const std::vector<std::string> theirs = tableColumns(src, table);
    const std::set<std::string> inSource(theirs.begin(), theirs.end());
    std::vector<std::string> out;
    for (const auto& c : tableColumns(dst, table))
        if (inSource.count(c) && !skip.count(c)) out.push_back(c);
    return out;
}

std::string sweepDifference(const std::string& ourDefinition, int64_t ourPoints,
                            const std::string& theirDefinition, int64_t theirPoints) {
    nlohmann::json ours, theirs;
    try {  // both normalised, so that the text an older build wrote compares by meaning
        ours = sweepToJson(parseStoredSweep(ourDefinition, "this database's sweep"));
    } catch (const Error& e) {
        return std::string("ours cannot be read (") + e.what() + ")";
    }
    theirs = sweepToJson(parseStoredSweep(theirDefinition, "the source's sweep"));
    if (const std::string keys = differingKeys(ours, theirs); !keys.empty())
        return "its grid differs from ours (" + keys + ")";
    if (ourPoints != theirPoints)
        return "it has " + std::to_string(theirPoints) + " points, ours " +
               std::to_string(ourPoints);
    return "";
}

std::string continuationRefusal(const Continuation& c) {
    if (std::string why = identityDifference(c); !why.empty()) return why;
    std::optional<int64_t> missing;
    std::string table;
    for (const char* t : kImportedRunTables) {
        const auto step = firstMissingStep(c, t);
        if (step && (!missing || *step < *missing)) missing = step, table = t;
    }
    if (!missing) return "";  // every row of ours is in the source
    Statement newest(c.dst, "SELECT max(step) FROM checkpoints WHERE run_id = ?");
    newest.bindInt(1, c.dstId);
    newest.step();
    const std::string differs =
        "its " + table + " rows differ from ours at step " + std::to_string(*missing);
    if (newest.isNull(0)) return differs + ", and ours has no checkpoint it could resume from";
    const int64_t checkpoint = newest.columnInt(0);
    if (checkpoint <= *missing) return "";  // resumed from our newest checkpoint
    return differs + ", before our newest checkpoint (step " + std::to_string(checkpoint) + ")";
}

}  // namespace qklab
