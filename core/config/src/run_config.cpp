// run_config.cpp — RunConfig JSON in/out, `--set` overrides, validation and warnings.
//
// Type errors are raised while reading (by the field registry); value errors by validate(),
// which collects the same messages the GUI shows inline. Every message names the dotted key
// and the offending value, so a user never has to guess which line of a preset is wrong.
#include "qklab/config/run_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "qklab/util/error.h"
#include "qklab/util/input_file.h"
#include "qklab/util/text_util.h"

namespace qklab {
namespace {

using nlohmann::json;

std::string fmt(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

// "\"optim.lrr\" (did you mean \"optim.lr\"?)"
std::string unknownKeyText(const std::string& key) {
    std::vector<std::string> keys;
    for (const auto& f : configFields()) keys.push_back(f.key);
    keys.push_back("events");
    const std::string best = closestMatch(key, keys);
    return "\"" + clipped(key) + "\"" +
           (best.empty() ? std::string() : " (did you mean \"" + best + "\"?)");
}

[[noreturn]] void unknownKey(const std::string& key) {
    throw Error(ErrorCode::InvalidConfig, "unknown config key " + unknownKeyText(key));
}

// Keys that earlier versions wrote into presets and stored runs' configs, and why they went.
// Reading a JSON config skips them, so that old runs and presets still open; --set on one is
// an error that says why.
struct RetiredKey {
    const char* key;
    const char* why;
};

const RetiredKey* findRetiredKey(const std::string& key) {
    static const RetiredKey kRetired[] = {
        {"probes.exact_percentiles",
         "probe percentiles are always exact now (an older qklab estimated them from a "
         "sample of 32768 values per row unless this key was true; the runs it recorded keep "
         "those values)"}};
    for (const RetiredKey& r : kRetired)
        if (key == r.key) return &r;
    return nullptr;
}

// Every unknown key of a preset in one message, so that fixing one typo does not reveal the
// next. A file with very many lists the first few and counts the rest.
void refuseUnknownKeys(const std::vector<std::string>& unknown) {
    if (unknown.empty()) return;
    if (unknown.size() == 1) unknownKey(unknown.front());
    constexpr size_t kListed = 8;
    std::string list;
    for (size_t i = 0; i < std::min(unknown.size(), kListed); ++i)
        list += (i ? ", " : "") + unknownKeyText(unknown[i]);
    if (unknown.size() > kListed)
        list += " and " + std::to_string(unknown.size() - kListed) + " more";
    throw Error(ErrorCode::InvalidConfig,
                std::to_string(unknown.size()) + " unknown config keys: " + list);
}

bool isSection(const std::string& prefix) {
    for (const auto& f : configFields())
        if (f.key.size() > prefix.size() && f.key[prefix.size()] == '.' &&
            f.key.compare(0, prefix.size(), prefix) == 0)
            return true;
    return false;
}

// The registry's integer setters read any JSON integer as int64: refuse an unsigned one that
// does not fit, which would wrap (2^64 - 1 reads as -1).
void setField(RunConfig& c, const FieldInfo& f, const json& v) {
    if (f.type == FieldType::Int && v.is_number_unsigned() &&
        v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw Error(ErrorCode::InvalidConfig, "config key \"" + f.key + "\": " + v.dump() +
                                                  " is outside the 64-bit integer range");
    f.set(c, v);
}

std::vector<Event> eventsFromJson(const json& list) {
    if (!list.is_array())
        throw Error(ErrorCode::InvalidConfig,
                    "config key \"events\": expected a list, got " + shortJson(list));
    std::vector<Event> events;
    for (size_t i = 0; i < list.size(); ++i)
        events.push_back(eventFromJson(list[i], "events[" + std::to_string(i) + "]"));
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& x, const Event& y) { return x.step < y.step; });
    return events;
}

// Unknown keys are collected in `unknown` (refuseUnknownKeys reports them all); a known key's
// bad value is refused at once.
void readObject(RunConfig& c, const json& j, const std::string& prefix,
                std::vector<std::string>& unknown) {
    if (!j.is_object())
        throw Error(ErrorCode::InvalidConfig,
                    (prefix.empty() ? std::string("config") : "config key \"" + prefix + "\"") +
                        ": expected a JSON object, got " + shortJson(j));
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
        if (key == "events") {
            c.events = eventsFromJson(it.value());
            continue;
        }
        if (const FieldInfo* f = findField(key)) {
            setField(c, *f, it.value());
        } else if (findRetiredKey(key)) {
            continue;
        } else if (isSection(key)) {
            readObject(c, it.value(), key, unknown);
        } else {
            unknown.push_back(key);
        }
    }
}

// Value checks shared by validate() and validationProblems(), one group at a time. Each
// problem names the dotted key, the value and the rule.
class ProblemList {
  public:
    explicit ProblemList(std::vector<std::string>& out) : m_out(out) {}
    void need(bool ok, const std::string& key, const std::string& value, const std::string& rule) {
        if (!ok) m_out.push_back(key + " = " + clipped(value) + ": " + rule);
    }
    void need(bool ok, const std::string& key, double value, const std::string& rule) {
        need(ok, key, fmt(value), rule);
    }

  private:
    std::vector<std::string>& m_out;
};

// Every float reaches the engine as float32 (a tensor, a kernel argument, a histogram edge),
// where a finite double beyond this becomes inf.
constexpr double kFloat32Max = 3.0e38;
constexpr double kFloat32MinNormal = 1.2e-38;  // FLT_MIN is 1.1755e-38
// The LR times the largest lr_multiplier factor (1e6) stays far inside float32; a larger LR
// could only diverge sooner.
constexpr double kMaxLr = 1e6;

void checkOptimizer(const RunConfig& c, ProblemList& p) {
    const auto& o = c.optim;
    p.need(o.lr > 0 && o.lr <= kMaxLr, "optim.lr", o.lr, "must be in (0, " + fmt(kMaxLr) + "]");
    p.need(o.weightDecay >= 0, "optim.weight_decay", o.weightDecay, "must be >= 0");
    p.need(o.betas.size() == 2 && o.betas[0] >= 0 && o.betas[0] < 1 && o.betas[1] >= 0 &&
               o.betas[1] < 1,
           "optim.betas", json(o.betas).dump(), "each beta must be in [0, 1)");
    p.need(o.eps > 0, "optim.eps", o.eps, "must be > 0");
    p.need(o.gradClip >= 0, "optim.grad_clip", o.gradClip, "must be >= 0 (0 = off)");
    p.need(o.zLoss >= 0, "optim.z_loss", o.zLoss, "must be >= 0");
    p.need(o.muLoss >= 0 && o.muLoss <= 100, "optim.mu_loss", o.muLoss, "must be in [0, 100]");
    p.need(o.outputCentring != OutputCentring::MuLoss || o.muLoss > 0, "optim.mu_loss", o.muLoss,
           "must be > 0 with optim.output_centring = mu_loss");
    p.need(o.muonMomentum >= 0 && o.muonMomentum < 1, "optim.muon_momentum", o.muonMomentum,
           "must be in [0, 1)");
    p.need(o.muonNsSteps >= 1 && o.muonNsSteps <= 20, "optim.muon_ns_steps", fmt(o.muonNsSteps),
           "must be in [1, 20]");
    for (const auto& [key, value] :
         {std::pair{"optim.skip_step_window", double(o.skipWindow)},
          std::pair{"optim.skip_step_sigma", o.skipSigma},
          std::pair{"optim.forecast_lr_factor", o.forecastLrFactor},
          std::pair{"optim.forecast_lr_steps", double(o.forecastLrSteps)}}) {
        const FieldInfo& f = *findField(key);
        p.need(value >= f.minValue && value <= f.maxValue, key, value,
               "must be in [" + fmt(f.minValue) + ", " + fmt(f.maxValue) + "]");
    }
    // Forecasts come from probes; the sigma rule reads every step before its update, which a
    // replayed CUDA graph (the update inside it) cannot.
    p.need(o.skipStep != SkipStepPolicy::Forecast || c.probes.every > 0, "optim.skip_step",
           "forecast", "needs probes.every > 0 (forecasts are made from probes)");
    p.need(o.skipStep != SkipStepPolicy::Sigma || c.run.cudaGraphs != AutoSwitch::On,
           "optim.skip_step", "sigma",
           "reads each step before its update; set run.cuda_graphs = auto or off");
    const auto& s = c.schedule;
    p.need(s.steps >= 1, "schedule.steps", fmt(s.steps), "must be >= 1");
    p.need(s.warmupSteps >= 0 && s.warmupSteps <= s.steps, "schedule.warmup_steps",
           fmt(s.warmupSteps), "must be in [0, schedule.steps = " + fmt(s.steps) + "]");
    p.need(s.minLrRatio >= 0 && s.minLrRatio <= 1, "schedule.min_lr_ratio", s.minLrRatio,
           "must be in [0, 1]");
    p.need(s.wsdDecayFraction > 0 && s.wsdDecayFraction <= 1, "schedule.wsd_decay_fraction",
           s.wsdDecayFraction, "must be in (0, 1]");
}

void checkModel(const RunConfig& c, ProblemList& p) {
    const auto& m = c.model;
    p.need(m.dModel >= 2, "model.d_model", fmt(m.dModel), "must be >= 2");
    p.need(m.nLayers >= 1, "model.n_layers", fmt(m.nLayers), "must be >= 1");
    const bool headsOk = m.nHeads >= 1 && m.dModel % m.nHeads == 0;
    p.need(headsOk, "model.n_heads", fmt(m.nHeads), "must divide model.d_model = " + fmt(m.dModel));
    if (headsOk && m.rope)
        p.need(c.dHead() % 2 == 0, "model.n_heads", fmt(m.nHeads),
               "RoPE needs an even d_head, got d_head = " + fmt(c.dHead()));
    p.need(m.seqLen >= 2, "model.seq_len", fmt(m.seqLen), "must be >= 2");
    p.need(m.ropeBase > 1, "model.rope_base", m.ropeBase, "must be > 1");
    p.need(m.mlpRatio >= 1, "model.mlp_ratio", fmt(m.mlpRatio), "must be >= 1");
    p.need(m.outputSoftcap >= 0, "model.output_softcap", m.outputSoftcap, "must be >= 0 (0 = off)");
    p.need(m.initStd > 0, "model.init_std", m.initStd, "must be > 0");
    if (c.attention.scale)
        p.need(*c.attention.scale > 0 && std::isfinite(*c.attention.scale), "attention.scale",
               *c.attention.scale, "must be > 0 (or \"inv_sqrt_d\")");
    p.need(c.attention.softcap.c > 0 && std::isfinite(c.attention.softcap.c), "attention.softcap.c",
           c.attention.softcap.c, "must be > 0");
}

void checkAnneal(const RunConfig& c, ProblemList& p) {
    auto window = [&](const std::string& key, double start, double end) {
        p.need(start >= 0 && start <= 1, key + ".start", start, "must be in [0, 1]");
        p.need(end >= 0 && end <= 1, key + ".end", end, "must be in [0, 1]");
        p.need(end >= start, key + ".end", end, "must be >= " + key + ".start = " + fmt(start));
    };
    window("anneal.qk_norm", c.anneal.qkNorm.start, c.anneal.qkNorm.end);
    window("anneal.softcap", c.anneal.softcap.start, c.anneal.softcap.end);
    p.need(c.anneal.softcap.cTo > 0, "anneal.softcap.c_to", c.anneal.softcap.cTo, "must be > 0");
}

void checkDataAndRun(const RunConfig& c, ProblemList& p) {
    p.need(!c.data.source.empty(), "data.source", "\"\"", "must be \"builtin\" or a file path");
    p.need(c.data.batchSize >= 1, "data.batch_size", fmt(c.data.batchSize), "must be >= 1");
    p.need(c.data.valFraction > 0 && c.data.valFraction <= 0.5, "data.val_fraction",
           c.data.valFraction, "must be in (0, 0.5]");
    p.need(c.eval.every >= 0, "eval.every", fmt(c.eval.every), "must be >= 0");
    // Each batch is a forward pass: a billion of them passed the memory check and would have
    // spent days in one validation.
    p.need(c.eval.batches >= 1 && c.eval.batches <= 1000, "eval.batches", fmt(c.eval.batches),
           "must be in [1, 1000]");
    p.need(c.run.seed >= 0, "run.seed", fmt(c.run.seed), "must be >= 0");
    p.need(c.run.threads >= 0, "run.threads", fmt(c.run.threads), "must be >= 0 (0 = all cores)");
    p.need(c.run.checkpointEvery >= 0, "run.checkpoint_every", fmt(c.run.checkpointEvery),
           "must be >= 0");
    // A graph replays the update in the same launches as the loss: every-step readback checks
    // the loss between the two.
    if (c.run.cudaGraphs == AutoSwitch::On) {
        p.need(c.run.device == DeviceKind::Cuda, "run.cuda_graphs", "on",
               "needs run.device = cuda");
        p.need(c.run.readback != Readback::EveryStep, "run.cuda_graphs", "on",
               "needs run.readback = auto or deferred, not every_step");
    }
}

void checkProbes(const RunConfig& c, ProblemList& p) {
    const auto& pr = c.probes;
    p.need(pr.every >= 0, "probes.every", fmt(pr.every), "must be >= 0 (0 = off)");
    p.need(pr.histBins >= 1 && pr.histBins <= 4096, "probes.hist_bins", fmt(pr.histBins),
           "must be in [1, 4096]");
    // The engine keeps the edges and their spacing in float32: hold them to the range the field
    // table declares.
    for (const auto& [key, value] :
         {std::pair{"probes.hist_min", pr.histMin}, std::pair{"probes.hist_max", pr.histMax}}) {
        const FieldInfo& f = *findField(key);
        p.need(value >= f.minValue && value <= f.maxValue, key, value,
               "must be in [" + fmt(f.minValue) + ", " + fmt(f.maxValue) + "]");
    }
    p.need(pr.histMax > pr.histMin, "probes.hist_max", pr.histMax,
           "must be > probes.hist_min = " + fmt(pr.histMin));
    p.need(pr.attnMapEvery >= 0, "probes.attn_map_every", fmt(pr.attnMapEvery), "must be >= 0");
    const auto& sp = c.spikes;
    p.need(sp.window >= 2, "spikes.window", fmt(sp.window), "must be >= 2");
    p.need(sp.zThreshold > 0, "spikes.z_threshold", sp.zThreshold, "must be > 0");
    p.need(sp.minHistory >= 2 && sp.minHistory <= sp.window, "spikes.min_history",
           fmt(sp.minHistory), "must be in [2, spikes.window = " + fmt(sp.window) + "]");
}

// Parameter types and ranges are checked when an event is read (eventFromJson); what depends
// on the rest of the config is checked here, and the ranges again for events built in code.
void checkEvents(const RunConfig& c, ProblemList& p) {
    for (size_t i = 0; i < c.events.size(); ++i) {
        const Event& e = c.events[i];
        const std::string where = "events[" + std::to_string(i) + "]";
        p.need(e.step >= 0 && e.step < c.schedule.steps, where + ".step", fmt(e.step),
               "must be in [0, schedule.steps = " + fmt(c.schedule.steps) + ")");
        for (const auto& param : eventKindInfo(e.kind).params) {
            if (param.type != FieldType::Float && param.type != FieldType::Int) continue;
            const double x = param.get(e.args).get<double>();
            p.need(x >= param.minValue && x <= param.maxValue, where + "." + param.key, x,
                   "must be in [" + fmt(param.minValue) + ", " + fmt(param.maxValue) + "]");
        }
    }
}

// Under MLA the absorbed decode factors each norm into a static weight (folded into the query)
// and one scalar per token; variants that do not factor that way are refused, naming why.
std::string mlaRefusal(QkNormVariant v) {
    if (v == QkNormVariant::LayerNorm)
        return "is not supported with attention.kind = mla: LayerNorm subtracts each key's "
               "mean, which is not a static weight times a per-token scalar, so the latent "
               "cache cannot absorb it (use rms, rms_affine, l2_scale or whole_rms)";
    return {};
}

// QK-Clip scales a head's rows of W_q and W_k; sigmaReparam uses gamma / sigma(W) * W, which
// divides the clip's factor out again wherever the head carries sigma(W) (wholly if every row
// were scaled), and its gamma, which could carry a clip, is one per matrix, not one per head.
// So the two are refused together, by the config key and by a qk_clip event (an intervention
// is checked as an event).
void checkSigmaReparam(const RunConfig& c, ProblemList& p) {
    const SigmaReparamScope scope = c.attention.sigmaReparam;
    if (scope == SigmaReparamScope::None) return;
    // QuacK's multipliers read ||W_Q|| and ||W_K|| as the logits use them; under sigmaReparam
    // the logits use gamma / sigma(W) * W, whose norm the stored W no longer is (and whose
    // size sigmaReparam already fixes), so the rule has nothing left to control.
    p.need(!c.optim.quack, "optim.quack", "true",
           std::string("cannot be combined with attention.sigma_reparam = ") + nameOf(scope) +
               ": the logits use gamma / sigma(W) * W, whose scale sigmaReparam already "
               "controls, not the stored W whose norms QuacK reads; set one of them off");
    const std::string why =
        std::string("QK-Clip cannot be combined with attention.sigma_reparam = ") + nameOf(scope) +
        ": the clip rescales rows of W_q and W_k, which gamma / sigma(W) * W "
        "divides out again, and gamma is one per matrix, not per head; set "
        "attention.qk_clip.tau = 0 or attention.sigma_reparam = none";
    p.need(c.attention.qkClip.tau == 0, "attention.qk_clip.tau", c.attention.qkClip.tau, why);
    for (size_t i = 0; i < c.events.size(); ++i) {
        const Event& e = c.events[i];
        if (e.kind == EventKind::QkClip)
            p.need(e.args.tau == 0, "events[" + std::to_string(i) + "].tau", e.args.tau, why);
    }
}

void checkAttention(const RunConfig& c, ProblemList& p) {
    const auto& a = c.attention;
    p.need(a.qkClip.tau >= 0 && std::isfinite(a.qkClip.tau), "attention.qk_clip.tau", a.qkClip.tau,
           "must be >= 0 (0 = off)");
    p.need(a.qkClip.every >= 1, "attention.qk_clip.every", fmt(a.qkClip.every), "must be >= 1");
    checkSigmaReparam(c, p);
    if (a.kind != AttentionKind::Mla) return;
    const auto& m = a.mla;
    p.need(m.dC >= 1 && m.dC <= 65536, "attention.mla.d_c", fmt(m.dC), "must be in [1, 65536]");
    p.need(m.qLora >= 0 && m.qLora <= 65536, "attention.mla.q_lora", fmt(m.qLora),
           "must be in [0, 65536] (0 = full-rank queries)");
    if (c.model.rope)
        p.need(m.dRope >= 2 && m.dRope % 2 == 0 && m.dRope <= 4096, "attention.mla.d_rope",
               fmt(m.dRope), "must be even and in [2, 4096] with model.rope on");
    else
        p.need(m.dRope == 0, "attention.mla.d_rope", fmt(m.dRope),
               "must be 0 with model.rope off (no rotary part without RoPE)");
    const std::string refusal = mlaRefusal(a.qkNorm);
    p.need(refusal.empty(), "attention.qk_norm", nameOf(a.qkNorm), refusal);
    p.need(a.qkNormOn != QkNormTarget::QKV, "attention.qk_norm_on", nameOf(a.qkNormOn),
           "qkv is not supported with attention.kind = mla: the values are never materialised "
           "in MLA's decode (W_UV is folded into the output), so there is no v to normalise");
    for (size_t i = 0; i < c.events.size(); ++i) {
        const Event& e = c.events[i];
        if (e.kind != EventKind::QkNorm) continue;
        const std::string why = mlaRefusal(e.args.variant);
        p.need(why.empty(), "events[" + std::to_string(i) + "].variant", nameOf(e.args.variant),
               why);
    }
}

void checkFloat32(const RunConfig& c, ProblemList& p) {
    for (const auto& f : configFields()) {
        if (f.type != FieldType::Float && f.type != FieldType::Scale) continue;
        const json v = f.get(c);  // a Scale may be "inv_sqrt_d"
        if (!v.is_number()) continue;
        const double x = std::fabs(v.get<double>());
        p.need(x <= kFloat32Max, f.key, v.get<double>(),
               "must be within the float32 range (|x| <= " + fmt(kFloat32Max) + ")");
        // optim.eps = 1e-50 validated, became 0 in float32 and the run divided by it.
        p.need(x == 0 || x >= kFloat32MinNormal, f.key, v.get<double>(),
               "is 0 or a subnormal in float32, where the run uses it (|x| >= " +
                   fmt(kFloat32MinNormal) + ", or 0)");
    }
}

void collectProblems(const RunConfig& c, std::vector<std::string>& out) {
    ProblemList p(out);
    checkOptimizer(c, p);
    checkModel(c, p);
    checkAnneal(c, p);
    checkDataAndRun(c, p);
    checkProbes(c, p);
    checkEvents(c, p);
    checkAttention(c, p);
    checkFloat32(c, p);
}

}  // namespace

int64_t RunConfig::dQk() const {
    return dHead() + (attention.kind == AttentionKind::Mla ? attention.mla.dRope : 0);
}

double RunConfig::logitScale() const {
    return attention.scale ? *attention.scale : 1.0 / std::sqrt(static_cast<double>(dQk()));
}

int64_t RunConfig::maxSeqLen() const {
    int64_t t = model.seqLen;
    for (const auto& e : events)
        if (e.kind == EventKind::ContextLength) t = std::max(t, e.args.seqLen);
    return t;
}

RunConfig configFromJson(const json& j, bool checkValues) {
    RunConfig c;
    std::vector<std::string> unknown;
    readObject(c, j, "", unknown);
    refuseUnknownKeys(unknown);
    if (checkValues) validate(c);
    return c;
}

RunConfig configFromJsonText(const std::string& text, const std::string& origin, bool checkValues) {
    try {
        return configFromJson(parseJsonText(text), checkValues);
    } catch (const JsonSyntaxError& e) {
        throw Error(ErrorCode::InvalidConfig, origin + " is not valid JSON: " + e.what());
    } catch (const Error& e) {
        throw Error(e.code(), origin + ": " + e.what());
    }
}

RunConfig loadPreset(const std::string& path, bool checkValues) {
    return configFromJsonText(readInputFile(path, kPresetFile), path, checkValues);
}

namespace {

json changedFromDefaults(const json& value, const json& defaults) {
    json out = json::object();
    for (auto it = value.begin(); it != value.end(); ++it) {
        const auto d = defaults.find(it.key());
        if (d == defaults.end()) {
            out[it.key()] = it.value();
        } else if (it.value().is_object() && d->is_object()) {
            json sub = changedFromDefaults(it.value(), *d);
            if (!sub.empty()) out[it.key()] = sub;
        } else if (it.value() != *d) {
            out[it.key()] = it.value();
        }
    }
    return out;
}

}  // namespace

json presetJson(const RunConfig& c) {
    json out = changedFromDefaults(configToJson(c), configToJson(RunConfig{}));
    out["why"] = c.why;
    return out;
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
    for (const auto& e : c.events) events.push_back(eventToJson(e));
    j["events"] = events;
    return j;
}

namespace {

// The value of `--set key=text`: JSON when it parses, else the bare word (rms, cosine). A Text
// field keeps the text itself unless it is a quoted JSON string, so a path such as 123 or 1e999
// stays a path.
json overrideValue(const std::string& key, const std::string& text, bool textField) {
    try {
        const json value = parseJsonText(text, key);
        return textField && !value.is_string() ? json(text) : value;
    } catch (const JsonSyntaxError&) {
        return text;
    } catch (const Error&) {
        if (textField) return text;
        throw;  // JSON beyond the limits (too deep, 1e999): not a word either
    }
}

}  // namespace

void applyOverride(RunConfig& c, const std::string& assignment) {
    // A config is stored as JSON, which holds only UTF-8 text.
    if (!isValidUtf8(assignment))
        throw Error(ErrorCode::InvalidConfig,
                    "--set \"" + clipped(assignment) + "\": not valid UTF-8 text");
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw Error(ErrorCode::InvalidConfig,
                    "--set expects dotted.key=value, got \"" + clipped(assignment) + "\"");
    const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
    if (key == "events") {
        c.events = eventsFromJson(overrideValue(key, text, false));
        return;
    }
    if (const RetiredKey* retired = findRetiredKey(key))
        throw Error(ErrorCode::InvalidConfig, "--set \"" + clipped(assignment) +
                                                  "\": config key \"" + key +
                                                  "\" was retired: " + retired->why);
    const FieldInfo* f = findField(key);
    if (!f) unknownKey(key);
    setField(c, *f, overrideValue(key, text, f->type == FieldType::Text));
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
    const bool capAnneal = sa.start < 1.0 && c.attention.softcap.kind != SoftcapKind::None;
    if (qkAnneal && capAnneal && qa.start < sa.end && sa.start < qa.end)
        w.push_back(
            "the QK-norm and softcap anneal windows overlap: the guide advises against "
            "annealing both fuses at once");
    if (qkAnneal && c.attention.qkNorm == QkNormVariant::None)
        w.push_back("anneal.qk_norm is set but attention.qk_norm is none: nothing to anneal");
    if (qkAnneal && c.attention.qkNormOn == QkNormTarget::K)
        w.push_back("K-only QK-norm is light protection and not meant for annealing");
    if (qkAnneal && qa.shape != AnnealShape::Hard && qa.end - qa.start < 0.03)
        w.push_back(
            "a QK-norm anneal window under 3% of the steps gives a visible loss rebound "
            "(5-10% is the guide's range)");
    if (c.attention.softcap.kind != SoftcapKind::None && c.attention.softcap.c < 20 &&
        c.attention.qkNorm != QkNormVariant::None)
        w.push_back("softcap C < 20 with QK-norm on flattens attention (start at 50)");
    if (c.attention.scale && c.attention.qkNorm != QkNormVariant::None &&
        c.attention.qkNorm != QkNormVariant::L2Scale) {
        const double ref = 1.0 / std::sqrt(static_cast<double>(c.dQk()));
        if (*c.attention.scale > 1.5 * ref)
            w.push_back(
                "attention.scale is above 1/sqrt(d_head) with QK-norm: attention too sharp");
        if (*c.attention.scale < ref / 1.5)
            w.push_back(
                "attention.scale is below 1/sqrt(d_head) with QK-norm: attention nearly "
                "uniform (scale applied twice?)");
    }
    if (c.attention.qkClip.tau > 0 && c.attention.qkNorm != QkNormVariant::None)
        w.push_back(
            "QK-Clip scales W_q and W_k, but QK-norm removes their length: with QK-norm on the "
            "clip cannot lower the logits (it only matters while alpha < 1)");
    if (c.run.dtype == Precision::Bf16 && c.run.device == DeviceKind::Cpu)
        w.push_back("bf16 on the CPU is slow with Debian's LibTorch 1.13; fp32 is the CPU default");
    return w;
}

}  // namespace qklab
