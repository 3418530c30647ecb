// run_config.cpp — RunConfig JSON in/out, `--set` overrides, validation and warnings.
//
// Type errors are raised while reading (by the field registry); value errors by validate(),
// which collects the same messages the GUI shows inline. Every message names the dotted key
// and the offending value, so a user never has to guess which line of a preset is wrong.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "qklab/error.h"
#include "qklab/run_config.h"

namespace qklab {
namespace {

using nlohmann::json;

std::string fmt(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

size_t editDistance(const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

[[noreturn]] void unknownKey(const std::string& key) {
    std::string best;
    size_t bestDistance = 4;  // suggest only near misses
    for (const auto& f : configFields()) {
        const size_t d = editDistance(key, f.key);
        if (d < bestDistance) bestDistance = d, best = f.key;
    }
    throw Error(ErrorCode::InvalidConfig,
                "unknown config key \"" + key + "\"" +
                    (best.empty() ? std::string() : " (did you mean \"" + best + "\"?)"));
}

bool isSection(const std::string& prefix) {
    for (const auto& f : configFields())
        if (f.key.compare(0, prefix.size() + 1, prefix + ".") == 0) return true;
    return false;
}

const std::set<std::string>& eventKinds() {
    static const std::set<std::string> kinds{"lr_multiplier", "context_length", "dirty_batch",
                                             "qk_norm",       "qk_anneal",      "softcap"};
    return kinds;
}

Event eventFromJson(const json& e, size_t index) {
    const std::string where = "events[" + std::to_string(index) + "]";
    if (!e.is_object()) throw Error(ErrorCode::InvalidConfig, where + ": expected an object");
    Event ev;
    if (!e.contains("step") || !e["step"].is_number_integer())
        throw Error(ErrorCode::InvalidConfig, where + ".step: expected an integer step");
    if (!e.contains("kind") || !e["kind"].is_string())
        throw Error(ErrorCode::InvalidConfig, where + ".kind: expected a string");
    ev.step = e["step"].get<int64_t>();
    ev.kind = e["kind"].get<std::string>();
    for (auto it = e.begin(); it != e.end(); ++it)
        if (it.key() != "step" && it.key() != "kind") ev.params[it.key()] = it.value();
    return ev;
}

void readObject(RunConfig& c, const json& j, const std::string& prefix) {
    if (!j.is_object())
        throw Error(ErrorCode::InvalidConfig,
                    (prefix.empty() ? std::string("config") : "config key \"" + prefix + "\"") +
                        ": expected a JSON object, got " + j.dump());
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
        if (key == "events") {
            if (!it.value().is_array())
                throw Error(ErrorCode::InvalidConfig, "config key \"events\": expected a list");
            c.events.clear();
            for (size_t i = 0; i < it.value().size(); ++i)
                c.events.push_back(eventFromJson(it.value()[i], i));
            continue;
        }
        if (const FieldInfo* f = findField(key)) {
            f->set(c, it.value());
        } else if (isSection(key)) {
            readObject(c, it.value(), key);
        } else {
            unknownKey(key);
        }
    }
}

// Value checks shared by validate() and validationProblems().
void collectProblems(const RunConfig& c, std::vector<std::string>& out) {
    auto need = [&out](bool ok, const std::string& key, const std::string& value,
                       const std::string& rule) {
        if (!ok) out.push_back(key + " = " + value + ": " + rule);
    };
    auto finite = [](double v) { return std::isfinite(v); };
    need(finite(c.optim.lr) && c.optim.lr > 0, "optim.lr", fmt(c.optim.lr), "must be > 0");
    need(c.optim.weightDecay >= 0, "optim.weight_decay", fmt(c.optim.weightDecay),
         "must be >= 0");
    need(c.optim.betas.size() == 2 && c.optim.betas[0] >= 0 && c.optim.betas[0] < 1 &&
             c.optim.betas[1] >= 0 && c.optim.betas[1] < 1,
         "optim.betas", json(c.optim.betas).dump(), "each beta must be in [0, 1)");
    need(c.optim.eps > 0, "optim.eps", fmt(c.optim.eps), "must be > 0");
    need(c.optim.gradClip >= 0, "optim.grad_clip", fmt(c.optim.gradClip), "must be >= 0 (0 = off)");
    need(c.optim.zLoss >= 0, "optim.z_loss", fmt(c.optim.zLoss), "must be >= 0");

    need(c.schedule.steps >= 1, "schedule.steps", fmt(c.schedule.steps), "must be >= 1");
    need(c.schedule.warmupSteps >= 0 && c.schedule.warmupSteps <= c.schedule.steps,
         "schedule.warmup_steps", fmt(c.schedule.warmupSteps),
         "must be in [0, schedule.steps = " + fmt(c.schedule.steps) + "]");
    need(c.schedule.minLrRatio >= 0 && c.schedule.minLrRatio <= 1, "schedule.min_lr_ratio",
         fmt(c.schedule.minLrRatio), "must be in [0, 1]");
    need(c.schedule.wsdDecayFraction > 0 && c.schedule.wsdDecayFraction <= 1,
         "schedule.wsd_decay_fraction", fmt(c.schedule.wsdDecayFraction), "must be in (0, 1]");

    need(c.model.dModel >= 2, "model.d_model", fmt(c.model.dModel), "must be >= 2");
    need(c.model.nLayers >= 1, "model.n_layers", fmt(c.model.nLayers), "must be >= 1");
    const bool headsOk = c.model.nHeads >= 1 && c.model.dModel % c.model.nHeads == 0;
    need(headsOk, "model.n_heads", fmt(c.model.nHeads),
         "must divide model.d_model = " + fmt(c.model.dModel));
    if (headsOk && c.model.rope)
        need(c.dHead() % 2 == 0, "model.n_heads", fmt(c.model.nHeads),
             "RoPE needs an even d_head, got d_head = " + fmt(c.dHead()));
    need(c.model.seqLen >= 2, "model.seq_len", fmt(c.model.seqLen), "must be >= 2");
    need(c.model.ropeBase > 1, "model.rope_base", fmt(c.model.ropeBase), "must be > 1");
    need(c.model.mlpRatio >= 1, "model.mlp_ratio", fmt(c.model.mlpRatio), "must be >= 1");
    need(c.model.outputSoftcap >= 0, "model.output_softcap", fmt(c.model.outputSoftcap),
         "must be >= 0 (0 = off)");
    need(c.model.initStd > 0, "model.init_std", fmt(c.model.initStd), "must be > 0");

    if (c.attention.scale)
        need(*c.attention.scale > 0 && finite(*c.attention.scale), "attention.scale",
             fmt(*c.attention.scale), "must be > 0 (or \"inv_sqrt_d\")");
    need(c.attention.softcap.c > 0 && finite(c.attention.softcap.c), "attention.softcap.c",
         fmt(c.attention.softcap.c), "must be > 0");

    auto window = [&](const std::string& key, double start, double end) {
        need(start >= 0 && start <= 1, key + ".start", fmt(start), "must be in [0, 1]");
        need(end >= 0 && end <= 1, key + ".end", fmt(end), "must be in [0, 1]");
        need(end >= start, key + ".end", fmt(end), "must be >= " + key + ".start = " + fmt(start));
    };
    window("anneal.qk_norm", c.anneal.qkNorm.start, c.anneal.qkNorm.end);
    window("anneal.softcap", c.anneal.softcap.start, c.anneal.softcap.end);
    need(c.anneal.softcap.cTo > 0, "anneal.softcap.c_to", fmt(c.anneal.softcap.cTo),
         "must be > 0");

    need(!c.data.source.empty(), "data.source", "\"\"", "must be \"builtin\" or a file path");
    need(c.data.batchSize >= 1, "data.batch_size", fmt(c.data.batchSize), "must be >= 1");
    need(c.data.valFraction > 0 && c.data.valFraction <= 0.5, "data.val_fraction",
         fmt(c.data.valFraction), "must be in (0, 0.5]");
    need(c.eval.every >= 0, "eval.every", fmt(c.eval.every), "must be >= 0");
    need(c.eval.batches >= 1, "eval.batches", fmt(c.eval.batches), "must be >= 1");

    need(c.run.seed >= 0, "run.seed", fmt(c.run.seed), "must be >= 0");
    need(c.run.threads >= 0, "run.threads", fmt(c.run.threads), "must be >= 0 (0 = all cores)");
    need(c.run.checkpointEvery >= 0, "run.checkpoint_every", fmt(c.run.checkpointEvery),
         "must be >= 0");

    need(c.probes.every >= 0, "probes.every", fmt(c.probes.every), "must be >= 0 (0 = off)");
    need(c.probes.histBins >= 1 && c.probes.histBins <= 4096, "probes.hist_bins",
         fmt(c.probes.histBins), "must be in [1, 4096]");
    need(c.probes.histMax > c.probes.histMin, "probes.hist_max", fmt(c.probes.histMax),
         "must be > probes.hist_min = " + fmt(c.probes.histMin));
    need(c.probes.attnMapEvery >= 0, "probes.attn_map_every", fmt(c.probes.attnMapEvery),
         "must be >= 0");
    need(c.spikes.window >= 2, "spikes.window", fmt(c.spikes.window), "must be >= 2");
    need(c.spikes.zThreshold > 0, "spikes.z_threshold", fmt(c.spikes.zThreshold), "must be > 0");
    need(c.spikes.minHistory >= 2 && c.spikes.minHistory <= c.spikes.window, "spikes.min_history",
         fmt(c.spikes.minHistory), "must be in [2, spikes.window = " + fmt(c.spikes.window) + "]");

    const FieldInfo* qk = findField("attention.qk_norm");
    const FieldInfo* shape = findField("anneal.qk_norm.shape");
    const FieldInfo* cap = findField("attention.softcap.kind");
    auto oneOf = [](const FieldInfo* f, const json& v) {
        return v.is_string() &&
               std::find(f->choices.begin(), f->choices.end(), v.get<std::string>()) !=
                   f->choices.end();
    };
    for (size_t i = 0; i < c.events.size(); ++i) {
        const Event& e = c.events[i];
        const std::string where = "events[" + std::to_string(i) + "]";
        const json& p = e.params;
        if (!eventKinds().count(e.kind)) {
            out.push_back(where + ".kind = \"" + e.kind +
                          "\": must be lr_multiplier, context_length, dirty_batch, qk_norm, "
                          "qk_anneal or softcap");
            continue;
        }
        need(e.step >= 0 && e.step < c.schedule.steps, where + ".step", fmt(e.step),
             "must be in [0, schedule.steps)");
        auto num = [&](const char* k) { return p.contains(k) && p[k].is_number(); };
        auto posNum = [&](const char* k) { return num(k) && p[k].get<double>() > 0; };
        if (e.kind == "lr_multiplier")
            need(posNum("factor"), where + ".factor", p.value("factor", json()).dump(),
                 "must be a number > 0");
        else if (e.kind == "context_length")
            need(p.contains("seq_len") && p["seq_len"].is_number_integer() &&
                     p["seq_len"].get<int64_t>() >= 2,
                 where + ".seq_len", p.value("seq_len", json()).dump(), "must be an integer >= 2");
        else if (e.kind == "dirty_batch")
            need(!p.contains("text") || (p["text"].is_string() && !p["text"].get<std::string>().empty()),
                 where + ".text", p.value("text", json()).dump(), "must be a non-empty string");
        else if (e.kind == "qk_norm")
            need(oneOf(qk, p.value("variant", json())), where + ".variant",
                 p.value("variant", json()).dump(), "must be a attention.qk_norm variant");
        else if (e.kind == "qk_anneal") {
            need(p.contains("steps") && p["steps"].is_number_integer() &&
                     p["steps"].get<int64_t>() >= 1,
                 where + ".steps", p.value("steps", json()).dump(), "must be an integer >= 1");
            need(!p.contains("shape") || oneOf(shape, p["shape"]), where + ".shape",
                 p.value("shape", json()).dump(), "must be linear, cosine or hard");
        } else if (e.kind == "softcap") {
            need(oneOf(cap, p.value("cap", json())), where + ".cap",
                 p.value("cap", json()).dump(), "must be none, tanh or clamp");
            need(p.value("cap", json()) == "none" || posNum("c"), where + ".c",
                 p.value("c", json()).dump(), "must be a number > 0");
        }
    }
}

}  // namespace

double RunConfig::logitScale() const {
    return attention.scale ? *attention.scale : 1.0 / std::sqrt(static_cast<double>(dHead()));
}

int64_t RunConfig::maxSeqLen() const {
    int64_t t = model.seqLen;
    for (const auto& e : events)
        if (e.kind == "context_length" && e.params.contains("seq_len") &&
            e.params["seq_len"].is_number_integer())
            t = std::max(t, e.params["seq_len"].get<int64_t>());
    return t;
}

RunConfig configFromJson(const json& j, bool checkValues) {
    RunConfig c;
    readObject(c, j, "");
    std::stable_sort(c.events.begin(), c.events.end(),
                     [](const Event& a, const Event& b) { return a.step < b.step; });
    if (checkValues) validate(c);
    return c;
}

RunConfig configFromJsonText(const std::string& text, const std::string& origin, bool checkValues) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error& e) {
        throw Error(ErrorCode::InvalidConfig, origin + " is not valid JSON: " + e.what());
    }
    try {
        return configFromJson(j, checkValues);
    } catch (const Error& e) {
        throw Error(e.code(), origin + ": " + e.what());
    }
}

RunConfig loadPreset(const std::string& path, bool checkValues) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorCode::MissingFile, "cannot read preset " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return configFromJsonText(ss.str(), path, checkValues);
}

json configToJson(const RunConfig& c) {
    json j = json::object();
    for (const auto& f : configFields()) {
        json* node = &j;
        std::string key = f.key;
        size_t dot;
        while ((dot = key.find('.')) != std::string::npos) {
            node = &(*node)[key.substr(0, dot)];
            key = key.substr(dot + 1);
        }
        (*node)[key] = f.get(c);
    }
    json events = json::array();
    for (const auto& e : c.events) {
        json ej = e.params;
        ej["step"] = e.step;
        ej["kind"] = e.kind;
        events.push_back(ej);
    }
    j["events"] = events;
    return j;
}

void applyOverride(RunConfig& c, const std::string& assignment) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw Error(ErrorCode::InvalidConfig,
                    "--set expects dotted.key=value, got \"" + assignment + "\"");
    const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
    json value;
    try {
        value = json::parse(text);
    } catch (const json::parse_error&) {
        value = text;  // a bare word such as rms or cosine
    }
    if (key == "events") {
        json wrapper{{"events", value}};
        RunConfig tmp;
        readObject(tmp, wrapper, "");
        c.events = tmp.events;
        std::stable_sort(c.events.begin(), c.events.end(),
                         [](const Event& a, const Event& b) { return a.step < b.step; });
        return;
    }
    const FieldInfo* f = findField(key);
    if (!f) unknownKey(key);
    // A path-like Text value must stay a string even if it would parse as a number.
    if (f->type == FieldType::Text && !value.is_string()) value = text;
    f->set(c, value);
}

void validate(const RunConfig& c) {
    std::vector<std::string> problems;
    collectProblems(c, problems);
    if (!problems.empty()) throw Error(ErrorCode::InvalidConfig, problems.front());
}

std::vector<std::string> validationProblems(const RunConfig& c) {
    std::vector<std::string> problems;
    collectProblems(c, problems);
    return problems;
}

std::vector<std::string> configWarnings(const RunConfig& c) {
    std::vector<std::string> w;
    const auto& qa = c.anneal.qkNorm;
    const auto& sa = c.anneal.softcap;
    const bool qkAnneal = qa.start < 1.0;
    const bool capAnneal = sa.start < 1.0 && c.attention.softcap.kind != "none";
    if (qkAnneal && capAnneal && qa.start < sa.end && sa.start < qa.end)
        w.push_back("the QK-norm and softcap anneal windows overlap: the guide advises against "
                    "annealing both fuses at once");
    if (qkAnneal && c.attention.qkNorm == "none")
        w.push_back("anneal.qk_norm is set but attention.qk_norm is none: nothing to anneal");
    if (qkAnneal && c.attention.qkNormOn == "k")
        w.push_back("K-only QK-norm is light protection and not meant for annealing");
    if (qkAnneal && qa.shape != "hard" && qa.end - qa.start < 0.03)
        w.push_back("a QK-norm anneal window under 3% of the steps gives a visible loss rebound "
                    "(5-10% is the guide's range)");
    if (c.attention.softcap.kind != "none" && c.attention.softcap.c < 20 &&
        c.attention.qkNorm != "none")
        w.push_back("softcap C < 20 with QK-norm on flattens attention (start at 50)");
    if (c.attention.scale && c.attention.qkNorm != "none" && c.attention.qkNorm != "l2_scale") {
        const double ref = 1.0 / std::sqrt(static_cast<double>(c.dHead()));
        if (*c.attention.scale > 1.5 * ref)
            w.push_back("attention.scale is above 1/sqrt(d_head) with QK-norm: attention too sharp");
        if (*c.attention.scale < ref / 1.5)
            w.push_back("attention.scale is below 1/sqrt(d_head) with QK-norm: attention nearly "
                        "uniform (scale applied twice?)");
    }
    if (c.run.dtype == "bf16" && c.run.device == "cpu")
        w.push_back("bf16 on the CPU is slow with Debian's LibTorch 1.13; fp32 is the CPU default");
    return w;
}

}  // namespace qklab
