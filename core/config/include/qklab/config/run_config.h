// qklab/config/run_config.h — the one aggregate that describes a training run.
//
// Defaults live in the structs (a small byte-level model that trains in about a minute on a
// laptop CPU). JSON in and out goes through a field registry (configFields()) so that the
// JSON reader, the CLI's `--set dotted.key=value`, the GUI form and the validator all agree
// on the same dotted keys. Enumerated settings are enums (qklab/util/choices.h), converted from
// their JSON names once, when the config is read. Timed events have a registry of their own
// (qklab/config/events.h).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "qklab/config/events.h"
#include "qklab/util/choices.h"

namespace qklab {

struct OptimConfig {
    double lr = 3e-3;          // peak learning rate
    double weightDecay = 0.1;  // decoupled (AdamW) decay, matrices only
    std::vector<double> betas{0.9, 0.95};
    double eps = 1e-8;
    double gradClip = 1.0;  // global L2-norm clip; 0 = off
    double zLoss = 0.0;     // coefficient of log(Z)^2 (Wortsman et al.: 1e-4)
    // Output embedding centring (Stollenwerk et al. 2026): mu = the mean row of the LM head's
    // weight (the token embedding when tied), which sets the mean output logit mu . h.
    OutputCentring outputCentring = OutputCentring::None;
    double muLoss = 0.1;  // mu_loss: coefficient of ||mu||^2 (the authors' runs: 0.1)
    AutoSwitch fused = AutoSwitch::Auto;  // ATen's fused AdamW kernel; auto = on cuda
    // Muon (Jordan et al. 2024; Moonlight, Liu et al. 2025) on the hidden matrices: Nesterov
    // momentum, then muonNsSteps Newton-Schulz iterations; optim.lr and weight decay carry over
    // through Moonlight's 0.2 sqrt(max(A, B)) update RMS matching.
    OptimKind kind = OptimKind::AdamW;
    double muonMomentum = 0.95;
    int64_t muonNsSteps = 5;
    // QuacK (Anson & Aitchison, arXiv 2511.21377): per-head LR multipliers on the query and
    // key weights, the query's inversely proportional to its key's norm and vice versa
    // (engine/quack.h says which norm, which constant and what they are under MLA).
    bool quack = false;
    // Skip-step policies (issue 40): sigma skips a step's update when its loss or grad norm is
    // above mean + skipSigma x std of the previous skipWindow steps (OLMo-core: 128, 6);
    // forecast multiplies the LR by forecastLrFactor for forecastLrSteps steps after a
    // forecast of an onset.
    SkipStepPolicy skipStep = SkipStepPolicy::Off;
    int64_t skipWindow = 128;
    double skipSigma = 6.0;
    double forecastLrFactor = 0.3;
    int64_t forecastLrSteps = 50;
};

struct ScheduleConfig {
    int64_t steps = 600;       // optimizer steps in the run
    int64_t warmupSteps = 30;  // linear warm-up from 0 to optim.lr
    LrDecay decay = LrDecay::Cosine;
    double minLrRatio = 0.1;        // floor as a fraction of optim.lr
    double wsdDecayFraction = 0.2;  // wsd: share of steps spent in the final decay
};

struct ModelConfig {
    int64_t dModel = 128;
    int64_t nLayers = 2;
    int64_t nHeads = 4;    // d_head = d_model / n_heads
    int64_t seqLen = 128;  // context length T
    bool rope = true;      // rotary positions; false = learned absolute
    double ropeBase = 10000.0;
    int64_t mlpRatio = 4;        // MLP hidden = mlp_ratio * d_model
    double outputSoftcap = 0.0;  // tanh cap on LM logits; 0 = off (Gemma 2: 30)
    bool tieEmbeddings = false;
    double initStd = 0.02;
};

// A softcap tighter than this flattens attention (the guide, §2; attention.softcap.c's help in
// docs/CONFIG.md): its cost lasts, no transient (the spike diagnosis says so).
constexpr double kSoftcapFlattensBelow = 20.0;

struct SoftcapConfig {
    SoftcapKind kind = SoftcapKind::None;
    double c = 50.0;  // cap width C (Gemma 2: 50)
};

// DeepSeek-V2's multi-head latent attention (attention.kind = mla): a latent
// c_t = RMSNorm(x W_DKV) of width d_c per token, per-head content keys k_C = c_t W_UK and values
// v = c_t W_UV (d_head each), a RoPE key k_R = RoPE(x W_KR) of width d_rope shared by all
// heads, and queries split into a content part (d_head) and a RoPE part (d_rope) per head.
struct MlaConfig {
    int64_t dC = 64;     // latent width d_c (what the absorbed decode caches per token)
    int64_t dRope = 16;  // decoupled RoPE width per head (0 only without RoPE)
    int64_t qLora = 0;   // query low-rank width; 0 = full-rank queries
};

// Kimi K2's QK-Clip (MuonClip): after the optimizer update, a head whose max scaled logit on
// the step's batch exceeds tau gets its query and key weights scaled by sqrt(tau / S_max) each.
struct QkClipConfig {
    double tau = 0;     // 0 = off (Kimi K2: 100)
    int64_t every = 1;  // clip after every N-th optimizer step
};

struct AttentionConfig {
    AttentionKind kind = AttentionKind::Mha;
    AttentionGate gate = AttentionGate::None;                  // sigmoid gate on each head's output
    SigmaReparamScope sigmaReparam = SigmaReparamScope::None;  // sigmaReparam's matrices
    MlaConfig mla;
    QkClipConfig qkClip;
    QkNormVariant qkNorm = QkNormVariant::None;
    QkNormTarget qkNormOn = QkNormTarget::QK;
    QkNormPlacement qkNormPlacement = QkNormPlacement::BeforeRope;
    bool qkGainPerHead = false;   // learnable gains per head (true) or shared (Qwen3)
    std::optional<double> scale;  // logit scale s; empty = 1/sqrt(d_head) ("inv_sqrt_d")
    SoftcapConfig softcap;
};

// Windows are fractions f = step / schedule.steps; start = end = 1 means "no anneal".
struct QkNormAnneal {
    double start = 1.0;
    double end = 1.0;
    AnnealShape shape = AnnealShape::Linear;
    // Learnable QK gains freeze inside the window (the guide's rule); false leaves them
    // learnable, to show what the rule prevents.
    bool freezeGain = true;
};

struct SoftcapAnneal {
    double start = 1.0;
    double end = 1.0;
    double cTo = 1000.0;  // C reached at the end (1000 ~ off)
};

struct AnnealConfig {
    QkNormAnneal qkNorm;
    SoftcapAnneal softcap;
};

struct DataConfig {
    std::string source = "builtin";  // "builtin" or a path to a UTF-8/byte text file
    int64_t batchSize = 16;
    double valFraction = 0.1;  // tail of the corpus held out for validation
    TokenizerKind tokenizer = TokenizerKind::Bytes;
    int64_t vocabSize = 4096;  // with tokenizer = bpe: the model's vocabulary, 256 bytes + merges
};

struct EvalConfig {
    int64_t every = 100;  // validation loss every N steps; 0 = only at the end
    int64_t batches = 4;
};

struct RunSettings {
    int64_t seed = 1337;
    DeviceKind device = DeviceKind::Cpu;
    Precision dtype = Precision::Fp32;         // bf16: autocast matmuls, fp32 master weights
    int64_t threads = 0;                       // intra-op threads; 0 = all cores
    int64_t checkpointEvery = 0;               // 0 = checkpoint only when stopped or finished
    double checkpointSeconds = 60;             // rolling checkpoint at least this often; 0 = off
    bool fusedAttention = true;                // fused kernel where no explicit logits are needed
    AutoSwitch cudaGraphs = AutoSwitch::Auto;  // replay training steps from a CUDA graph
    Readback readback = Readback::Auto;        // when loss/grad norm are read back to the host
    double maxMemoryGiB = 0;                   // memory a run may need; 0 = host's available memory
};

struct ProbeConfig {
    int64_t every = 10;  // probe attention every N steps; 0 = off
    int64_t histBins = 128;
    double histMin = -64.0;  // histogram range of raw logits (after hist_scale)
    double histMax = 64.0;
    HistScale histScale = HistScale::Linear;  // symlog = sign(x)*log10(1+|x|)
    int64_t attnMapEvery = 0;  // store one softmax map per layer/head every N steps; 0 = off
};

struct SpikeConfig {
    int64_t window = 64;      // rolling window of the z-score (llm.c uses 128)
    double zThreshold = 5.0;  // a value more than this many sigmas above the mean
    int64_t minHistory = 20;  // no verdict before this many samples
};

struct RunConfig {
    std::string why;  // free text: what this preset/run demonstrates
    OptimConfig optim;
    ScheduleConfig schedule;
    ModelConfig model;
    AttentionConfig attention;
    AnnealConfig anneal;
    DataConfig data;
    EvalConfig eval;
    RunSettings run;
    ProbeConfig probes;
    SpikeConfig spikes;
    std::vector<Event> events;

    int64_t dHead() const { return model.dModel / model.nHeads; }
    // Rows of the token embedding and the LM head: 256 bytes, or data.vocab_size with a BPE.
    int64_t vocabSize() const {
        return data.tokenizer == TokenizerKind::Bytes ? 256 : data.vocabSize;
    }
    // Width of the vectors a logit is the dot product of: d_head, plus d_rope under MLA.
    int64_t dQk() const;
    double logitScale() const;  // attention.scale or 1/sqrt(dQk())
    int64_t maxSeqLen() const;  // over model.seq_len and context_length events
};

// ---- the field registry -------------------------------------------------------------------

struct FieldInfo {
    std::string key;  // dotted key, e.g. "optim.lr"
    FieldType type;
    std::string group;                  // GUI group, e.g. "Optimizer & LR schedule"
    std::string label;                  // short human name for the form, e.g. "Peak LR"
    std::string unit;                   // e.g. "steps", "tokens"; empty = none
    std::string help;                   // one line: what it means
    std::vector<std::string> choices;   // for Choice
    double minValue = 0, maxValue = 0;  // advisory range for GUI widgets (Float/Int)
    std::function<nlohmann::json(const RunConfig&)> get;
    std::function<void(RunConfig&, const nlohmann::json&)> set;  // throws Error naming the key
};

const std::vector<FieldInfo>& configFields();
const FieldInfo* findField(const std::string& dottedKey);

// Parse a JSON object (defaults for absent keys). Unknown keys, wrong types and bad values
// throw Error{InvalidConfig} naming the dotted key and the value. With checkValues = false only
// keys and types are checked (for a preset that `--set` overrides will complete; call
// validate() afterwards).
RunConfig configFromJson(const nlohmann::json& j, bool checkValues = true);
RunConfig configFromJsonText(const std::string& text, const std::string& origin,
                             bool checkValues = true);
RunConfig loadPreset(const std::string& path, bool checkValues = true);
nlohmann::json configToJson(const RunConfig& c);
// A preset of `c`: only the keys whose value differs from RunConfig{} (nested sections compared
// key by key, nanoGPT's override idea), plus "why". What "Save as preset…" and `recommend`
// write.
nlohmann::json presetJson(const RunConfig& c);

// Apply `dotted.key=value`; value is parsed as JSON when it parses, else taken as a string.
void applyOverride(RunConfig& c, const std::string& assignment);

// Cross-field validation; throws Error{InvalidConfig} on the first problem found.
void validate(const RunConfig& c);
// All problems at once (for the GUI's inline validation); empty = valid.
std::vector<std::string> validationProblems(const RunConfig& c);
// Legal but inadvisable combinations, per the domain brief (e.g. annealing both fuses at once).
std::vector<std::string> configWarnings(const RunConfig& c);

}  // namespace qklab
