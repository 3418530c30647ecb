// config_fields.cpp — the table of every RunConfig field: dotted key, type, GUI group, help.
//
// The JSON reader/writer, `--set`, and the GUI form are all driven by this one table, so a
// field added here is immediately readable, writable, overridable and editable.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "qklab/error.h"
#include "qklab/run_config.h"

namespace qklab {
namespace {

using nlohmann::json;

[[noreturn]] void typeError(const std::string& key, const json& v, const char* expected) {
    throw Error(ErrorCode::InvalidConfig,
                "config key \"" + key + "\": expected " + expected + ", got " + v.dump());
}

template <class Ref>
FieldInfo field(std::string key, FieldType type, std::string group, std::string help, Ref ref,
                double lo = 0, double hi = 0, std::vector<std::string> choices = {}) {
    FieldInfo f;
    f.key = std::move(key);
    f.type = type;
    f.group = std::move(group);
    f.help = std::move(help);
    f.minValue = lo;
    f.maxValue = hi;
    f.choices = std::move(choices);
    const std::string k = f.key;
    // The getter reads through the same reference accessor as the setter; const_cast is safe
    // because the accessor only forms a reference.
    f.get = [ref](const RunConfig& c) -> json { return json(ref(const_cast<RunConfig&>(c))); };
    using T = std::decay_t<decltype(ref(std::declval<RunConfig&>()))>;
    if constexpr (std::is_same_v<T, double>) {
        f.set = [ref, k](RunConfig& c, const json& v) {
            if (!v.is_number()) typeError(k, v, "a number");
            ref(c) = v.get<double>();
        };
    } else if constexpr (std::is_same_v<T, int64_t>) {
        f.set = [ref, k](RunConfig& c, const json& v) {
            if (v.is_number_integer()) {
                ref(c) = v.get<int64_t>();
            } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
                       std::fabs(v.get<double>()) < 9e15) {
                ref(c) = static_cast<int64_t>(v.get<double>());  // 1e3 is a fine integer
            } else {
                typeError(k, v, "an integer");
            }
        };
    } else if constexpr (std::is_same_v<T, bool>) {
        f.set = [ref, k](RunConfig& c, const json& v) {
            if (!v.is_boolean()) typeError(k, v, "true or false");
            ref(c) = v.get<bool>();
        };
    } else if (type == FieldType::Choice) {
        const auto options = f.choices;
        f.set = [ref, k, options](RunConfig& c, const json& v) {
            std::string list;
            for (const auto& o : options) list += (list.empty() ? "" : " | ") + o;
            if (!v.is_string()) typeError(k, v, ("one of " + list).c_str());
            const auto s = v.get<std::string>();
            if (std::find(options.begin(), options.end(), s) == options.end())
                throw Error(ErrorCode::InvalidConfig,
                            "config key \"" + k + "\": \"" + s + "\" is not one of " + list);
            ref(c) = s;
        };
    } else {
        f.set = [ref, k](RunConfig& c, const json& v) {
            if (!v.is_string()) typeError(k, v, "a string");
            ref(c) = v.get<std::string>();
        };
    }
    return f;
}

std::vector<FieldInfo> buildFields() {
    const std::string gPreset = "Preset", gModel = "Model", gAttn = "Attention & QK-norm",
                      gCap = "Softcap", gAnneal = "Anneal", gOpt = "Optimizer & LR schedule",
                      gData = "Data & events", gProbe = "Probes", gDev = "Device";
    const std::vector<std::string> qkNorms{"none", "rms", "rms_affine", "layernorm", "l2_scale",
                                           "whole_rms"};
    std::vector<FieldInfo> f;
    f.push_back(field("why", FieldType::Text, gPreset, "what this preset/run demonstrates",
                      [](RunConfig& c) -> std::string& { return c.why; }));

    // Optimizer & schedule
    f.push_back(field("optim.lr", FieldType::Float, gOpt, "peak learning rate (AdamW)",
                      [](RunConfig& c) -> double& { return c.optim.lr; }, 1e-6, 1.0));
    f.push_back(field("optim.weight_decay", FieldType::Float, gOpt,
                      "decoupled weight decay on matrices (not on norms/gains)",
                      [](RunConfig& c) -> double& { return c.optim.weightDecay; }, 0, 1));
    {
        FieldInfo b;
        b.key = "optim.betas";
        b.type = FieldType::FloatPair;
        b.group = gOpt;
        b.help = "AdamW (beta1, beta2)";
        b.minValue = 0;
        b.maxValue = 0.9999;
        b.get = [](const RunConfig& c) { return json(c.optim.betas); };
        b.set = [](RunConfig& c, const json& v) {
            if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number())
                typeError("optim.betas", v, "a list of two numbers");
            c.optim.betas = {v[0].get<double>(), v[1].get<double>()};
        };
        f.push_back(b);
    }
    f.push_back(field("optim.eps", FieldType::Float, gOpt, "AdamW epsilon",
                      [](RunConfig& c) -> double& { return c.optim.eps; }, 1e-12, 1e-3));
    f.push_back(field("optim.grad_clip", FieldType::Float, gOpt,
                      "clip the global gradient L2 norm to this; 0 = off",
                      [](RunConfig& c) -> double& { return c.optim.gradClip; }, 0, 100));
    f.push_back(field("optim.z_loss", FieldType::Float, gOpt,
                      "z-loss coefficient: adds z * log(Z)^2 (Wortsman et al. 1e-4); 0 = off",
                      [](RunConfig& c) -> double& { return c.optim.zLoss; }, 0, 1));
    f.push_back(field("schedule.steps", FieldType::Int, gOpt, "optimizer steps in the run",
                      [](RunConfig& c) -> int64_t& { return c.schedule.steps; }, 1, 1e7));
    f.push_back(field("schedule.warmup_steps", FieldType::Int, gOpt,
                      "linear LR warm-up steps from 0",
                      [](RunConfig& c) -> int64_t& { return c.schedule.warmupSteps; }, 0, 1e7));
    f.push_back(field("schedule.decay", FieldType::Choice, gOpt,
                      "LR shape after warm-up (wsd = warmup-stable-decay)",
                      [](RunConfig& c) -> std::string& { return c.schedule.decay; }, 0, 0,
                      {"constant", "linear", "cosine", "wsd"}));
    f.push_back(field("schedule.min_lr_ratio", FieldType::Float, gOpt,
                      "final LR as a fraction of optim.lr",
                      [](RunConfig& c) -> double& { return c.schedule.minLrRatio; }, 0, 1));
    f.push_back(field("schedule.wsd_decay_fraction", FieldType::Float, gOpt,
                      "wsd: share of the steps spent in the final decay",
                      [](RunConfig& c) -> double& { return c.schedule.wsdDecayFraction; }, 0.01, 1));

    // Model
    f.push_back(field("model.d_model", FieldType::Int, gModel, "residual width",
                      [](RunConfig& c) -> int64_t& { return c.model.dModel; }, 8, 8192));
    f.push_back(field("model.n_layers", FieldType::Int, gModel, "transformer blocks",
                      [](RunConfig& c) -> int64_t& { return c.model.nLayers; }, 1, 96));
    f.push_back(field("model.n_heads", FieldType::Int, gModel,
                      "attention heads; d_head = d_model / n_heads",
                      [](RunConfig& c) -> int64_t& { return c.model.nHeads; }, 1, 128));
    f.push_back(field("model.seq_len", FieldType::Int, gModel, "context length T (bytes)",
                      [](RunConfig& c) -> int64_t& { return c.model.seqLen; }, 2, 65536));
    f.push_back(field("model.rope", FieldType::Bool, gModel,
                      "rotary position embedding (off = learned absolute positions)",
                      [](RunConfig& c) -> bool& { return c.model.rope; }));
    f.push_back(field("model.rope_base", FieldType::Float, gModel, "RoPE frequency base",
                      [](RunConfig& c) -> double& { return c.model.ropeBase; }, 2, 1e7));
    f.push_back(field("model.mlp_ratio", FieldType::Int, gModel, "MLP hidden width / d_model",
                      [](RunConfig& c) -> int64_t& { return c.model.mlpRatio; }, 1, 16));
    f.push_back(field("model.output_softcap", FieldType::Float, gModel,
                      "tanh cap on the LM-head logits (Gemma 2: 30); 0 = off",
                      [](RunConfig& c) -> double& { return c.model.outputSoftcap; }, 0, 1000));
    f.push_back(field("model.tie_embeddings", FieldType::Bool, gModel,
                      "share the token embedding with the LM head",
                      [](RunConfig& c) -> bool& { return c.model.tieEmbeddings; }));
    f.push_back(field("model.init_std", FieldType::Float, gModel,
                      "std of the normal weight init (residual projections are scaled down)",
                      [](RunConfig& c) -> double& { return c.model.initStd; }, 1e-4, 1));

    // Attention & QK-norm
    f.push_back(field("attention.qk_norm", FieldType::Choice, gAttn,
                      "QK-norm variant: per-head RMS (no gain / learnable gain), per-head "
                      "LayerNorm, L2 with a learnable scale g replacing s, or RMS over the "
                      "whole projection (OLMo 2)",
                      [](RunConfig& c) -> std::string& { return c.attention.qkNorm; }, 0, 0,
                      qkNorms));
    f.push_back(field("attention.qk_norm_on", FieldType::Choice, gAttn,
                      "what is normalised: q and k, k only (light), or q, k and v",
                      [](RunConfig& c) -> std::string& { return c.attention.qkNormOn; }, 0, 0,
                      {"qk", "k", "qkv"}));
    f.push_back(field("attention.qk_norm_placement", FieldType::Choice, gAttn,
                      "normalise before or after RoPE (a rotation: norms are kept either way)",
                      [](RunConfig& c) -> std::string& { return c.attention.qkNormPlacement; },
                      0, 0, {"before_rope", "after_rope"}));
    f.push_back(field("attention.qk_gain_per_head", FieldType::Bool, gAttn,
                      "learnable QK gains per head (true) or shared by all heads (Qwen3)",
                      [](RunConfig& c) -> bool& { return c.attention.qkGainPerHead; }));
    {
        FieldInfo s;
        s.key = "attention.scale";
        s.type = FieldType::Scale;
        s.group = gAttn;
        s.help = "logit scale s: a number, or \"inv_sqrt_d\" for 1/sqrt(d_head)";
        s.minValue = 1e-4;
        s.maxValue = 100;
        s.get = [](const RunConfig& c) {
            return c.attention.scale ? json(*c.attention.scale) : json("inv_sqrt_d");
        };
        s.set = [](RunConfig& c, const json& v) {
            if (v.is_number())
                c.attention.scale = v.get<double>();
            else if (v.is_string() && v.get<std::string>() == "inv_sqrt_d")
                c.attention.scale.reset();
            else
                typeError("attention.scale", v, "a number or \"inv_sqrt_d\"");
        };
        f.push_back(s);
    }
    f.push_back(field("attention.softcap.kind", FieldType::Choice, gCap,
                      "cap on attention logits: C*tanh(x/C), or clamp(x, -C, C)",
                      [](RunConfig& c) -> std::string& { return c.attention.softcap.kind; }, 0,
                      0, {"none", "tanh", "clamp"}));
    f.push_back(field("attention.softcap.c", FieldType::Float, gCap,
                      "cap width C (Gemma 2: 50; below ~20 flattens attention)",
                      [](RunConfig& c) -> double& { return c.attention.softcap.c; }, 0.1, 1e4));

    // Anneal
    f.push_back(field("anneal.qk_norm.start", FieldType::Float, gAnneal,
                      "fraction of steps where alpha starts falling from 1 (1 = no anneal)",
                      [](RunConfig& c) -> double& { return c.anneal.qkNorm.start; }, 0, 1));
    f.push_back(field("anneal.qk_norm.end", FieldType::Float, gAnneal,
                      "fraction of steps where alpha reaches 0",
                      [](RunConfig& c) -> double& { return c.anneal.qkNorm.end; }, 0, 1));
    f.push_back(field("anneal.qk_norm.shape", FieldType::Choice, gAnneal,
                      "alpha curve inside the window (hard = switch off at start)",
                      [](RunConfig& c) -> std::string& { return c.anneal.qkNorm.shape; }, 0, 0,
                      {"linear", "cosine", "hard"}));
    f.push_back(field("anneal.softcap.start", FieldType::Float, gAnneal,
                      "fraction of steps where C starts moving to c_to (1 = no anneal)",
                      [](RunConfig& c) -> double& { return c.anneal.softcap.start; }, 0, 1));
    f.push_back(field("anneal.softcap.end", FieldType::Float, gAnneal,
                      "fraction of steps where C reaches c_to",
                      [](RunConfig& c) -> double& { return c.anneal.softcap.end; }, 0, 1));
    f.push_back(field("anneal.softcap.c_to", FieldType::Float, gAnneal,
                      "softcap C at the end of its anneal (1000 ~ off)",
                      [](RunConfig& c) -> double& { return c.anneal.softcap.cTo; }, 0.1, 1e6));

    // Data
    f.push_back(field("data.source", FieldType::Text, gData,
                      "\"builtin\" (generated corpus shipped in the app) or a text file path",
                      [](RunConfig& c) -> std::string& { return c.data.source; }));
    f.push_back(field("data.batch_size", FieldType::Int, gData, "sequences per step",
                      [](RunConfig& c) -> int64_t& { return c.data.batchSize; }, 1, 4096));
    f.push_back(field("data.val_fraction", FieldType::Float, gData,
                      "tail of the corpus held out for validation",
                      [](RunConfig& c) -> double& { return c.data.valFraction; }, 0.01, 0.5));
    f.push_back(field("eval.every", FieldType::Int, gData,
                      "validation loss every N steps (0 = only at the end)",
                      [](RunConfig& c) -> int64_t& { return c.eval.every; }, 0, 1e7));
    f.push_back(field("eval.batches", FieldType::Int, gData, "batches per validation",
                      [](RunConfig& c) -> int64_t& { return c.eval.batches; }, 1, 1000));

    // Probes and spikes
    f.push_back(field("probes.every", FieldType::Int, gProbe,
                      "record attention statistics every N steps (0 = off)",
                      [](RunConfig& c) -> int64_t& { return c.probes.every; }, 0, 1e6));
    f.push_back(field("probes.hist_bins", FieldType::Int, gProbe, "raw-logit histogram bins",
                      [](RunConfig& c) -> int64_t& { return c.probes.histBins; }, 1, 4096));
    f.push_back(field("probes.hist_min", FieldType::Float, gProbe,
                      "lower histogram edge (in hist_scale units)",
                      [](RunConfig& c) -> double& { return c.probes.histMin; }, -1e6, 1e6));
    f.push_back(field("probes.hist_max", FieldType::Float, gProbe,
                      "upper histogram edge (in hist_scale units)",
                      [](RunConfig& c) -> double& { return c.probes.histMax; }, -1e6, 1e6));
    f.push_back(field("probes.hist_scale", FieldType::Choice, gProbe,
                      "bin raw logits linearly, or by sign(x)*log10(1+|x|) to see 10^6",
                      [](RunConfig& c) -> std::string& { return c.probes.histScale; }, 0, 0,
                      {"linear", "symlog"}));
    f.push_back(field("probes.attn_map_every", FieldType::Int, gProbe,
                      "store the softmax map of one sequence every N steps (0 = off)",
                      [](RunConfig& c) -> int64_t& { return c.probes.attnMapEvery; }, 0, 1e6));
    f.push_back(field("spikes.window", FieldType::Int, gProbe,
                      "rolling window of the spike z-score (llm.c: 128)",
                      [](RunConfig& c) -> int64_t& { return c.spikes.window; }, 2, 1e5));
    f.push_back(field("spikes.z_threshold", FieldType::Float, gProbe,
                      "a loss/grad-norm this many sigmas above the window mean is a spike",
                      [](RunConfig& c) -> double& { return c.spikes.zThreshold; }, 0.5, 100));
    f.push_back(field("spikes.min_history", FieldType::Int, gProbe,
                      "values seen before any spike verdict",
                      [](RunConfig& c) -> int64_t& { return c.spikes.minHistory; }, 2, 1e5));

    // Device & run
    f.push_back(field("run.seed", FieldType::Int, gDev, "seed of init and data order",
                      [](RunConfig& c) -> int64_t& { return c.run.seed; }, 0, 2147483647));
    f.push_back(field("run.device", FieldType::Choice, gDev, "where to train",
                      [](RunConfig& c) -> std::string& { return c.run.device; }, 0, 0,
                      {"cpu", "cuda"}));
    f.push_back(field("run.dtype", FieldType::Choice, gDev,
                      "compute precision (master weights stay fp32; probes in fp32)",
                      [](RunConfig& c) -> std::string& { return c.run.dtype; }, 0, 0,
                      {"fp32", "bf16"}));
    f.push_back(field("run.threads", FieldType::Int, gDev, "CPU threads (0 = all cores)",
                      [](RunConfig& c) -> int64_t& { return c.run.threads; }, 0, 256));
    f.push_back(field("run.checkpoint_every", FieldType::Int, gDev,
                      "save a checkpoint every N steps (0 = only at stop/end)",
                      [](RunConfig& c) -> int64_t& { return c.run.checkpointEvery; }, 0, 1e7));
    f.push_back(field("run.fused_attention", FieldType::Bool, gDev,
                      "fused attention kernel on steps that need no explicit logits (no probe, "
                      "no softcap); false = always the explicit path",
                      [](RunConfig& c) -> bool& { return c.run.fusedAttention; }));
    f.push_back(field("run.readback", FieldType::Choice, gDev,
                      "when loss and grad norm come back to the host: every_step, or deferred to "
                      "probe/eval/checkpoint steps and ~0.5 s (no per-step GPU sync); auto = "
                      "deferred on cuda",
                      [](RunConfig& c) -> std::string& { return c.run.readback; }, 0, 0,
                      {"auto", "every_step", "deferred"}));
    return f;
}

}  // namespace

const std::vector<FieldInfo>& configFields() {
    static const std::vector<FieldInfo> fields = buildFields();
    return fields;
}

const FieldInfo* findField(const std::string& dottedKey) {
    for (const auto& f : configFields())
        if (f.key == dottedKey) return &f;
    return nullptr;
}

}  // namespace qklab
