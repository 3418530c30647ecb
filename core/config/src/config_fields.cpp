// config_fields.cpp — the table of every RunConfig field: dotted key, type, GUI group, human
// label, unit and help.
//
// The JSON reader/writer, `--set`, the GUI form, `qklab-cli keys` and docs/CONFIG.md are all
// driven by this one table, so a field added here is immediately readable, writable,
// overridable, editable and documented. Enumerated fields take their names from
// qklab/util/choices.h.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "qklab/config/run_config.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

namespace qklab {
namespace {

using nlohmann::json;

[[noreturn]] void typeError(const std::string& key, const json& v, const std::string& expected) {
    throw Error(ErrorCode::InvalidConfig,
                "config key \"" + key + "\": expected " + expected + ", got " + shortJson(v));
}

// The setter for a field of type T, checking the JSON type (values are checked by validate()).
template <class T, class Ref>
std::function<void(RunConfig&, const json&)> setterFor(const std::string& k, Ref ref) {
    if constexpr (std::is_same_v<T, double>) {
        return [ref, k](RunConfig& c, const json& v) {
            if (!v.is_number()) typeError(k, v, "a number");
            ref(c) = v.get<double>();
        };
    } else if constexpr (std::is_same_v<T, int64_t>) {
        return [ref, k](RunConfig& c, const json& v) {
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
        return [ref, k](RunConfig& c, const json& v) {
            if (!v.is_boolean()) typeError(k, v, "true or false");
            ref(c) = v.get<bool>();
        };
    } else if constexpr (std::is_enum_v<T>) {
        return [ref, k](RunConfig& c, const json& v) {
            const auto value = v.is_string() ? parseChoice<T>(v.get<std::string>()) : std::nullopt;
            if (!value) {
                if (!v.is_string()) typeError(k, v, "one of " + choiceList<T>());
                throw Error(ErrorCode::InvalidConfig, "config key \"" + k + "\": \"" +
                                                          clipped(v.get<std::string>()) +
                                                          "\" is not one of " + choiceList<T>());
            }
            ref(c) = *value;
        };
    } else {
        return [ref, k](RunConfig& c, const json& v) {
            if (!v.is_string()) typeError(k, v, "a string");
            ref(c) = v.get<std::string>();
        };
    }
}

// Collects fields group by group.
struct FieldTable {
    std::vector<FieldInfo> fields;
    std::string group;

    // A field whose C++ type (double, int64_t, bool, an enum, std::string) gives its FieldType.
    template <class Ref>
    void add(std::string key, std::string label, std::string unit, std::string help, Ref ref,
             double lo = 0, double hi = 0) {
        using T = std::decay_t<decltype(ref(std::declval<RunConfig&>()))>;
        FieldInfo f;
        f.type = std::is_same_v<T, double>    ? FieldType::Float
                 : std::is_same_v<T, int64_t> ? FieldType::Int
                 : std::is_same_v<T, bool>    ? FieldType::Bool
                 : std::is_enum_v<T>          ? FieldType::Choice
                                              : FieldType::Text;
        if constexpr (std::is_enum_v<T>) f.choices = choiceNames<T>();
        f.key = std::move(key);
        f.label = std::move(label);
        f.unit = std::move(unit);
        f.help = std::move(help);
        f.minValue = lo;
        f.maxValue = hi;
        // The getter reads through the same reference accessor as the setter; const_cast is
        // safe because the accessor only forms a reference.
        f.get = [ref](const RunConfig& c) -> json {
            if constexpr (std::is_enum_v<T>)
                return json(nameOf(ref(const_cast<RunConfig&>(c))));
            else
                return json(ref(const_cast<RunConfig&>(c)));
        };
        f.set = setterFor<T>(f.key, ref);
        add(std::move(f));
    }
    void add(FieldInfo f) {
        f.group = group;
        fields.push_back(std::move(f));
    }
};

// optim.skip_step and its parameters (issue 40).
void skipStepFields(FieldTable& t) {
    t.add("optim.skip_step", "Skip-step policy", "",
          "off; sigma = skip the update of a step whose loss or grad norm is above mean + "
          "optim.skip_step_sigma x std of the previous optim.skip_step_window steps (OLMo-core's "
          "SkipStepAdamW; stored as a skip_step event); forecast = multiply the LR by "
          "optim.forecast_lr_factor for optim.forecast_lr_steps steps after a forecast of an "
          "onset (stored as lr_multiplier events). Both are judged against twins: sweep --twins",
          [](RunConfig& c) -> SkipStepPolicy& { return c.optim.skipStep; });
    t.add(
        "optim.skip_step_window", "Skip-step window", "steps",
        "sigma policy: the steps the mean and std are taken over (it acts once half are in)",
        [](RunConfig& c) -> int64_t& { return c.optim.skipWindow; }, 4, 100000);
    t.add(
        "optim.skip_step_sigma", "Skip-step sigmas", "std",
        "sigma policy: skip when the loss or the grad norm is more than this many standard "
        "deviations above the window's mean",
        [](RunConfig& c) -> double& { return c.optim.skipSigma; }, 0.5, 100);
    t.add(
        "optim.forecast_lr_factor", "Forecast LR factor", "",
        "forecast policy: the LR multiplier while a forecast is acted on (times the one in "
        "effect)",
        [](RunConfig& c) -> double& { return c.optim.forecastLrFactor; }, 1e-6, 1);
    t.add(
        "optim.forecast_lr_steps", "Forecast LR steps", "steps",
        "forecast policy: how long the LR stays lowered after a forecast",
        [](RunConfig& c) -> int64_t& { return c.optim.forecastLrSteps; }, 1, 1e7);
}

// optim.kind and Muon's parameters (issue 41).
void muonFields(FieldTable& t) {
    t.add("optim.kind", "Optimizer", "",
          "adamw; muon = Muon (Moonlight's form, as Kimi K2 trains) on the blocks' 2-D hidden "
          "matrices (attention and MLA projections, MHA's qkv as three matrices q, k, v, the "
          "output gate, the MLP): Nesterov momentum, Newton-Schulz orthogonalisation, an update "
          "scaled by 0.2 sqrt(max(rows, cols)) so that optim.lr and optim.weight_decay carry "
          "over; AdamW keeps the embeddings, the LM head, the norms and gains. With "
          "attention.qk_clip.tau set it is MuonClip. Fixed for the run",
          [](RunConfig& c) -> OptimKind& { return c.optim.kind; });
    t.add(
        "optim.muon_momentum", "Muon momentum", "",
        "muon: the momentum mu of M <- mu M + G (Nesterov: the update orthogonalises G + mu M)",
        [](RunConfig& c) -> double& { return c.optim.muonMomentum; }, 0, 0.9999);
    t.add(
        "optim.muon_ns_steps", "Muon Newton-Schulz steps", "",
        "muon: quintic Newton-Schulz iterations per update (5 in Muon, Moonlight and K2)",
        [](RunConfig& c) -> int64_t& { return c.optim.muonNsSteps; }, 1, 20);
}

// The output-logit fuses: z-loss and output embedding centring (issue 41).
void outputLogitFields(FieldTable& t) {
    t.add(
        "optim.z_loss", "z-loss", "",
        "z-loss coefficient: adds z * mean(log(Z)^2), the step metric z_loss_term (Wortsman et "
        "al. 1e-4); 0 = off",
        [](RunConfig& c) -> double& { return c.optim.zLoss; }, 0, 1);
    t.add("optim.output_centring", "Output centring", "",
          "output embedding centring (Stollenwerk et al. 2026) against output-logit divergence: "
          "mu, the mean row of the LM head (the token embedding when tied), sets the mean "
          "output logit mu . h; mu_centring subtracts mu from every row after each update, "
          "mu_loss adds optim.mu_loss x ||mu||^2 to the loss; the step metric mu_norm is ||mu||",
          [](RunConfig& c) -> OutputCentring& { return c.optim.outputCentring; });
    t.add(
        "optim.mu_loss", "mu-loss", "",
        "mu_loss: the coefficient of ||mu||^2 (0.1 in the authors' runs; read only with "
        "optim.output_centring = mu_loss)",
        [](RunConfig& c) -> double& { return c.optim.muLoss; }, 0, 100);
}

void optimizerFields(FieldTable& t) {
    t.group = "Optimizer & LR schedule";
    t.add(
        "optim.lr", "Peak learning rate", "", "peak learning rate (AdamW)",
        [](RunConfig& c) -> double& { return c.optim.lr; }, 1e-6, 1.0);
    t.add(
        "optim.weight_decay", "Weight decay", "",
        "decoupled weight decay on matrices (not on norms/gains)",
        [](RunConfig& c) -> double& { return c.optim.weightDecay; }, 0, 1);
    FieldInfo b;
    b.key = "optim.betas";
    b.type = FieldType::FloatPair;
    b.label = "AdamW betas";
    b.help = "AdamW (beta1, beta2)";
    b.minValue = 0;
    b.maxValue = 0.9999;
    b.get = [](const RunConfig& c) { return json(c.optim.betas); };
    b.set = [](RunConfig& c, const json& v) {
        if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number())
            typeError("optim.betas", v, "a list of two numbers");
        c.optim.betas = {v[0].get<double>(), v[1].get<double>()};
    };
    t.add(b);
    t.add(
        "optim.eps", "AdamW epsilon", "", "AdamW epsilon",
        [](RunConfig& c) -> double& { return c.optim.eps; }, 1e-12, 1e-3);
    t.add("optim.fused", "Fused AdamW", "",
          "ATen's fused AdamW kernel, one pass over each parameter: auto = on cuda (the CPU "
          "keeps the per-parameter AdamW in LibTorch's operation order, and with it the "
          "documented CPU numbers); on = also on the CPU (fails where LibTorch lacks it, < 2.4); "
          "off = never. The two agree within fp32 rounding, not bit for bit",
          [](RunConfig& c) -> AutoSwitch& { return c.optim.fused; });
    muonFields(t);
    t.add("optim.quack", "QuacK (Q/K learning rates)", "",
          "QuacK (Anson & Aitchison 2025): each head's query rows step with the LR times "
          "rho / frob(W_K,h), its key rows with rho / frob(W_Q,h) (frob: the Frobenius norm of "
          "the head's rows; rho: the norm that slice has at init, model.init_std sqrt(rows x "
          "cols)), recomputed on the device every step, so that a step's change of the logits "
          "no longer grows with the weights. MLA: W_UQ's "
          "content rows against W_UK, its RoPE rows against the shared W_KR. With AdamW or "
          "Muon; refused with attention.sigma_reparam. Fixed for the run",
          [](RunConfig& c) -> bool& { return c.optim.quack; });
    t.add(
        "optim.grad_clip", "Gradient clip", "L2 norm",
        "clip the global gradient L2 norm to this; 0 = off",
        [](RunConfig& c) -> double& { return c.optim.gradClip; }, 0, 100);
    outputLogitFields(t);
    skipStepFields(t);
    t.add(
        "schedule.steps", "Training steps", "", "optimizer steps in the run",
        [](RunConfig& c) -> int64_t& { return c.schedule.steps; }, 1, 1e7);
    t.add(
        "schedule.warmup_steps", "Warm-up", "steps", "linear LR warm-up steps from 0",
        [](RunConfig& c) -> int64_t& { return c.schedule.warmupSteps; }, 0, 1e7);
    t.add("schedule.decay", "LR decay", "", "LR shape after warm-up (wsd = warmup-stable-decay)",
          [](RunConfig& c) -> LrDecay& { return c.schedule.decay; });
    t.add(
        "schedule.min_lr_ratio", "Final LR / peak", "", "final LR as a fraction of optim.lr",
        [](RunConfig& c) -> double& { return c.schedule.minLrRatio; }, 0, 1);
    t.add(
        "schedule.wsd_decay_fraction", "WSD decay share", "of steps",
        "wsd: share of the steps spent in the final decay",
        [](RunConfig& c) -> double& { return c.schedule.wsdDecayFraction; }, 0.01, 1);
}

void modelFields(FieldTable& t) {
    t.group = "Model";
    t.add(
        "model.d_model", "Model width", "", "residual width d_model",
        [](RunConfig& c) -> int64_t& { return c.model.dModel; }, 8, 8192);
    t.add(
        "model.n_layers", "Layers", "", "transformer blocks",
        [](RunConfig& c) -> int64_t& { return c.model.nLayers; }, 1, 96);
    t.add(
        "model.n_heads", "Attention heads", "", "attention heads; d_head = d_model / n_heads",
        [](RunConfig& c) -> int64_t& { return c.model.nHeads; }, 1, 128);
    t.add(
        "model.seq_len", "Context length", "bytes", "context length T",
        [](RunConfig& c) -> int64_t& { return c.model.seqLen; }, 2, 65536);
    t.add("model.rope", "Rotary positions (RoPE)", "",
          "rotary position embedding (off = learned absolute positions)",
          [](RunConfig& c) -> bool& { return c.model.rope; });
    t.add(
        "model.rope_base", "RoPE base", "", "RoPE frequency base",
        [](RunConfig& c) -> double& { return c.model.ropeBase; }, 2, 1e7);
    t.add(
        "model.mlp_ratio", "MLP width ratio", "× d_model", "MLP hidden width / d_model",
        [](RunConfig& c) -> int64_t& { return c.model.mlpRatio; }, 1, 16);
    t.add(
        "model.output_softcap", "Output softcap", "",
        "tanh cap on the LM-head logits (Gemma 2: 30); 0 = off",
        [](RunConfig& c) -> double& { return c.model.outputSoftcap; }, 0, 1000);
    t.add("model.tie_embeddings", "Tie embeddings", "",
          "share the token embedding with the LM head",
          [](RunConfig& c) -> bool& { return c.model.tieEmbeddings; });
    t.add(
        "model.init_std", "Init std", "",
        "std of the normal weight init (residual projections are scaled down)",
        [](RunConfig& c) -> double& { return c.model.initStd; }, 1e-4, 1);
}

void mlaFields(FieldTable& t) {
    t.add("attention.kind", "Attention", "",
          "mha (per-head keys and values) or mla: DeepSeek-V2 multi-head latent attention, "
          "which caches a latent c_t per token instead of full keys and values",
          [](RunConfig& c) -> AttentionKind& { return c.attention.kind; });
    t.add("attention.gate", "Output gate", "",
          "gated attention (Qiu et al. 2025, Qwen): each head's output times sigmoid(x W_g) before "
          "the output projection, x the block's normed input; headwise = one gate per head, "
          "elementwise = one per channel; mha and mla. The paper: no attention sink, no massive "
          "activations. Fixed for the run (no event switches it)",
          [](RunConfig& c) -> AttentionGate& { return c.attention.gate; });
    t.add("attention.sigma_reparam", "sigmaReparam", "",
          "sigmaReparam (Zhai et al. 2023): each weight matrix W used as gamma / sigma(W) * W, "
          "sigma(W) its spectral norm by one power-iteration step per training forward, gamma a "
          "learnable scalar (no weight decay) starting at sigma(W); attention = the attention's "
          "projections (q, k and v each their own sigma), all = those and the MLP's; never the "
          "embedding or the LM head. The paper: no attention entropy collapse. Not with QK-Clip. "
          "Fixed for the run",
          [](RunConfig& c) -> SigmaReparamScope& { return c.attention.sigmaReparam; });
    t.add(
        "attention.mla.d_c", "MLA latent width d_c", "",
        "mla: width of the latent c_t = RMSNorm(x W_DKV) that keys and values are expanded from",
        [](RunConfig& c) -> int64_t& { return c.attention.mla.dC; }, 1, 65536);
    t.add(
        "attention.mla.d_rope", "MLA RoPE width", "per head",
        "mla: width of the decoupled RoPE part of queries (per head) and of the one RoPE key "
        "all heads share; 0 only with model.rope off",
        [](RunConfig& c) -> int64_t& { return c.attention.mla.dRope; }, 0, 4096);
    t.add(
        "attention.mla.q_lora", "MLA query rank", "",
        "mla: queries through a low-rank latent of this width (DeepSeek-V2: 1536); 0 = full rank",
        [](RunConfig& c) -> int64_t& { return c.attention.mla.qLora; }, 0, 65536);
}

void attentionFields(FieldTable& t) {
    t.group = "Attention & QK-norm";
    t.add("attention.qk_norm", "QK-norm", "",
          "QK-norm variant: per-head RMS (no gain / learnable gain), per-head LayerNorm, L2 with "
          "a learnable scale g replacing s, or RMS over the whole projection (OLMo 2)",
          [](RunConfig& c) -> QkNormVariant& { return c.attention.qkNorm; });
    t.add("attention.qk_norm_on", "Normalise", "",
          "what is normalised: q and k, k only (light), or q, k and v",
          [](RunConfig& c) -> QkNormTarget& { return c.attention.qkNormOn; });
    t.add("attention.qk_norm_placement", "Norm before/after RoPE", "",
          "normalise before or after RoPE (a rotation: norms are kept either way)",
          [](RunConfig& c) -> QkNormPlacement& { return c.attention.qkNormPlacement; });
    t.add("attention.qk_gain_per_head", "Gain per head", "",
          "learnable QK gains per head (true) or shared by all heads (Qwen3)",
          [](RunConfig& c) -> bool& { return c.attention.qkGainPerHead; });
    FieldInfo s;
    s.key = "attention.scale";
    s.type = FieldType::Scale;
    s.label = "Logit scale s";
    s.help =
        "logit scale s: a number, or \"inv_sqrt_d\" for 1/sqrt(d_head) (1/sqrt(d_head + d_rope) "
        "under MLA)";
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
    t.add(s);
    mlaFields(t);
    t.group = "QK-Clip";
    t.add(
        "attention.qk_clip.tau", "QK-Clip threshold tau", "",
        "Kimi K2's QK-Clip: after an update, a head whose max scaled logit s*max(q.k) on the "
        "batch exceeds tau gets W_q and W_k scaled by sqrt(tau/S_max) each; 0 = off (Kimi: 100)",
        [](RunConfig& c) -> double& { return c.attention.qkClip.tau; }, 0, 1e6);
    t.add(
        "attention.qk_clip.every", "QK-Clip every", "steps",
        "clip after every N-th optimizer update (1 = every update)",
        [](RunConfig& c) -> int64_t& { return c.attention.qkClip.every; }, 1, 1e6);
    t.group = "Softcap";
    t.add("attention.softcap.kind", "Softcap", "",
          "cap on attention logits: C*tanh(x/C), or clamp(x, -C, C)",
          [](RunConfig& c) -> SoftcapKind& { return c.attention.softcap.kind; });
    t.add(
        "attention.softcap.c", "Cap width C", "",
        "cap width C (Gemma 2: 50; below ~" +
            std::to_string(static_cast<int>(kSoftcapFlattensBelow)) + " flattens attention)",
        [](RunConfig& c) -> double& { return c.attention.softcap.c; }, 0.1, 1e4);
}

void annealFields(FieldTable& t) {
    t.group = "Anneal";
    t.add(
        "anneal.qk_norm.start", "QK-norm anneal start", "of steps",
        "fraction of steps where alpha starts falling from 1 (1 = no anneal)",
        [](RunConfig& c) -> double& { return c.anneal.qkNorm.start; }, 0, 1);
    t.add(
        "anneal.qk_norm.end", "QK-norm anneal end", "of steps",
        "fraction of steps where alpha reaches exactly 0 (1 = at the last step)",
        [](RunConfig& c) -> double& { return c.anneal.qkNorm.end; }, 0, 1);
    t.add("anneal.qk_norm.shape", "Anneal curve", "",
          "alpha curve inside the window (hard = switch off at start)",
          [](RunConfig& c) -> AnnealShape& { return c.anneal.qkNorm.shape; });
    t.add("anneal.qk_norm.freeze_gain", "Freeze QK gains in the anneal", "",
          "freeze learnable QK gains during a QK-norm anneal (window or qk_anneal event), the "
          "guide's rule; false leaves them learnable, to show what the rule prevents",
          [](RunConfig& c) -> bool& { return c.anneal.qkNorm.freezeGain; });
    t.add(
        "anneal.softcap.start", "Softcap anneal start", "of steps",
        "fraction of steps where C starts moving to c_to (1 = no anneal)",
        [](RunConfig& c) -> double& { return c.anneal.softcap.start; }, 0, 1);
    t.add(
        "anneal.softcap.end", "Softcap anneal end", "of steps",
        "fraction of steps where C reaches exactly c_to (1 = at the last step)",
        [](RunConfig& c) -> double& { return c.anneal.softcap.end; }, 0, 1);
    t.add(
        "anneal.softcap.c_to", "Final cap width", "",
        "softcap C at the end of its anneal (1000 ~ off)",
        [](RunConfig& c) -> double& { return c.anneal.softcap.cTo; }, 0.1, 1e6);
}

void dataFields(FieldTable& t) {
    t.group = "Data & events";
    t.add("data.source", "Training text", "",
          "\"builtin\" (generated corpus shipped in the app) or a text file path",
          [](RunConfig& c) -> std::string& { return c.data.source; });
    t.add(
        "data.batch_size", "Batch size", "sequences", "sequences per step",
        [](RunConfig& c) -> int64_t& { return c.data.batchSize; }, 1, 4096);
    t.add(
        "data.val_fraction", "Validation share", "of text",
        "tail of the corpus held out for validation",
        [](RunConfig& c) -> double& { return c.data.valFraction; }, 0.01, 0.5);
    t.add("data.tokenizer", "Tokenizer", "",
          "bytes (every byte a token, vocabulary 256) or bpe (a byte-level BPE trained on the "
          "training split when the run starts; its merges go into checkpoints)",
          [](RunConfig& c) -> TokenizerKind& { return c.data.tokenizer; });
    t.add(
        "data.vocab_size", "BPE vocabulary", "tokens",
        "bpe: the vocabulary, 256 bytes + the merges learnt (read only with data.tokenizer = "
        "bpe; a text with fewer distinct pairs leaves the last ids unused)",
        [](RunConfig& c) -> int64_t& { return c.data.vocabSize; }, 257, 65536);
    t.add(
        "eval.every", "Validate every", "steps",
        "validation loss every N steps (0 = only at the end)",
        [](RunConfig& c) -> int64_t& { return c.eval.every; }, 0, 1e7);
    t.add(
        "eval.batches", "Validation batches", "", "batches per validation",
        [](RunConfig& c) -> int64_t& { return c.eval.batches; }, 1, 1000);
}

void probeFields(FieldTable& t) {
    t.group = "Probes";
    t.add(
        "probes.every", "Probe every", "steps",
        "record attention statistics every N steps (0 = off)",
        [](RunConfig& c) -> int64_t& { return c.probes.every; }, 0, 1e6);
    t.add(
        "probes.hist_bins", "Histogram bins", "", "raw-logit histogram bins",
        [](RunConfig& c) -> int64_t& { return c.probes.histBins; }, 1, 4096);
    t.add(
        "probes.hist_min", "Histogram from", "", "lower histogram edge (in hist_scale units)",
        [](RunConfig& c) -> double& { return c.probes.histMin; }, -1e6, 1e6);
    t.add(
        "probes.hist_max", "Histogram to", "", "upper histogram edge (in hist_scale units)",
        [](RunConfig& c) -> double& { return c.probes.histMax; }, -1e6, 1e6);
    t.add("probes.hist_scale", "Histogram scale", "",
          "bin raw logits linearly, or by sign(x)*log10(1+|x|) to see 10^6",
          [](RunConfig& c) -> HistScale& { return c.probes.histScale; });
    t.add(
        "probes.attn_map_every", "Attention map every", "steps",
        "store the softmax map of one sequence every N steps (0 = off); also at the first "
        "probe past the raw-max line and on both sides of every event",
        [](RunConfig& c) -> int64_t& { return c.probes.attnMapEvery; }, 0, 1e6);
    t.add(
        "spikes.window", "Spike window", "steps",
        "rolling window of the spike z-score (llm.c: 128)",
        [](RunConfig& c) -> int64_t& { return c.spikes.window; }, 2, 1e5);
    t.add(
        "spikes.z_threshold", "Spike threshold", "σ",
        "a loss/grad-norm this many sigmas above the window mean is a spike",
        [](RunConfig& c) -> double& { return c.spikes.zThreshold; }, 0.5, 100);
    t.add(
        "spikes.min_history", "Spike warm-up", "steps", "values seen before any spike verdict",
        [](RunConfig& c) -> int64_t& { return c.spikes.minHistory; }, 2, 1e5);
}

void runFields(FieldTable& t) {
    t.group = "Device";
    t.add(
        "run.seed", "Seed", "", "seed of init and data order",
        [](RunConfig& c) -> int64_t& { return c.run.seed; }, 0, 2147483647);
    t.add("run.device", "Device", "", "where to train",
          [](RunConfig& c) -> DeviceKind& { return c.run.device; });
    t.add("run.dtype", "Precision", "",
          "compute precision (master weights stay fp32; probes in fp32)",
          [](RunConfig& c) -> Precision& { return c.run.dtype; });
    t.add(
        "run.threads", "CPU threads", "", "CPU threads (0 = all cores)",
        [](RunConfig& c) -> int64_t& { return c.run.threads; }, 0, 256);
    t.add(
        "run.checkpoint_every", "Checkpoint every", "steps",
        "save a checkpoint every N steps (0 = only at stop/end)",
        [](RunConfig& c) -> int64_t& { return c.run.checkpointEvery; }, 0, 1e7);
    t.add(
        "run.checkpoint_seconds", "Rolling checkpoint every", "s",
        "keep one rolling checkpoint at least this often (wall time), so that a crash or kill "
        "costs at most this much training; 0 = off",
        [](RunConfig& c) -> double& { return c.run.checkpointSeconds; }, 0, 1e7);
    t.add("run.fused_attention", "Fused attention", "",
          "fused attention kernel on steps that need no explicit logits (no probe, no softcap); "
          "false = always the explicit path",
          [](RunConfig& c) -> bool& { return c.run.fusedAttention; });
    t.add("run.cuda_graphs", "CUDA graphs", "",
          "on cuda, record a whole training step (forward, backward, clip, AdamW) as a CUDA "
          "graph after a few steps and replay it; probe, event, eval and checkpoint steps run "
          "as usual, and a change of shapes or attention switches captures anew. auto = on "
          "cuda with deferred readback where the graph plugin loads; on = fail where it cannot",
          [](RunConfig& c) -> AutoSwitch& { return c.run.cudaGraphs; });
    t.add("run.readback", "Loss readback", "",
          "when loss and grad norm come back to the host: every_step, or deferred to "
          "probe/eval/checkpoint steps and ~0.5 s (no per-step GPU sync); auto = deferred on cuda",
          [](RunConfig& c) -> Readback& { return c.run.readback; });
    t.add(
        "run.max_memory", "Memory limit", "GiB",
        "memory the run may need, checked against an estimate before it starts; 0 = the "
        "machine's available memory (on cuda only a limit > 0 is checked: the GPU's memory is "
        "not the host's)",
        [](RunConfig& c) -> double& { return c.run.maxMemoryGiB; }, 0, 1e6);
}

std::vector<FieldInfo> buildFields() {
    FieldTable t;
    t.group = "Preset";
    t.add("why", "Why", "", "what this preset/run demonstrates",
          [](RunConfig& c) -> std::string& { return c.why; });
    optimizerFields(t);
    modelFields(t);
    attentionFields(t);
    annealFields(t);
    dataFields(t);
    probeFields(t);
    runFields(t);
    return t.fields;
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
