// run_export.cpp — see qklab/run_export.h.
#include "qklab/run_export.h"

#include <cmath>
#include <map>
#include <sstream>
#include <utility>

#include "qklab/error.h"
#include "qklab/record_columns.h"
#include "qklab/run_config.h"
#include "util/text_util.h"

namespace qklab {
namespace {

using nlohmann::json;

json number(double v) {
    return std::isfinite(v) ? json(v) : json(std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
}

json valueJson(ColumnType type, const ColumnValue& v) {
    if (const double* d = std::get_if<double>(&v)) return number(*d);
    if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
    if (const std::string* s = std::get_if<std::string>(&v)) return *s;
    return type == ColumnType::Text ? json("") : json(nullptr);
}

// One JSON object per row, a key per column of the record's table.
template <class Record>
json rowsJson(const RecordTable<Record>& table, const std::vector<Record>& rows) {
    json out = json::array();
    for (const Record& row : rows) {
        json j = json::object();
        for (const auto& c : table.columns) j[c.name] = valueJson(c.type, c.get(row));
        out.push_back(std::move(j));
    }
    return out;
}

}  // namespace

json logitAlarmsJson(RunStore& store, int64_t runId) {
    return rowsJson(logitAlarmTable(), store.logitAlarms(runId));
}

json qkClipsJson(RunStore& store, int64_t runId) {
    return rowsJson(qkClipTable(), store.qkClips(runId));
}

json runSummaryJson(RunStore& store, int64_t runId) {
    const RunInfo r = store.run(runId);
    json s = json::object();
    for (const RunColumn& c : runColumns())
        if (c.shown != RunColumn::Shown::InfoOnly) s[c.name] = valueJson(c.type, c.get(r));
    return s;
}

json runConfigJson(RunStore& store, int64_t runId) {
    const std::string text = store.run(runId).configJson;
    if (text.empty()) return nullptr;
    return parseStoredJson(text,
                           "run " + std::to_string(runId) + "'s config_json in " + store.path());
}

json parseUserConfig(const RunInfo& r) {
    if (r.userConfigJson.empty()) return nullptr;
    return parseStoredUserConfig(r.userConfigJson,
                                 "run " + std::to_string(r.id) + "'s user_config");
}

json userConfigJson(RunStore& store, int64_t runId) {
    return parseUserConfig(store.run(runId));
}

json runExportJson(RunStore& store, int64_t runId, bool allHeads) {
    json out;
    out["run"] = runSummaryJson(store, runId);
    out["config"] = runConfigJson(store, runId);
    out["user_config"] = userConfigJson(store, runId);
    out["steps"] = rowsJson(stepMetricTable(), store.stepMetrics(runId));
    json probes = json::array();
    const auto rows = allHeads ? store.probeStats(runId) : store.probeStats(runId, -1);
    for (const auto& p : rows) {
        json row = {{"step", p.step}, {"layer", p.layer}, {"head", p.head}};
        for (const auto& c : probeColumns()) row[c.name] = number(p.*c.field);
        probes.push_back(row);
    }
    out["probes"] = probes;
    out["spikes"] = rowsJson(spikeTable(), store.spikes(runId));
    out["alarms"] = logitAlarmsJson(store, runId);
    out["qk_clips"] = qkClipsJson(store, runId);
    out["custom_scalars"] = rowsJson(customScalarTable(), store.customScalars(runId));
    json events = json::array();
    for (const auto& e : store.events(runId))
        events.push_back(
            {{"step", e.step},
             {"kind", e.kind},
             {"params", e.paramsJson.empty()
                            ? json::object()
                            : parseStoredJson(e.paramsJson,
                                              "run " + std::to_string(runId) + "'s event at step " +
                                                  std::to_string(e.step) + ": params_json")},
             {"source", e.source}});
    out["events"] = events;
    return out;
}

std::string runCsv(const std::vector<StepMetrics>& steps, const std::vector<ProbeStats>& probes) {
    int32_t layers = 0;
    std::map<std::pair<int64_t, int32_t>, const ProbeStats*> byStepLayer;
    for (const auto& p : probes) {
        if (p.head != -1) continue;
        layers = std::max(layers, p.layer + 1);
        byStepLayer[{p.step, p.layer}] = &p;
    }
    const auto& columns = probeColumns();
    std::ostringstream os;
    std::string sep;
    const auto& stepColumns = stepMetricTable().columns;
    for (const auto& c : stepColumns) os << std::exchange(sep, ",") << c.name;
    for (int32_t l = 0; l < layers; ++l)
        for (const auto& c : columns) os << ",layer" << l << "_" << c.name;
    os << "\n";
    for (const auto& m : steps) {
        sep.clear();
        for (const auto& c : stepColumns) os << std::exchange(sep, ",") << csvText(c.get(m));
        for (int32_t l = 0; l < layers; ++l) {
            auto it = byStepLayer.find({m.step, l});
            for (const auto& c : columns)
                os << ","
                   << (it == byStepLayer.end() ? std::string() : csvText(it->second->*c.field));
        }
        os << "\n";
    }
    return os.str();
}

std::string runExportCsv(RunStore& store, int64_t runId) {
    return runCsv(store.stepMetrics(runId), store.probeStats(runId, -1));
}

}  // namespace qklab
