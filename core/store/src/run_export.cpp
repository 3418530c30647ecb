// run_export.cpp — see qklab/store/run_export.h.
#include "qklab/store/run_export.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string_view>
#include <utility>

#include "qklab/config/run_config.h"
#include "qklab/store/record_columns.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

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

// Removes the dotted `key` from `node`; true when `node` is an empty object afterwards, so
// that the object above drops it too.
bool eraseDotted(json& node, const std::string& key) {
    if (!node.is_object()) return false;
    const size_t dot = key.find('.');
    if (dot == std::string::npos) {
        node.erase(key);
        return node.empty();
    }
    const auto it = node.find(key.substr(0, dot));
    if (it == node.end()) return false;
    if (eraseDotted(*it, key.substr(dot + 1))) node.erase(it);
    return node.empty();
}

}  // namespace

json logitAlarmsJson(RunStore& store, int64_t runId) {
    return rowsJson(logitAlarmTable(), store.logitAlarms(runId));
}

json forecastsJson(RunStore& store, int64_t runId) {
    return rowsJson(forecastTable(), store.forecasts(runId));
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
    const RunInfo r = store.run(runId);
    if (r.configJson.empty()) return nullptr;
    json config = parseStoredJson(
        r.configJson, "run " + std::to_string(runId) + "'s config_json in " + store.path());
    if (!trainedOutsideQklab(r)) return config;
    return withoutKeys(std::move(config), unobservedConfigKeys(r));
}

bool observableOutsideQklab(const std::string& key) {
    static const std::set<std::string> keys = {"why",
                                               "model.n_layers",
                                               "model.n_heads",
                                               "model.d_model",
                                               "attention.kind",
                                               "attention.mla.d_c",
                                               "attention.mla.d_rope",
                                               "attention.mla.q_lora",
                                               "attention.qk_norm",
                                               "attention.softcap.kind",
                                               "attention.softcap.c",
                                               "schedule.steps",
                                               "run.seed"};
    return keys.count(key) || key.rfind("probes.", 0) == 0 || key.rfind("spikes.", 0) == 0;
}

std::set<std::string> unobservedConfigKeys(const RunInfo& r) {
    std::set<std::string> unknown;
    if (!trainedOutsideQklab(r)) return unknown;
    json stored = json::object();
    try {
        stored = parseStoredJson(r.configJson, "run " + std::to_string(r.id) + "'s config_json");
    } catch (const Error&) {  // an unreadable config records nothing
    }
    for (const FieldInfo& f : configFields()) {
        std::string pointer = "/" + f.key;
        std::replace(pointer.begin(), pointer.end(), '.', '/');
        const json::json_pointer at(pointer);
        if (!observableOutsideQklab(f.key) || !stored.is_object() || !stored.contains(at))
            unknown.insert(f.key);
    }
    return unknown;
}

json withoutKeys(json config, const std::set<std::string>& unknown) {
    for (const std::string& key : unknown) eraseDotted(config, key);
    return config;
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
    out["forecasts"] = forecastsJson(store, runId);
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

namespace {

// The custom scalars by name (sorted, as the store orders them), each by step.
using ScalarColumns = std::map<std::string, std::map<int64_t, double>>;

ScalarColumns scalarColumns(const std::vector<CustomScalar>& scalars) {
    ScalarColumns out;
    for (const CustomScalar& s : scalars) out[s.name][s.step] = s.value;
    return out;
}

// Every step of the table: the step rows', and a custom scalar's that has none (a run killed
// after log() and before its step row was written keeps its last values).
std::vector<int64_t> csvSteps(const std::vector<StepMetrics>& steps, const ScalarColumns& scalars) {
    std::vector<int64_t> out;
    for (const auto& m : steps) out.push_back(m.step);
    for (const auto& [name, values] : scalars)
        for (const auto& [step, value] : values) out.push_back(step);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace

std::string runCsv(const std::vector<StepMetrics>& steps, const std::vector<ProbeStats>& probes,
                   const std::vector<CustomScalar>& customScalars) {
    int32_t layers = 0;
    std::map<std::pair<int64_t, int32_t>, const ProbeStats*> byStepLayer;
    for (const auto& p : probes) {
        if (p.head != -1) continue;
        layers = std::max(layers, p.layer + 1);
        byStepLayer[{p.step, p.layer}] = &p;
    }
    std::map<int64_t, const StepMetrics*> rowOf;
    for (const auto& m : steps) rowOf[m.step] = &m;
    const ScalarColumns scalars = scalarColumns(customScalars);
    const auto& columns = probeColumns();
    std::ostringstream os;
    std::string sep;
    const auto& stepColumns = stepMetricTable().columns;
    for (const auto& c : stepColumns) os << std::exchange(sep, ",") << c.name;
    for (const auto& [name, values] : scalars) os << "," << csvField(name);
    for (int32_t l = 0; l < layers; ++l)
        for (const auto& c : columns) os << ",layer" << l << "_" << c.name;
    os << "\n";
    for (const int64_t step : csvSteps(steps, scalars)) {
        sep.clear();
        const auto row = rowOf.find(step);
        for (const auto& c : stepColumns)
            os << std::exchange(sep, ",")
               << (row != rowOf.end()                   ? csvText(c.get(*row->second))
                   : std::string_view(c.name) == "step" ? std::to_string(step)
                                                        : std::string());
        for (const auto& [name, values] : scalars) {
            const auto v = values.find(step);
            os << "," << (v == values.end() ? std::string() : csvText(v->second));
        }
        for (int32_t l = 0; l < layers; ++l) {
            auto it = byStepLayer.find({step, l});
            for (const auto& c : columns)
                os << ","
                   << (it == byStepLayer.end() ? std::string() : csvText(it->second->*c.field));
        }
        os << "\n";
    }
    return os.str();
}

std::string runExportCsv(RunStore& store, int64_t runId) {
    return runCsv(store.stepMetrics(runId), store.probeStats(runId, -1),
                  store.customScalars(runId));
}

}  // namespace qklab
