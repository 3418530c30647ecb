// model.cpp — the transformer: embeddings, pre-RMSNorm blocks of attention (engine/attention.h)
// and a GELU MLP, final norm, LM head, cross-entropy with optional z-loss, mu-loss and output
// softcap; output embedding centring; incremental decoding and QK-Clip, layer by layer.
#include "model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <optional>
#include <utility>

namespace qklab {

namespace F = torch::nn::functional;

// Guarded across LibTorch 1.13 (Debian) and 2.4+, where a per-device API replaced
// set_enabled/set_cpu_enabled.
void setBf16Autocast(const torch::Device& device, bool on) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(device.type(), on);
    if (on) at::autocast::set_autocast_dtype(device.type(), at::kBFloat16);
#else
    if (device.is_cuda()) {
        at::autocast::set_enabled(on);
        if (on) at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    } else {
        at::autocast::set_cpu_enabled(on);
        if (on) at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    }
#endif
}

// ---- block -------------------------------------------------------------------------------

BlockImpl::BlockImpl(const RunConfig& c) {
    const int64_t C = c.model.dModel;
    // Both kinds register as "attn", so checkpoint names read the same.
    attn = register_module("attn", makeAttention(c));
    m_norm1 = register_parameter("norm1", torch::ones({C}));
    m_norm2 = register_parameter("norm2", torch::ones({C}));
    m_fc = register_module(
        "fc", torch::nn::Linear(torch::nn::LinearOptions(C, c.model.mlpRatio * C).bias(false)));
    m_out = register_module(
        "out", torch::nn::Linear(torch::nn::LinearOptions(c.model.mlpRatio * C, C).bias(false)));
    // Registered last, so that a run without sigmaReparam has the same weights as before it.
    if (c.attention.sigmaReparam == SigmaReparamScope::All) {
        m_fcSigma = register_module("fc_sigma", SpectralReparam(m_fc->weight));
        m_outSigma = register_module("out_sigma", SpectralReparam(m_out->weight));
    }
}

torch::Tensor BlockImpl::attentionInput(const torch::Tensor& x) {
    return rmsNorm(x, m_norm1);
}

torch::Tensor BlockImpl::mlp(const torch::Tensor& h) {
    const auto hidden = torch::gelu(reparamLinear(m_fc, m_fcSigma, rmsNorm(h, m_norm2)));
    return h + reparamLinear(m_out, m_outSigma, hidden);
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                 const torch::Tensor& sin, const torch::Tensor& mask,
                                 const AttentionSwitches& sw, AttentionCapture* capture) {
    const auto in = attentionInput(x);
    auto out = mlp(x + attn->forward(in, cos, sin, mask, sw, capture));
    if (capture) capture->hidden = out.detach();  // for the max-activation probe
    return out;
}

torch::Tensor BlockImpl::decode(const torch::Tensor& x, const torch::Tensor& cos,
                                const torch::Tensor& sin, const AttentionSwitches& sw,
                                LayerCache& cache, int64_t past, DecodeCache mode) {
    const auto in = attentionInput(x);
    return mlp(x + attn->decode(in, cos, sin, sw, cache, past, mode));
}

// ---- transformer -------------------------------------------------------------------------

namespace {

// Earlier versions seeded the global generator with run.seed and built the model from it: the
// modules' default init (LibTorch's, in registration order) drew first, then the GPT-2 init
// below. The model's own generator draws the same stream, so that a config trains exactly as
// it did before (every measured number in the docs and lessons came from that stream): the
// default draws are made again, with the same kernels and bounds, and then overwritten.
void replayDefaultInitDraws(torch::nn::Module& model, at::Generator& generator) {
    for (const auto& module : model.modules(/*include_self=*/false)) {
        if (auto* linear = module->as<torch::nn::Linear>()) {
            // torch::nn::init::kaiming_uniform_(weight, sqrt(5)), LinearImpl::reset_parameters.
            const double fanIn = static_cast<double>(linear->weight.size(1));
            const double gain = std::sqrt(2.0 / (1 + std::pow(std::sqrt(5.0), 2)));
            const double bound = std::sqrt(3.0) * (gain / std::sqrt(fanIn));
            linear->weight.uniform_(-bound, bound, generator);
        } else if (auto* embedding = module->as<torch::nn::Embedding>()) {
            embedding->weight.normal_(0.0, 1.0, generator);  // EmbeddingImpl::reset_parameters
        }
    }
}

}  // namespace

TransformerImpl::TransformerImpl(const RunConfig& c)
    : m_dModel(c.model.dModel),
      m_nHeads(c.model.nHeads),
      m_maxT(c.maxSeqLen()),
      m_outputSoftcap(c.model.outputSoftcap),
      m_zLoss(c.optim.zLoss),
      m_muLoss(c.optim.outputCentring == OutputCentring::MuLoss ? c.optim.muLoss : 0.0) {
    const int64_t C = m_dModel, V = c.vocabSize();
    const int64_t D = c.attention.kind == AttentionKind::Mla ? c.attention.mla.dRope : c.dHead();
    m_tokens = register_module("tokens", torch::nn::Embedding(V, C));
    if (!c.model.rope) m_positions = register_module("positions", torch::nn::Embedding(m_maxT, C));
    for (int64_t i = 0; i < c.model.nLayers; ++i)
        m_blocks.push_back(register_module("block" + std::to_string(i), Block(c)));
    m_finalNorm = register_parameter("final_norm", torch::ones({C}));
    if (!c.model.tieEmbeddings)
        m_head =
            register_module("head", torch::nn::Linear(torch::nn::LinearOptions(C, V).bias(false)));

    // Rotary tables for the longest context any event asks for.
    auto invFreq = torch::pow(c.model.ropeBase, -torch::arange(0, D, 2, torch::kFloat64) / D);
    auto t = torch::arange(m_maxT, torch::kFloat64);
    auto freqs = torch::outer(t, invFreq);      // (maxT, D/2)
    auto emb = torch::cat({freqs, freqs}, -1);  // (maxT, D)
    m_cos = register_buffer("rope_cos", emb.cos().to(torch::kFloat32));
    m_sin = register_buffer("rope_sin", emb.sin().to(torch::kFloat32));

    // GPT-2 style init; residual projections scaled by 1/sqrt(2 * n_layers). The weights come
    // from a generator of their own, seeded with run.seed, so that they are a function of the
    // config alone: LibTorch's global generator is shared by every thread, and the app's BLAS
    // check drawing from it while a lesson's run was being built gave the run other weights
    // in half of the launches. (The modules' default init above draws from the global
    // generator, but every weight it draws is overwritten here.)
    torch::NoGradGuard noGrad;
    auto generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(c.run.seed));
    replayDefaultInitDraws(*this, generator);
    const double std = c.model.initStd;
    const double residualStd = std / std::sqrt(2.0 * c.model.nLayers);
    for (auto& item : named_parameters()) {
        const std::string& name = item.key();
        auto& p = item.value();
        if (p.dim() < 2) continue;  // norms and gains keep their init
        if (name.find("gain") != std::string::npos) continue;
        const bool residual =
            name.find("attn.proj") != std::string::npos || name.find(".out.") != std::string::npos;
        p.normal_(0.0, residual ? residualStd : std, generator);
    }
    // sigmaReparam's u and v come last of all, and only with it on: runs without it draw
    // exactly the weights they drew before it existed.
    for (const auto& module : modules(/*include_self=*/false))
        if (auto* sigma = module->as<SpectralReparamImpl>()) sigma->initialise(generator);
}

torch::Tensor TransformerImpl::causalMask(int64_t T, const torch::TensorOptions& options) {
    for (const auto& mask : m_masks)
        if (mask.size(0) == T && mask.device() == options.device() &&
            mask.dtype() == options.dtype())
            return mask;
    m_masks.push_back(
        torch::full({T, T}, -std::numeric_limits<float>::infinity(), options).triu(1));
    return m_masks.back();
}

torch::Tensor TransformerImpl::embed(const torch::Tensor& tokens, int64_t past) {
    auto x = m_tokens(tokens);  // (B, T, C)
    if (m_positions)
        x = x + m_positions(torch::arange(past, past + tokens.size(1), tokens.options()));
    return x;
}

torch::Tensor TransformerImpl::head(const torch::Tensor& x) {
    auto normed = rmsNorm(x, m_finalNorm);
    auto logits = m_head ? m_head(normed) : torch::linear(normed, m_tokens->weight);  // (B,T,V)
    if (m_outputSoftcap > 0) logits = torch::tanh(logits / m_outputSoftcap) * m_outputSoftcap;
    return logits;
}

torch::Tensor TransformerImpl::logits(const torch::Tensor& tokens, const AttentionSwitches& sw,
                                      std::vector<AttentionCapture>* captures) {
    const int64_t T = tokens.size(1);
    auto x = embed(tokens, 0);
    auto cos = m_cos.narrow(0, 0, T), sin = m_sin.narrow(0, 0, T);
    const auto& mask = causalMask(T, x.options());
    if (captures) captures->assign(m_blocks.size(), AttentionCapture{});
    for (size_t i = 0; i < m_blocks.size(); ++i)
        x = m_blocks[i]->forward(x, cos, sin, mask, sw, captures ? &(*captures)[i] : nullptr);
    return head(x);
}

ForwardResult TransformerImpl::forward(const torch::Tensor& tokens, const torch::Tensor& targets,
                                       const AttentionSwitches& sw,
                                       std::vector<AttentionCapture>* captures) {
    auto logitsOut = logits(tokens, sw, captures);
    auto flat = logitsOut.reshape({-1, logitsOut.size(-1)}).to(torch::kFloat32);
    const auto target = targets.reshape({-1});
    // F::cross_entropy is log_softmax then nll_loss (ATen's cross_entropy_loss, class targets,
    // no smoothing): spelled out here, the same operations, so that log Z comes from the
    // log-probabilities the loss computes anyway instead of a second pass over the logits.
    const auto logProbs = torch::log_softmax(flat, 1);
    ForwardResult r;
    r.ceLoss = F::nll_loss(logProbs, target);
    r.loss = r.ceLoss;
    torch::Tensor logZ;
    if (m_zLoss > 0) {
        logZ = torch::logsumexp(flat, -1);  // the z-loss's own, as it always was
        r.loss = r.ceLoss + m_zLoss * logZ.pow(2).mean();
    } else {
        torch::NoGradGuard noGrad;  // log Z = logit - log p, read at each token's target
        const auto at = target.unsqueeze(1);
        logZ = (flat.detach().gather(1, at) - logProbs.detach().gather(1, at)).squeeze(1);
    }
    // mu, the output embedding's mean row, sets the mean output logit mu . h (Stollenwerk et
    // al. 2026). Elementwise, so autocast leaves it in the weight's fp32; measured every step,
    // and with gradient only for the mu-loss (which adds after the other terms, so a run
    // without it keeps its loss bit for bit). Without it no autograd node is built for a
    // statistic nothing differentiates.
    torch::Tensor muSquared;
    {
        std::optional<torch::NoGradGuard> measuredOnly;
        if (m_muLoss <= 0) measuredOnly.emplace();
        const auto mu = outputEmbedding().mean(0);
        muSquared = (mu * mu).sum();
    }
    if (m_muLoss > 0) r.loss = r.loss + m_muLoss * muSquared;
    r.outputLogitStats = outputLogitStats(flat, logZ, muSquared);
    return r;
}

torch::Tensor outputLogitStats(const torch::Tensor& logits, const torch::Tensor& logZ,
                               const torch::Tensor& muSquared) {
    torch::NoGradGuard noGrad;
    const auto z = logZ.detach();
    return torch::stack({z.mean(), z.max(), logits.detach().max(), z.pow(2).mean(),
                         muSquared.detach().to(torch::kFloat32).sqrt()});
}

torch::Tensor TransformerImpl::outputEmbedding() {
    return m_head ? m_head->weight : m_tokens->weight;
}

void TransformerImpl::centreOutputEmbedding() {
    torch::NoGradGuard noGrad;
    auto e = outputEmbedding();
    e.sub_(e.mean(0, /*keepdim=*/true));
}

DecodeState TransformerImpl::newDecodeState(DecodeCache mode, int64_t batch, int64_t capacity,
                                            const AttentionSwitches& sw) {
    TORCH_CHECK(capacity <= m_maxT, "decode capacity ", capacity, " exceeds the model's ", m_maxT);
    DecodeState st;
    st.mode = mode;
    st.capacity = capacity;
    st.layers.resize(m_blocks.size());
    const auto options = m_finalNorm.options().requires_grad(false);
    for (size_t i = 0; i < m_blocks.size(); ++i)
        m_blocks[i]->attn->allocateCache(st.layers[i], batch, capacity, mode, sw, options);
    return st;
}

torch::Tensor TransformerImpl::decode(const torch::Tensor& tokens, DecodeState& state,
                                      const AttentionSwitches& sw) {
    torch::NoGradGuard noGrad;
    const int64_t n = tokens.size(1), past = state.length;
    TORCH_CHECK(past + n <= state.capacity, "decode cache full: ", past, " + ", n, " > ",
                state.capacity);
    auto x = embed(tokens, past);
    auto cos = m_cos.narrow(0, past, n), sin = m_sin.narrow(0, past, n);
    for (size_t i = 0; i < m_blocks.size(); ++i)
        x = m_blocks[i]->decode(x, cos, sin, sw, state.layers[i], past, state.mode);
    state.length = past + n;
    return head(x);
}

std::vector<QkClip> TransformerImpl::qkClip(const torch::Tensor& tokens,
                                            const AttentionSwitches& sw, double tau, int64_t step) {
    torch::NoGradGuard noGrad;
    std::vector<QkClip> clips;
    const int64_t T = tokens.size(1);
    auto x = embed(tokens, 0);
    auto cos = m_cos.narrow(0, 0, T), sin = m_sin.narrow(0, 0, T);
    const auto& mask = causalMask(T, x.options());
    AttentionSwitches measure = sw;
    measure.fused = false;
    for (size_t i = 0; i < m_blocks.size(); ++i) {
        Block& b = m_blocks[i];
        const auto in = b->attentionInput(x);
        auto sMax = b->attn->maxLogitPerHead(in, cos, sin, measure).to(torch::kFloat64).cpu();
        for (int64_t h = 0; h < sMax.size(0); ++h) {
            const double s = sMax[h].item<double>();
            if (!(s > tau) || !std::isfinite(s)) continue;
            const double factor = std::sqrt(tau / s);
            b->attn->clipHead(h, factor);
            clips.push_back(
                QkClip{step, static_cast<int32_t>(i), static_cast<int32_t>(h), s, factor});
        }
        // The next layer is measured on what this (clipped) layer now outputs.
        x = b->forward(x, cos, sin, mask, measure, nullptr);
    }
    return clips;
}

std::vector<torch::Tensor> TransformerImpl::qkGains() {
    std::vector<torch::Tensor> out;
    for (auto& b : m_blocks)
        for (auto& g : b->attn->qkGains()) out.push_back(g);
    return out;
}

std::vector<QuackPair> TransformerImpl::quackPairs(double initStd) {
    std::vector<QuackPair> out;
    for (auto& b : m_blocks)
        for (auto& p : b->attn->quackPairs(initStd)) out.push_back(std::move(p));
    return out;
}

std::vector<torch::Tensor> TransformerImpl::decayedParameters() {
    std::vector<torch::Tensor> out;
    for (auto& item : named_parameters())
        if (item.value().dim() >= 2 && item.key().find("gain") == std::string::npos)
            out.push_back(item.value());
    return out;
}

std::vector<torch::Tensor> TransformerImpl::undecayedParameters() {
    std::vector<torch::Tensor> out;
    for (auto& item : named_parameters())
        if (item.value().dim() < 2 || item.key().find("gain") != std::string::npos)
            out.push_back(item.value());
    return out;
}

TransformerImpl::MuonSplit TransformerImpl::muonSplit() {
    MuonSplit out;
    for (auto& item : named_parameters()) {
        const auto& name = item.key();
        const auto& p = item.value();
        if (p.dim() < 2 || name.find("gain") != std::string::npos) continue;  // AdamW, no decay
        if (name.rfind("block", 0) != 0) {  // token and position embeddings, LM head
            out.adamw.push_back(p);
            continue;
        }
        out.names.push_back(name);
        out.hidden.push_back(p);
        // MHA's fused qkv weight (3C, C): its q, k and v row blocks are orthogonalised as
        // three matrices, as if the projections were separate.
        const std::string qkv = ".attn.qkv.weight";
        const bool fusedQkv = name.size() > qkv.size() &&
                              name.compare(name.size() - qkv.size(), qkv.size(), qkv) == 0;
        out.rowBlocks.push_back(fusedQkv ? 3 : 1);
    }
    return out;
}

int64_t TransformerImpl::parameterCount() {
    int64_t n = 0;
    for (auto& p : parameters()) n += p.numel();
    return n;
}

}  // namespace qklab
