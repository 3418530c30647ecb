// compare.cpp — see qklab/analysis/compare.h.
#include "qklab/analysis/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "qklab/analysis/spikes.h"
#include "qklab/config/events.h"
#include "qklab/store/run_export.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

namespace qklab {
namespace {

using nlohmann::json;

// The domain brief's intervention line is kInterveneMaxLogit (30); past 100 a run has clearly
// blown up (the blow-up preset's raw max passes it within ~10 steps, then heads for 1000+).
constexpr double kBlownUpMaxLogit = 100.0;

// A group label's value is cut here: an events list or a preset's `why` is a paragraph.
constexpr size_t kGroupValueChars = 40;

// ---- config diff ----------------------------------------------------------------------------

using FlatConfig = std::vector<std::pair<std::string, json>>;

void flattenInto(const json& node, const std::string& prefix, FlatConfig& out) {
    if (!node.is_object()) {
        out.emplace_back(prefix, node);
        return;
    }
    for (auto it = node.begin(); it != node.end(); ++it)
        flattenInto(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
}

// configToJson's leaves as dotted keys in registry order (the JSON object itself sorts its
// keys), then the user config's leaves (user.*), then "events" as one value: the order
// `qklab-cli keys` and the form use. A user value that is an array is one leaf, as qklab's.
FlatConfig flatConfig(const ComparedConfig& compared) {
    json j = configToJson(compared.qklab);
    const json events = j.contains("events") ? j["events"] : json::array();
    j.erase("events");
    FlatConfig flat;
    flattenInto(j, "", flat);
    flat.erase(std::remove_if(flat.begin(), flat.end(),
                              [&](const auto& e) { return compared.unknown.count(e.first) > 0; }),
               flat.end());
    std::map<std::string, size_t> rank;
    const auto& fields = configFields();
    for (size_t i = 0; i < fields.size(); ++i) rank[fields[i].key] = i;
    auto rankOf = [&](const std::string& key) {
        const auto it = rank.find(key);
        return it == rank.end() ? fields.size() : it->second;  // unknown keys go last
    };
    std::stable_sort(flat.begin(), flat.end(), [&](const auto& a, const auto& b) {
        return rankOf(a.first) < rankOf(b.first);
    });
    if (compared.user.is_object()) {
        const std::string prefix = kUserConfigPrefix;
        for (auto it = compared.user.begin(); it != compared.user.end(); ++it)
            flattenInto(it.value(), prefix + it.key(), flat);
    }
    flat.emplace_back("events", events);
    return flat;
}

// A cell of the diff: strings bare (rms, cosine, a data path), everything else compact JSON.
std::string diffText(const json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
}

// Why `key` cannot group: a user config key given without its prefix ("lr") is named whole.
std::string notAKey(const std::vector<ComparedConfig>& configs, const std::string& key) {
    const std::string user = kUserConfigPrefix + key;
    for (const auto& c : configs)
        for (const auto& entry : flatConfig(c))
            if (entry.first == user)
                return "not a config key; the user config's '" + key + "' is '" + user + "'";
    if (findField(key))
        return "none of these runs recorded it (a run trained outside qklab records only what "
               "qklab observed; its own settings are user.KEY)";
    return "not a config key (see qklab-cli keys; the user config's keys are user.KEY)";
}

// ---- summary --------------------------------------------------------------------------------

void summarizeSteps(RunSummary& s, const std::vector<StepMetrics>& steps, int64_t batchSize) {
    s.steps = static_cast<int64_t>(steps.size());
    std::vector<double> rates;
    double seconds = 0;
    for (const auto& m : steps) {
        if (std::isfinite(m.loss)) {
            s.finalTrainLoss = m.loss;
            s.bestTrainLoss = s.bestTrainLoss ? std::min(*s.bestTrainLoss, m.loss) : m.loss;
        }
        if (m.valLoss && std::isfinite(*m.valLoss)) {
            s.finalValLoss = *m.valLoss;
            s.bestValLoss = s.bestValLoss ? std::min(*s.bestValLoss, *m.valLoss) : *m.valLoss;
        }
        if (std::isfinite(m.tokensPerSec) && m.tokensPerSec > 0) {
            rates.push_back(m.tokensPerSec);
            seconds += static_cast<double>(batchSize * m.seqLen) / m.tokensPerSec;
        }
    }
    if (rates.empty()) return;
    s.trainSeconds = seconds;
    std::sort(rates.begin(), rates.end());
    const size_t n = rates.size();
    s.tokensPerSec = n % 2 ? rates[n / 2] : (rates[n / 2 - 1] + rates[n / 2]) / 2;
}

void keepMax(std::optional<double>& peak, double v) {
    if (std::isnan(v)) return;  // a diverged probe says nothing about the peak
    peak = peak ? std::max(*peak, v) : v;
}

// Layer-level probe rows (head -1), in step order as the store returns them.
void summarizeProbes(RunSummary& s, const std::vector<ProbeStats>& rows) {
    std::set<int32_t> layers;
    for (const auto& p : rows) {
        layers.insert(p.layer);
        if (p.logitMaxRaw > kInterveneMaxLogit && !s.firstStepPast30) s.firstStepPast30 = p.step;
        if (p.logitMaxRaw > kBlownUpMaxLogit && !s.firstStepPast100) s.firstStepPast100 = p.step;
        keepMax(s.peakRawMax, p.logitMaxRaw);
        keepMax(s.peakCappedMax, p.logitMaxCapped);
    }
    if (!layers.empty()) s.layers = static_cast<int>(layers.size());
    if (rows.empty()) return;
    const int64_t last = rows.back().step;
    double sum = 0;
    int n = 0;
    for (const auto& p : rows)
        if (p.step == last && std::isfinite(p.entropy)) {
            sum += p.entropy;
            ++n;
        }
    if (n > 0) s.finalEntropy = sum / n;
}

// ---- summary columns --------------------------------------------------------------------------

// 4 significant digits; a large value is written whole rather than as 1.235e+04.
std::string sig4(double v) {
    char b[64];
    if (std::isfinite(v) && std::fabs(v) >= 1e4 && std::fabs(v) < 1e12)
        std::snprintf(b, sizeof b, "%.0f", v);
    else
        std::snprintf(b, sizeof b, "%.4g", v);
    return b;
}

std::string intText(double v) {
    return std::to_string(static_cast<long long>(v));
}

using Getter = std::function<std::optional<double>(const RunSummary&)>;

SummaryColumn column(const char* key, const char* title, int better, Getter number,
                     std::string (*format)(double), const char* missing = "-") {
    auto text = [number, format, missing](const RunSummary& s) {
        const auto v = number(s);
        return v ? format(*v) : std::string(missing);
    };
    return SummaryColumn{key, title, better, number, text};
}

Getter real(std::optional<double> RunSummary::*field) {
    return [field](const RunSummary& s) { return s.*field; };
}

Getter count(int64_t RunSummary::*field) {
    return [field](const RunSummary& s) { return std::optional<double>(double(s.*field)); };
}

// "never" only for a run that was probed: without probes nobody knows. Never passing is the
// best outcome, so its number is +infinity: it sorts after every step and wins "best" (JSON
// writes null, CSV the text).
SummaryColumn firstPast(const char* key, const char* title,
                        std::optional<int64_t> RunSummary::*field) {
    Getter number = [field](const RunSummary& s) -> std::optional<double> {
        if (!(s.*field)) {
            if (!s.peakRawMax) return std::nullopt;
            return std::numeric_limits<double>::infinity();
        }
        return double(*(s.*field));
    };
    auto text = [field](const RunSummary& s) {
        if (s.*field) return std::to_string(*(s.*field));
        return std::string(s.peakRawMax ? "never" : "-");
    };
    return SummaryColumn{key, title, +1, number, text};
}

std::vector<SummaryColumn> makeColumns() {
    std::vector<SummaryColumn> c;
    c.push_back({"status", "status", 0,
                 [](const RunSummary&) { return std::optional<double>(); },  // text only
                 [](const RunSummary& s) { return std::string(toString(s.status)); }});
    c.push_back(column("steps", "steps", 0, count(&RunSummary::steps), intText));
    c.push_back(column("final_train_loss", "final train loss", -1,
                       real(&RunSummary::finalTrainLoss), sig4));
    c.push_back(
        column("best_train_loss", "best train loss", -1, real(&RunSummary::bestTrainLoss), sig4));
    c.push_back(
        column("final_val_loss", "final val loss", -1, real(&RunSummary::finalValLoss), sig4));
    c.push_back(column("best_val_loss", "best val loss", -1, real(&RunSummary::bestValLoss), sig4));
    c.push_back(column("spikes", "spikes", -1, count(&RunSummary::spikes), intText));
    c.push_back(column(
        "worst_tier", "worst tier", -1,
        [](const RunSummary& s) { return std::optional<double>(s.worstTier); }, intText));
    // How many head clips QK-Clip needed: no "best" (a run without QK-Clip has none either).
    c.push_back(column("qk_clips", "QK clips", 0, count(&RunSummary::qkClips), intText));
    // Later is better; a run that never passed has no number (it is "never" as text).
    c.push_back(firstPast("first_step_past_30", "first step > 30", &RunSummary::firstStepPast30));
    c.push_back(
        firstPast("first_step_past_100", "first step > 100", &RunSummary::firstStepPast100));
    c.push_back(column("peak_raw_max", "peak raw max", -1, real(&RunSummary::peakRawMax), sig4));
    c.push_back(
        column("peak_capped_max", "peak capped max", -1, real(&RunSummary::peakCappedMax), sig4));
    c.push_back(
        column("final_entropy", "final entropy", +1, real(&RunSummary::finalEntropy), sig4));
    c.push_back(column("tokens_per_s", "tokens/s", +1, real(&RunSummary::tokensPerSec), sig4));
    c.push_back(
        // The x-axis's "training time (s)": seconds in training steps, not wall-clock time.
        column("train_seconds", "training time (s)", -1, real(&RunSummary::trainSeconds), sig4));
    return c;
}

// A CSV cell for a number: integers plain, others as JSON writes them (shortest exact form).
std::string csvNumber(double v) {
    if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
    if (v == std::floor(v) && std::fabs(v) < 1e15) return intText(v);
    return json(v).dump();
}

}  // namespace

RunConfig configAsTrained(const RunInfo& info, bool strict) {
    const std::string where = "run " + std::to_string(info.id);
    RunConfig config;
    // Values are not re-validated: a run stored by an older build trained with what it has.
    try {
        config = configFromJsonText(info.configJson, where + " config", false);
    } catch (const Error&) {
        if (strict) throw;
        config = RunConfig{};
    }
    for (const auto& r : info.interventions) {
        try {
            Event e = eventFromRecord(r.step, r.kind, r.paramsJson, r.source);
            e.source = EventSource::Config;  // replayed, an intervention is a config event
            config.events.push_back(e);
        } catch (const Error& e) {
            if (strict)
                throw Error(e.code(), where + " intervention at step " + std::to_string(r.step) +
                                          ": " + e.what());
        }
    }
    std::stable_sort(config.events.begin(), config.events.end(),
                     [](const Event& a, const Event& b) { return a.step < b.step; });
    return config;
}

ComparedConfig comparedConfig(const RunInfo& info, bool strict) {
    return ComparedConfig(configAsTrained(info, strict), comparedUserConfig(info, strict),
                          unobservedConfigKeys(info));
}

json comparedUserConfig(const RunInfo& info, bool strict) {
    try {
        const json user = parseUserConfig(info);
        // Stored only as an object (RunWriter); anything else in a hostile file is unreadable.
        if (user.is_object() || user.is_null()) return user;
        throw Error(ErrorCode::NotQklabDatabase,
                    "run " + std::to_string(info.id) + "'s user_config is not a JSON object");
    } catch (const Error&) {
        if (strict) throw;
        return nullptr;
    }
}

std::vector<ConfigDiffRow> configDiff(const std::vector<ComparedConfig>& configs) {
    std::vector<std::map<std::string, json>> values;
    std::vector<std::string> keys;  // union, in the first config's order, extras after
    std::set<std::string> seen;
    for (const auto& c : configs) {
        values.emplace_back();
        for (auto& [key, value] : flatConfig(c)) {
            if (seen.insert(key).second) keys.push_back(key);
            values.back()[key] = std::move(value);
        }
    }
    // "events" last, also when a later config brought keys the first did not have.
    std::stable_partition(keys.begin(), keys.end(), [](const auto& k) { return k != "events"; });
    std::vector<ConfigDiffRow> rows;
    for (const auto& key : keys) {
        ConfigDiffRow row{key, {}, false};
        const json* first = nullptr;
        for (size_t i = 0; i < values.size(); ++i) {
            const auto it = values[i].find(key);
            const json* v = it == values[i].end() ? nullptr : &it->second;
            row.values.push_back(v ? diffText(*v) : std::string());
            row.jsonValues.push_back(v ? *v : json(nullptr));
            if (i == 0)
                first = v;
            else if (!v != !first || (v && *v != *first))
                row.differs = true;  // compared as JSON: 1 and "1" differ, as do "" and missing
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

std::vector<std::vector<size_t>> seedGroups(const std::vector<ComparedConfig>& configs) {
    std::vector<json> keys;
    for (const auto& c : configs) {
        json j = withoutKeys(configToJson(c.qklab), c.unknown);  // unknown is not a default
        if (j.contains("run") && j["run"].is_object()) j["run"].erase("seed");
        // The whole user config, as JSON: a user key that only differs in how it is nested
        // or spelled ("a.b" against {"a": {"b"}}) still differs. Its top-level "seed" is the
        // seed too: a script that keeps its seed in config={"seed": ...} (as wandb users do)
        // runs replicates with init(seed=) left at 0.
        json user = c.user;
        if (user.is_object()) user.erase("seed");
        keys.push_back(json::array({std::move(j), std::move(user)}));
    }
    std::vector<std::vector<size_t>> groups;
    std::vector<bool> placed(configs.size(), false);
    for (size_t i = 0; i < configs.size(); ++i) {
        if (placed[i]) continue;
        groups.push_back({i});
        for (size_t k = i + 1; k < configs.size(); ++k)
            if (!placed[k] && keys[k] == keys[i]) {
                placed[k] = true;
                groups.back().push_back(k);
            }
    }
    return groups;
}

std::vector<RunGroup> groupByKey(const std::vector<ComparedConfig>& configs,
                                 const std::string& key) {
    std::vector<std::optional<json>> values;
    for (const auto& c : configs) {
        values.emplace_back();
        for (auto& [k, v] : flatConfig(c))
            if (k == key) values.back() = std::move(v);
    }
    if (!configs.empty() &&
        std::none_of(values.begin(), values.end(), [](const auto& v) { return v.has_value(); }))
        throw Error(ErrorCode::InvalidConfig, "group by '" + key + "': " + notAKey(configs, key));
    std::vector<RunGroup> groups;
    std::vector<bool> placed(configs.size(), false);
    for (size_t i = 0; i < configs.size(); ++i) {
        if (placed[i]) continue;
        RunGroup g{{i}, values[i] ? diffText(*values[i]) : std::string(), {}};
        for (size_t k = i + 1; k < configs.size(); ++k)
            if (!placed[k] && values[k] == values[i]) {
                placed[k] = true;
                g.members.push_back(k);
            }
        std::string shown = values[i] ? g.value : std::string("(missing)");
        if (shown.size() > kGroupValueChars) {
            size_t cut = kGroupValueChars - 3;
            while (cut > 0 && (shown[cut] & 0xC0) == 0x80) --cut;  // not inside a UTF-8 char
            shown = shown.substr(0, cut) + "...";
        }
        const size_t n = g.members.size();
        g.label = key + "=" + shown + " (" + std::to_string(n) + (n == 1 ? " run)" : " runs)");
        groups.push_back(std::move(g));
    }
    return groups;
}

RunSummary summarizeRun(RunStore& store, int64_t runId) {
    const RunInfo info = store.run(runId);
    return summarizeRun(info, configAsTrained(info), store.stepMetrics(runId),
                        store.probeStats(runId, -1), store.spikes(runId));
}

RunSummary summarizeRun(const RunInfo& info, const RunConfig& config,
                        const std::vector<StepMetrics>& steps,
                        const std::vector<ProbeStats>& layerProbes,
                        const std::vector<Spike>& spikes) {
    RunSummary s;
    s.runId = info.id;
    s.name = info.name;
    s.status = info.status;
    s.qkClips = info.qkClips;
    s.layers = static_cast<int>(config.model.nLayers);
    s.heads = static_cast<int>(config.model.nHeads);
    summarizeSteps(s, steps, config.data.batchSize);
    summarizeProbes(s, layerProbes);
    for (const auto& sp : spikes) {
        ++s.spikes;
        s.worstTier = std::max(s.worstTier, sp.tier);
    }
    return s;
}

const std::vector<SummaryColumn>& summaryColumns() {
    static const std::vector<SummaryColumn> columns = makeColumns();
    return columns;
}

json summaryToJson(const RunSummary& s) {
    json j;
    j["run_id"] = s.runId;
    j["name"] = s.name;
    j["status"] = toString(s.status);
    for (const auto& c : summaryColumns()) {
        if (std::string(c.key) == "status") continue;  // the one text column, set above
        const auto v = c.number(s);
        // JSON has no inf or NaN: a non-finite number is as good as missing here.
        if (!v || !std::isfinite(*v))
            j[c.key] = nullptr;
        else if (*v == std::floor(*v) && std::fabs(*v) < 1e15)
            j[c.key] = static_cast<int64_t>(*v);  // steps, counts, tiers: 12, not 12.0
        else
            j[c.key] = *v;
    }
    return j;
}

std::string summaryCsv(const std::vector<RunSummary>& summaries) {
    std::string out = "run_id,name";
    for (const auto& c : summaryColumns()) out += std::string(",") + c.key;
    out += "\n";
    for (const auto& s : summaries) {
        out += std::to_string(s.runId) + "," + csvField(s.name);
        for (const auto& c : summaryColumns()) {
            out += ",";
            if (std::string(c.key) == "status") {
                out += c.text(s);
            } else if (const auto v = c.number(s)) {
                out += std::isfinite(*v) ? csvNumber(*v) : c.text(s);  // "never"
            }
        }
        out += "\n";
    }
    return out;
}

}  // namespace qklab
