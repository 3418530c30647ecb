// run_export.cpp — see qklab/run_export.h.
#include "qklab/run_export.h"

#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <utility>

#include "qklab/error.h"
#include "qklab/run_config.h"
#include "util/text_util.h"

namespace qklab {
namespace {

using nlohmann::json;

json number(double v) {
    return std::isfinite(v) ? json(v) : json(std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
}

json optionalNumber(const std::optional<double>& v) {
    return v ? number(*v) : json(nullptr);
}

std::string csvNumber(double v) {
    std::ostringstream os;
    os.precision(9);
    os << v;
    return os.str();
}

// The step-metric columns of both exports, in order.
struct StepColumn {
    const char* name;
    std::function<json(const StepMetrics&)> toJson;
    std::function<std::string(const StepMetrics&)> toCsv;
};

const std::vector<StepColumn>& stepColumns() {
    auto real = [](double StepMetrics::*f) {
        return StepColumn{nullptr, [f](const StepMetrics& m) { return number(m.*f); },
                          [f](const StepMetrics& m) { return csvNumber(m.*f); }};
    };
    auto named = [](const char* name, StepColumn c) {
        c.name = name;
        return c;
    };
    static const std::vector<StepColumn> columns{
        {"step", [](const StepMetrics& m) { return json(m.step); },
         [](const StepMetrics& m) { return std::to_string(m.step); }},
        named("loss", real(&StepMetrics::loss)),
        {"val_loss", [](const StepMetrics& m) { return optionalNumber(m.valLoss); },
         [](const StepMetrics& m) { return m.valLoss ? csvNumber(*m.valLoss) : std::string(); }},
        named("grad_norm", real(&StepMetrics::gradNorm)),
        named("lr", real(&StepMetrics::lr)),
        named("alpha", real(&StepMetrics::alpha)),
        named("softcap_c", real(&StepMetrics::softcapC)),
        {"seq_len", [](const StepMetrics& m) { return json(m.seqLen); },
         [](const StepMetrics& m) { return std::to_string(m.seqLen); }},
        named("tokens_per_s", real(&StepMetrics::tokensPerSec)),
        {"attention_path", [](const StepMetrics& m) { return json(m.attentionPath); },
         [](const StepMetrics& m) { return m.attentionPath; }},
    };
    return columns;
}

// A stored run's config; an unreadable one counts as the defaults (percentiles sampled, as
// every run before probes.exact_percentiles).
RunConfig configOfStoredRun(const std::string& configJson) {
    try {
        return configFromJsonText(configJson, "run", false);
    } catch (const Error&) {
        return RunConfig{};
    }
}

}  // namespace

json logitAlarmsJson(RunStore& store, int64_t runId) {
    json alarms = json::array();
    for (const auto& a : store.logitAlarms(runId))
        alarms.push_back({{"step", a.step},
                          {"layer", a.layer},
                          {"metric", a.metric},
                          {"value", number(a.value)},
                          {"threshold", number(a.threshold)},
                          {"kind", toString(a.kind)},
                          {"tier", a.tier},
                          {"text", a.text}});
    return alarms;
}

json qkClipsJson(RunStore& store, int64_t runId) {
    json clips = json::array();
    for (const auto& c : store.qkClips(runId))
        clips.push_back({{"step", c.step},
                         {"layer", c.layer},
                         {"head", c.head},
                         {"s_max", number(c.sMax)},
                         {"factor", number(c.factor)}});
    return clips;
}

json runSummaryJson(RunStore& store, int64_t runId) {
    const RunInfo r = store.run(runId);
    json s;
    s["id"] = r.id;
    s["name"] = r.name;
    s["status"] = toString(r.status);
    s["status_message"] = r.statusMessage;
    s["steps_done"] = r.stepsDone;
    s["final_loss"] = optionalNumber(r.finalLoss);
    s["final_val_loss"] = optionalNumber(r.finalValLoss);
    s["max_logit_raw"] = optionalNumber(r.maxLogitRaw);
    s["max_logit_capped"] = optionalNumber(r.maxLogitCapped);
    s["spikes"] = r.spikes;
    s["logit_alarms"] = r.logitAlarms;
    s["qk_clips"] = r.qkClips;
    s["seed"] = r.seed;
    s["device"] = r.device;
    s["torch_version"] = r.torchVersion;
    s["app_version"] = r.appVersion;
    s["created_at"] = r.createdAt;
    s["finished_at"] = r.finishedAt;
    s["notes"] = r.notes;
    s["tags"] = r.tags;
    return s;
}

json runConfigJson(RunStore& store, int64_t runId) {
    const std::string text = store.run(runId).configJson;
    if (text.empty()) return nullptr;
    return parseStoredJson(text,
                           "run " + std::to_string(runId) + "'s config_json in " + store.path());
}

json runExportJson(RunStore& store, int64_t runId, bool allHeads) {
    json out;
    out["run"] = runSummaryJson(store, runId);
    out["config"] = runConfigJson(store, runId);
    json steps = json::array();
    for (const auto& m : store.stepMetrics(runId)) {
        json row = json::object();
        for (const auto& c : stepColumns()) row[c.name] = c.toJson(m);
        steps.push_back(row);
    }
    out["steps"] = steps;
    json probes = json::array();
    const auto rows = allHeads ? store.probeStats(runId) : store.probeStats(runId, -1);
    for (const auto& p : rows) {
        json row = {{"step", p.step}, {"layer", p.layer}, {"head", p.head}};
        for (const auto& c : probeColumns()) row[c.name] = number(p.*c.field);
        probes.push_back(row);
    }
    out["probes"] = probes;
    // Which columns are estimates, so that a reader never mistakes a sampled p99 for exact.
    const RunConfig config = configOfStoredRun(store.run(runId).configJson);
    json sampled = json::array(), exact = json::array();
    for (const auto& c : probeColumns())
        if (c.percentile != ProbeColumn::Percentile::None)
            (layerPercentileSampled(config, c) ? sampled : exact).push_back(c.name);
    out["percentiles"] = {{"sampled_columns", sampled},
                          {"exact_columns", exact},
                          {"max_values_per_row", kMaxQuantileSamples}};
    json spikes = json::array();
    for (const auto& s : store.spikes(runId))
        spikes.push_back({{"step", s.step},
                          {"metric", s.metric},
                          {"value", number(s.value)},
                          {"z_score", number(s.zScore)},
                          {"kind", toString(s.kind)},
                          {"tier", s.tier},
                          {"probe_step", s.probeStep},
                          {"probe_max_logit", number(s.probeMaxLogit)},
                          {"baseline_max_logit", number(s.baselineMaxLogit)},
                          {"probe_qk_norm", number(s.probeQkNorm)},
                          {"baseline_qk_norm", number(s.baselineQkNorm)},
                          {"diagnosis", s.diagnosis}});
    out["spikes"] = spikes;
    out["alarms"] = logitAlarmsJson(store, runId);
    out["qk_clips"] = qkClipsJson(store, runId);
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

bool layerPercentileSampled(const RunConfig& c, const ProbeColumn& column) {
    if (column.percentile == ProbeColumn::Percentile::None || c.probes.exactPercentiles)
        return false;
    const int64_t T = c.maxSeqLen();
    const int64_t perSequence =
        column.percentile == ProbeColumn::Percentile::OverLogits ? T * (T + 1) / 2 : T;
    return c.data.batchSize * c.model.nHeads * perSequence > kMaxQuantileSamples;
}

std::string runCsv(const std::vector<StepMetrics>& steps, const std::vector<ProbeStats>& probes,
                   const RunConfig& config) {
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
    for (const auto& c : stepColumns()) os << std::exchange(sep, ",") << c.name;
    for (int32_t l = 0; l < layers; ++l)
        for (const auto& c : columns)
            os << ",layer" << l << "_" << c.name
               << (layerPercentileSampled(config, c) ? "_sampled" : "");
    os << "\n";
    for (const auto& m : steps) {
        sep.clear();
        for (const auto& c : stepColumns()) os << std::exchange(sep, ",") << c.toCsv(m);
        for (int32_t l = 0; l < layers; ++l) {
            auto it = byStepLayer.find({m.step, l});
            for (const auto& c : columns)
                os << ","
                   << (it == byStepLayer.end() ? std::string() : csvNumber(it->second->*c.field));
        }
        os << "\n";
    }
    return os.str();
}

std::string runExportCsv(RunStore& store, int64_t runId) {
    return runCsv(store.stepMetrics(runId), store.probeStats(runId, -1),
                  configOfStoredRun(store.run(runId).configJson));
}

}  // namespace qklab
