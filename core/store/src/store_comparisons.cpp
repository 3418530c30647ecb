// store_comparisons.cpp — the store's saved comparisons (schema 7): the app's Compare tab
// saved under a name.
#include <nlohmann/json.hpp>

#include "qklab/config/names.h"
#include "qklab/store/run_store.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"
#include "schema.h"
#include "sqlite_db.h"

namespace qklab {

namespace {

// A comparisons row (name, run_ids, settings_json, created_at, updated_at). Ids that are not
// integers (a hand-edited file) are skipped: the comparison still opens.
SavedComparison readComparison(const Statement& st) {
    SavedComparison c;
    c.name = st.columnText("name");
    nlohmann::json ids;
    try {
        ids = parseStoredJson(st.columnText("run_ids"), "run_ids");
    } catch (const Error&) {
    }
    if (ids.is_array())
        for (const auto& id : ids)
            if (id.is_number_integer()) c.runIds.push_back(id.get<int64_t>());
    c.settingsJson = st.columnText("settings_json");
    c.createdAt = st.columnText("created_at");
    c.updatedAt = st.columnText("updated_at");
    return c;
}

}  // namespace

void RunStore::saveComparison(const SavedComparison& c) {
    checkName(c.name, "a comparison name");
    const std::string quoted = "comparison '" + clipped(c.name, 60) + "'";
    if (c.runIds.size() < SavedComparison::kMinRuns || c.runIds.size() > SavedComparison::kMaxRuns)
        throw Error(ErrorCode::InvalidRequest,
                    quoted + " has " + std::to_string(c.runIds.size()) + " run id" +
                        (c.runIds.size() == 1 ? "" : "s") + "; a comparison holds " +
                        std::to_string(SavedComparison::kMinRuns) + " to " +
                        std::to_string(SavedComparison::kMaxRuns) + " runs");
    nlohmann::json settings;
    try {
        settings = parseJsonText(c.settingsJson);
    } catch (const Error& e) {
        throw Error(ErrorCode::InvalidRequest,
                    "the settings of " + quoted + " are not valid JSON (" + e.what() + "): " +
                        (c.settingsJson.empty() ? std::string("the text is empty")
                                                : clipped(c.settingsJson, 60)));
    }
    if (!settings.is_object())
        throw Error(
            ErrorCode::InvalidRequest,
            "the settings of " + quoted + " must be a JSON object, not " + shortJson(settings));
    const std::string now = utcNowIso8601();
    // On a read-only store this throws like every other write (SQLite refuses it).
    Statement st(*m_db,
                 "INSERT INTO comparisons(name, run_ids, settings_json, created_at, updated_at) "
                 "VALUES(?1, ?2, ?3, ?4, ?4) ON CONFLICT(name) DO UPDATE SET "
                 "run_ids = excluded.run_ids, settings_json = excluded.settings_json, "
                 "updated_at = excluded.updated_at");
    st.bindAll(c.name, nlohmann::json(c.runIds).dump(), c.settingsJson, now).exec();
}

std::vector<SavedComparison> RunStore::comparisons() {
    std::vector<SavedComparison> out;
    if (!hasFeature(m_version, SchemaFeature::Comparisons))
        return out;  // an older file read as it is: none
    Statement st(*m_db,
                 "SELECT name, run_ids, settings_json, created_at, updated_at FROM comparisons "
                 "ORDER BY name");
    while (st.step()) out.push_back(readComparison(st));
    return out;
}

SavedComparison RunStore::comparison(const std::string& name) {
    if (hasFeature(m_version, SchemaFeature::Comparisons)) {
        Statement st(*m_db,
                     "SELECT name, run_ids, settings_json, created_at, updated_at FROM "
                     "comparisons WHERE name = ?");
        st.bindAll(name);
        if (st.step()) return readComparison(st);
    }
    throw Error(ErrorCode::NotFound,
                "no comparison named '" + clipped(name, 80) + "' in " + path());
}

void RunStore::deleteComparison(const std::string& name) {
    if (!hasFeature(m_version,
                    SchemaFeature::Comparisons))  // only a reader of an older file gets here
        throw Error(ErrorCode::NotFound,
                    "no comparison named '" + clipped(name, 80) + "' in " + path());
    Statement st(*m_db, "DELETE FROM comparisons WHERE name = ?");
    st.bindAll(name).exec();
    if (m_db->changes() == 0)
        throw Error(ErrorCode::NotFound,
                    "no comparison named '" + clipped(name, 80) + "' in " + path());
}

}  // namespace qklab
