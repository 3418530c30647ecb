// qklab/util/choices.h — every enumerated setting of a run, and the one table of its names.
// Enums of stored records (run statuses, spike kinds, map reasons) have their Choices next to
// them in qklab/store/records.h.
//
// A setting such as the QK-norm variant is an enum everywhere in the code; its JSON/GUI/CLI
// spelling lives only in the Choices<E> table below, in declaration order. The config field
// registry, the event registry, the form's combo boxes and the docs all read these tables, so
// a new value is added in exactly two places next to each other: the enum and its name.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace qklab {

enum class QkNormVariant { None, Rms, RmsAffine, LayerNorm, L2Scale, WholeRms };
enum class QkNormTarget { QK, K, QKV };
enum class QkNormPlacement { BeforeRope, AfterRope };
enum class SoftcapKind { None, Tanh, Clamp };
enum class LrDecay { Constant, Linear, Cosine, Wsd };
enum class AnnealShape { Linear, Cosine, Hard };
enum class DeviceKind { Cpu, Cuda };
enum class Precision { Fp32, Bf16 };
enum class HistScale { Linear, Symlog };
enum class Readback { Auto, EveryStep, Deferred };
// A speed-up that changes the numbers within stated tolerances: auto = where this build and
// device have it.
enum class AutoSwitch { Auto, On, Off };
enum class AttentionKind { Mha, Mla };
// How decoding keeps past tokens: recompute everything (none), cache materialised keys and
// values (MHA's KV cache; MLA's naive cache of full normalised keys), or MLA's absorbed cache
// of the latent c_t plus one inverse-RMS scalar per token and KV group.
enum class DecodeCache { Auto, None, Materialised, Absorbed };

// The value types of registry entries (config fields, event parameters).
enum class FieldType { Float, Int, Bool, Choice, Text, FloatPair, Scale };

template <class E>
struct Choices;  // names: the JSON spelling of each value, in declaration order

template <>
struct Choices<QkNormVariant> {
    static constexpr std::array<const char*, 6> names{"none",      "rms",      "rms_affine",
                                                      "layernorm", "l2_scale", "whole_rms"};
};
template <>
struct Choices<QkNormTarget> {
    static constexpr std::array<const char*, 3> names{"qk", "k", "qkv"};
};
template <>
struct Choices<QkNormPlacement> {
    static constexpr std::array<const char*, 2> names{"before_rope", "after_rope"};
};
template <>
struct Choices<SoftcapKind> {
    static constexpr std::array<const char*, 3> names{"none", "tanh", "clamp"};
};
template <>
struct Choices<LrDecay> {
    static constexpr std::array<const char*, 4> names{"constant", "linear", "cosine", "wsd"};
};
template <>
struct Choices<AnnealShape> {
    static constexpr std::array<const char*, 3> names{"linear", "cosine", "hard"};
};
template <>
struct Choices<DeviceKind> {
    static constexpr std::array<const char*, 2> names{"cpu", "cuda"};
};
template <>
struct Choices<Precision> {
    static constexpr std::array<const char*, 2> names{"fp32", "bf16"};
};
template <>
struct Choices<HistScale> {
    static constexpr std::array<const char*, 2> names{"linear", "symlog"};
};
template <>
struct Choices<Readback> {
    static constexpr std::array<const char*, 3> names{"auto", "every_step", "deferred"};
};
// attention.gate: none, or a sigmoid gate on each head's output (Qwen's gated attention), one
// per head or one per channel.
enum class AttentionGate { None, Headwise, Elementwise };
template <>
struct Choices<AttentionGate> {
    static constexpr std::array<const char*, 3> names{"none", "headwise", "elementwise"};
};
// attention.sigma_reparam: which weight matrices are used as gamma / sigma(W) * W (sigmaReparam,
// Zhai et al. 2023): none, the attention's projections, or those and the MLP's.
enum class SigmaReparamScope { None, Attention, All };
template <>
struct Choices<SigmaReparamScope> {
    static constexpr std::array<const char*, 3> names{"none", "attention", "all"};
};
// optim.kind: AdamW on every parameter, or Muon (Moonlight's form) on the blocks' 2-D hidden
// matrices and AdamW on the rest.
enum class OptimKind { AdamW, Muon };
template <>
struct Choices<OptimKind> {
    static constexpr std::array<const char*, 2> names{"adamw", "muon"};
};
// optim.skip_step: no policy, OLMo-core's mean + k sigma rule on the loss and the grad norm, or
// a lower LR for a while after a forecast of an onset.
enum class SkipStepPolicy { Off, Sigma, Forecast };
template <>
struct Choices<SkipStepPolicy> {
    static constexpr std::array<const char*, 3> names{"off", "sigma", "forecast"};
};
// optim.output_centring (Stollenwerk et al. 2026, output embedding centring): none, mu_centring
// (the LM head's rows lose their mean mu after every update) or mu_loss (the loss adds
// optim.mu_loss x ||mu||^2).
enum class OutputCentring { None, MuCentring, MuLoss };
template <>
struct Choices<OutputCentring> {
    static constexpr std::array<const char*, 3> names{"none", "mu_centring", "mu_loss"};
};
// data.tokenizer: every byte a token (vocab 256), or a byte-level BPE of data.vocab_size ids
// trained on the corpus (qklab/config/tokenizer.h).
enum class TokenizerKind { Bytes, Bpe };
template <>
struct Choices<TokenizerKind> {
    static constexpr std::array<const char*, 2> names{"bytes", "bpe"};
};
template <>
struct Choices<AutoSwitch> {
    static constexpr std::array<const char*, 3> names{"auto", "on", "off"};
};
template <>
struct Choices<AttentionKind> {
    static constexpr std::array<const char*, 2> names{"mha", "mla"};
};
template <>
struct Choices<DecodeCache> {
    static constexpr std::array<const char*, 4> names{"auto", "none", "materialised", "absorbed"};
};

template <class E>
const char* nameOf(E value) {
    return Choices<E>::names.at(static_cast<size_t>(value));
}

// For an enum whose last value has no name (RunStatus::Unknown: a stored name this build does
// not know, never written): that value reads as "unknown".
template <class E>
const char* nameOrUnknown(E value) {
    const auto i = static_cast<size_t>(value);
    return i < Choices<E>::names.size() ? Choices<E>::names[i] : "unknown";
}

// What views show for a value, where Choices<E> also has `titles` (in the order of `names`).
template <class E>
const char* titleOf(E value) {
    const auto i = static_cast<size_t>(value);
    return i < Choices<E>::titles.size() ? Choices<E>::titles[i] : "unknown";
}

template <class E>
std::optional<E> parseChoice(const std::string& name) {
    const auto& names = Choices<E>::names;
    for (size_t i = 0; i < names.size(); ++i)
        if (name == names[i]) return static_cast<E>(i);
    return std::nullopt;
}

template <class E>
std::vector<std::string> choiceNames() {
    return {Choices<E>::names.begin(), Choices<E>::names.end()};
}

// "a | b | c", for messages and docs.
template <class E>
std::string choiceList() {
    std::string out;
    for (const char* n : Choices<E>::names) out += (out.empty() ? "" : " | ") + std::string(n);
    return out;
}

}  // namespace qklab
