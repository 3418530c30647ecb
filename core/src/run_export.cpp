// run_export.cpp — see qklab/run_export.h.
#include "qklab/run_export.h"

#include <cmath>
#include <map>
#include <sstream>

namespace qklab {
namespace {

using nlohmann::json;

json number(double v) {
    return std::isfinite(v) ? json(v) : json(std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
}

json optionalNumber(const std::optional<double>& v) { return v ? number(*v) : json(nullptr); }

std::string csvNumber(double v) {
    std::ostringstream os;
    os.precision(9);
    os << v;
    return os.str();
}

}  // namespace

json runSummaryJson(RunStore& store, int64_t runId) {
    const RunInfo r = store.run(runId);
    json s;
    s["id"] = r.id;
    s["name"] = r.name;
    s["status"] = toString(r.status);
    s["status_message"] = r.statusMessage;
    s["steps_done"] = r.stepsDone;
    s["final_loss"] = optionalNumber(r.finalLoss);
    std::optional<double> finalVal;
    for (const auto& m : store.stepMetrics(runId))
        if (m.valLoss) finalVal = m.valLoss;
    s["final_val_loss"] = optionalNumber(finalVal);
    s["max_attn_logit"] = optionalNumber(r.maxAttnLogitRaw);
    s["max_attn_logit_capped"] = optionalNumber(r.maxAttnLogitCapped);
    s["spikes"] = r.spikes;
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

json runExportJson(RunStore& store, int64_t runId, bool allHeads) {
    json out;
    out["run"] = runSummaryJson(store, runId);
    out["config"] = json::parse(store.run(runId).configJson);
    json steps = json::array();
    for (const auto& m : store.stepMetrics(runId))
        steps.push_back({{"step", m.step}, {"loss", number(m.loss)}, {"val_loss", optionalNumber(m.valLoss)},
                         {"grad_norm", number(m.gradNorm)}, {"lr", m.lr}, {"alpha", m.alpha},
                         {"softcap_c", m.softcapC}, {"seq_len", m.seqLen},
                         {"tokens_per_s", m.tokensPerSec}, {"attention_path", m.attentionPath}});
    out["steps"] = steps;
    json probes = json::array();
    const auto rows = allHeads ? store.probeStats(runId) : store.probeStats(runId, -1);
    for (const auto& p : rows)
        probes.push_back({{"step", p.step}, {"layer", p.layer}, {"head", p.head},
                          {"logit_max_raw", number(p.logitMaxRaw)}, {"logit_p99_raw", number(p.logitP99Raw)},
                          {"logit_mean_raw", number(p.logitMeanRaw)},
                          {"logit_max_capped", number(p.logitMaxCapped)},
                          {"logit_p99_capped", number(p.logitP99Capped)},
                          {"logit_mean_capped", number(p.logitMeanCapped)},
                          {"q_norm_p90", number(p.qNormP90)}, {"k_norm_p90", number(p.kNormP90)},
                          {"q_raw_norm_p90", number(p.qRawNormP90)}, {"k_raw_norm_p90", number(p.kRawNormP90)},
                          {"entropy", number(p.entropy)}, {"frac_at_cap", number(p.fracAtCap)}});
    out["probes"] = probes;
    json spikes = json::array();
    for (const auto& s : store.spikes(runId))
        spikes.push_back({{"step", s.step}, {"metric", s.metric}, {"value", number(s.value)},
                          {"z_score", number(s.zScore)}, {"kind", toString(s.kind)}, {"tier", s.tier},
                          {"probe_step", s.probeStep}, {"probe_max_logit", number(s.probeMaxLogit)},
                          {"baseline_max_logit", number(s.baselineMaxLogit)},
                          {"probe_qk_norm", number(s.probeQkNorm)},
                          {"baseline_qk_norm", number(s.baselineQkNorm)}, {"diagnosis", s.diagnosis}});
    out["spikes"] = spikes;
    json events = json::array();
    for (const auto& e : store.events(runId))
        events.push_back({{"step", e.step}, {"kind", e.kind}, {"params", json::parse(e.paramsJson)},
                          {"source", e.source}});
    out["events"] = events;
    return out;
}

std::string runExportCsv(RunStore& store, int64_t runId) {
    const auto steps = store.stepMetrics(runId);
    const auto probes = store.probeStats(runId, -1);
    int32_t layers = 0;
    std::map<std::pair<int64_t, int32_t>, const ProbeStats*> byStepLayer;
    for (const auto& p : probes) {
        layers = std::max(layers, p.layer + 1);
        byStepLayer[{p.step, p.layer}] = &p;
    }
    std::ostringstream os;
    os << "step,loss,val_loss,grad_norm,lr,alpha,softcap_c,seq_len,tokens_per_s,attention_path";
    static const char* cols[] = {"max_raw", "p99_raw", "mean_raw", "max_capped", "p99_capped",
                                 "q_norm_p90", "k_norm_p90", "entropy", "frac_at_cap"};
    for (int32_t l = 0; l < layers; ++l)
        for (const char* c : cols) os << ",layer" << l << "_" << c;
    os << "\n";
    for (const auto& m : steps) {
        os << m.step << "," << csvNumber(m.loss) << "," << (m.valLoss ? csvNumber(*m.valLoss) : "") << ","
           << csvNumber(m.gradNorm) << "," << csvNumber(m.lr) << "," << csvNumber(m.alpha) << ","
           << csvNumber(m.softcapC) << "," << m.seqLen << "," << csvNumber(m.tokensPerSec) << ","
           << m.attentionPath;
        for (int32_t l = 0; l < layers; ++l) {
            auto it = byStepLayer.find({m.step, l});
            if (it == byStepLayer.end()) {
                os << std::string(std::size(cols), ',');
                continue;
            }
            const ProbeStats& p = *it->second;
            for (double v : {p.logitMaxRaw, p.logitP99Raw, p.logitMeanRaw, p.logitMaxCapped,
                             p.logitP99Capped, p.qNormP90, p.kNormP90, p.entropy, p.fracAtCap})
                os << "," << csvNumber(v);
        }
        os << "\n";
    }
    return os.str();
}

}  // namespace qklab
