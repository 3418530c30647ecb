// model.cpp — the transformer: embeddings, pre-RMSNorm blocks with explicit causal attention
// (projection, QK-norm variant with anneal, RoPE, scale, softcap, mask, softmax), GELU MLP,
// final norm, LM head, cross-entropy with optional z-loss and output softcap.
#include "engine/model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <cmath>

#include "qklab/error.h"

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

bool fusedAttentionPossible(const AttentionSwitches& sw, bool probing) {
    return kHaveFusedAttention && !probing && sw.softcap == SoftcapKind::None;
}

torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
    return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight;
}

AttentionSwitches attentionSwitches(const RunConfig& c, const StepSettings& s) {
    AttentionSwitches sw;
    sw.qkNorm = s.qkNorm;
    sw.normOn = c.attention.qkNormOn;
    sw.normAfterRope = c.attention.qkNormPlacement == QkNormPlacement::AfterRope;
    sw.alpha = s.alpha;
    sw.scale = c.logitScale();
    sw.softcap = s.softcapKind;
    sw.softcapC = s.softcapC;
    return sw;
}

torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos,
                        const torch::Tensor& sin) {
    const int64_t half = x.size(-1) / 2;
    auto x1 = x.narrow(-1, 0, half);
    auto x2 = x.narrow(-1, half, half);
    return x * cos + torch::cat({-x2, x1}, -1) * sin;
}

torch::Tensor mixNormed(const torch::Tensor& normed, const torch::Tensor& raw, double alpha) {
    if (alpha >= 1.0) return normed;
    return normed * alpha + raw * (1.0 - alpha);
}

torch::Tensor qkNormalize(const torch::Tensor& x, QkNormVariant kind, const torch::Tensor& gain,
                          const torch::Tensor& wholeGain) {
    const int64_t H = x.size(1), D = x.size(-1);
    const int64_t groups = gain.defined() ? gain.size(0) : 1;
    switch (kind) {
        case QkNormVariant::Rms:
            return x * torch::rsqrt(x.pow(2).mean(-1, true) + kQkNormEps);
        case QkNormVariant::RmsAffine:
            return x * torch::rsqrt(x.pow(2).mean(-1, true) + kQkNormEps) *
                   gain.view({1, groups, 1, D});
        case QkNormVariant::LayerNorm:
            return torch::layer_norm(x, {D}, {}, {}, 1e-5) * gain.view({1, groups, 1, D});
        case QkNormVariant::L2Scale:
            return F::normalize(x, F::NormalizeFuncOptions().dim(-1).eps(kQkNormEps));
        case QkNormVariant::WholeRms:  // over the whole projection (all heads at once), OLMo 2
            return x * torch::rsqrt(x.pow(2).mean({1, 3}, true) + kQkNormEps) *
                   wholeGain.view({1, H, 1, D});
        case QkNormVariant::None:
            break;
    }
    return x;
}

torch::Tensor decodeMask(int64_t past, int64_t n, const torch::TensorOptions& options) {
    // Query i (position past + i) sees keys 0 .. past + i.
    return torch::full({n, past + n}, -std::numeric_limits<float>::infinity(), options)
        .triu(past + 1);
}

torch::Tensor logitScaleTensor(const AttentionSwitches& sw, const torch::Tensor& l2Scale) {
    const int64_t H = l2Scale.size(0);
    if (sw.qkNorm == QkNormVariant::L2Scale && sw.alpha > 0.0)
        // g replaces s; during an anneal it is interpolated with the vectors so that alpha = 0
        // is exactly the raw path with the fixed scale s.
        return (l2Scale * sw.alpha + sw.scale * (1.0 - sw.alpha)).view({1, H, 1, 1});
    return torch::full({1, H, 1, 1}, sw.scale, l2Scale.options());
}

torch::Tensor softcapLogits(const torch::Tensor& raw, const AttentionSwitches& sw) {
    if (sw.softcap == SoftcapKind::Tanh) return torch::tanh(raw / sw.softcapC) * sw.softcapC;
    if (sw.softcap == SoftcapKind::Clamp) return raw.clamp(-sw.softcapC, sw.softcapC);
    return raw;
}

torch::Tensor maxCausalLogitPerHead(const torch::Tensor& raw) {
    const int64_t T = raw.size(-1);
    auto keep = torch::ones({T, T}, raw.options().dtype(torch::kBool)).tril();
    auto masked = raw.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
    return masked.amax({0, 2, 3});  // (H)
}

namespace {

// softmax(q k^T + causal mask) v through the fused kernel; q carries the logit scale already.
torch::Tensor fusedCausalAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v) {
#ifdef QKLAB_HAVE_FUSED_ATTENTION
    return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                            /*is_causal=*/true, /*scale=*/1.0);
#else
    (void)k;
    (void)v;
    TORCH_CHECK(false, "fused attention needs LibTorch 2.1 or newer");
    return q;
#endif
}

}  // namespace

torch::Tensor attendCausal(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const torch::Tensor& mask, const AttentionSwitches& sw,
                           const torch::Tensor& l2Scale, AttentionCapture* capture) {
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), Dv = v.size(3);
    // The scale goes on q (B,H,T,D) rather than on the (B,H,T,T) logits: same math, less work.
    auto qs = q * logitScaleTensor(sw, l2Scale);
    if (sw.fused && !capture && fusedAttentionPossible(sw, false))
        return fusedCausalAttention(qs, k, v);  // (B, H, T, Dv)
    auto q3 = qs.reshape({B * H, T, D});
    auto kT = k.reshape({B * H, T, D}).transpose(1, 2);  // (B*H, D, T)
    torch::Tensor att;                                   // (B*H, T, T) masked logits fed to softmax
    if (sw.softcap == SoftcapKind::None && !capture) {
        att = torch::baddbmm(mask, q3, kT);  // raw + mask in one kernel
    } else {
        auto raw = torch::bmm(q3, kT);
        auto capped = softcapLogits(raw, sw);
        att = capped + mask;
        if (capture) {
            capture->raw = raw.detach().view({B, H, T, T});
            capture->capped = capped.detach().view({B, H, T, T});
        }
    }
    auto probs = torch::softmax(att, -1);
    if (capture) capture->probs = probs.detach().view({B, H, T, T});
    return torch::bmm(probs, v.reshape({B * H, T, Dv})).view({B, H, T, Dv});
}

// ---- attention ---------------------------------------------------------------------------

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const RunConfig& c)
    : m_nHeads(c.model.nHeads), m_dHead(c.dHead()), m_rope(c.model.rope) {
    const int64_t C = c.model.dModel;
    m_qkv =
        register_module("qkv", torch::nn::Linear(torch::nn::LinearOptions(C, 3 * C).bias(false)));
    m_proj = register_module("proj", torch::nn::Linear(torch::nn::LinearOptions(C, C).bias(false)));
    const int64_t groups = c.attention.qkGainPerHead ? m_nHeads : 1;
    // All QK gains exist whatever the variant, so an intervention can switch variants mid-run;
    // an unused gain gets no gradient and AdamW leaves it alone.
    m_qGain = register_parameter("q_gain", torch::ones({groups, m_dHead}));
    m_kGain = register_parameter("k_gain", torch::ones({groups, m_dHead}));
    m_wholeQGain = register_parameter("whole_q_gain", torch::ones({C}));
    m_wholeKGain = register_parameter("whole_k_gain", torch::ones({C}));
    // Henry et al. 2020 initialise the learnable scale to log2(T^2 - T).
    const double T = static_cast<double>(c.model.seqLen);
    m_l2Scale = register_parameter("l2_scale", torch::full({m_nHeads}, std::log2(T * T - T)));
}

std::vector<torch::Tensor> CausalSelfAttentionImpl::qkGains() {
    return {m_qGain, m_kGain, m_wholeQGain, m_wholeKGain, m_l2Scale};
}

QkvProjection CausalSelfAttentionImpl::project(const torch::Tensor& x, const torch::Tensor& cos,
                                               const torch::Tensor& sin,
                                               const AttentionSwitches& sw) {
    const int64_t B = x.size(0), T = x.size(1), H = m_nHeads, D = m_dHead;
    auto qkv = m_qkv(x).view({B, T, 3, H, D}).permute({2, 0, 3, 1, 4});  // (3, B, H, T, D)
    QkvProjection p{qkv[0], qkv[1], qkv[2], qkv[0], qkv[1]};
    const bool norming = sw.qkNorm != QkNormVariant::None && sw.alpha > 0.0;
    auto applyNorm = [&]() {
        if (!norming) return;
        if (sw.normOn != QkNormTarget::K)
            p.q = mixNormed(qkNormalize(p.q, sw.qkNorm, m_qGain, m_wholeQGain), p.q, sw.alpha);
        p.k = mixNormed(qkNormalize(p.k, sw.qkNorm, m_kGain, m_wholeKGain), p.k, sw.alpha);
        if (sw.normOn == QkNormTarget::QKV)
            p.v = mixNormed(p.v * torch::rsqrt(p.v.pow(2).mean(-1, true) + kQkNormEps), p.v,
                            sw.alpha);
    };
    if (!sw.normAfterRope) applyNorm();
    if (m_rope) {
        p.q = applyRope(p.q, cos, sin);
        p.k = applyRope(p.k, cos, sin);
    }
    if (sw.normAfterRope) applyNorm();
    return p;
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                               const torch::Tensor& sin, const torch::Tensor& mask,
                                               const AttentionSwitches& sw,
                                               AttentionCapture* capture) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
    const QkvProjection p = project(x, cos, sin, sw);
    auto y = attendCausal(p.q, p.k, p.v, mask, sw, m_l2Scale, capture);  // (B, H, T, D)
    if (capture) {
        capture->q = p.q.detach();
        capture->k = p.k.detach();
        capture->qRaw = p.qRaw.detach();
        capture->kRaw = p.kRaw.detach();
    }
    return m_proj(y.transpose(1, 2).reshape({B, T, C}));
}

void CausalSelfAttentionImpl::allocateCache(LayerCache& cache, int64_t batch, int64_t capacity,
                                            const torch::TensorOptions& options) const {
    cache.k = torch::zeros({batch, m_nHeads, capacity, m_dHead}, options);
    cache.v = torch::zeros({batch, m_nHeads, capacity, m_dHead}, options);
}

torch::Tensor CausalSelfAttentionImpl::decode(const torch::Tensor& x, const torch::Tensor& cos,
                                              const torch::Tensor& sin, const AttentionSwitches& sw,
                                              LayerCache& cache, int64_t past) {
    const int64_t B = x.size(0), n = x.size(1), C = x.size(2);
    const QkvProjection p = project(x, cos, sin, sw);
    cache.k.narrow(2, past, n).copy_(p.k);
    cache.v.narrow(2, past, n).copy_(p.v);
    auto keys = cache.k.narrow(2, 0, past + n), values = cache.v.narrow(2, 0, past + n);
    auto raw = torch::matmul(p.q * logitScaleTensor(sw, m_l2Scale), keys.transpose(2, 3));
    auto probs = torch::softmax(softcapLogits(raw, sw) + decodeMask(past, n, raw.options()), -1);
    auto y = torch::matmul(probs, values);  // (B, H, n, D)
    return m_proj(y.transpose(1, 2).reshape({B, n, C}));
}

torch::Tensor CausalSelfAttentionImpl::maxLogitPerHead(const torch::Tensor& x,
                                                       const torch::Tensor& cos,
                                                       const torch::Tensor& sin,
                                                       const torch::Tensor&,
                                                       const AttentionSwitches& sw) {
    const QkvProjection p = project(x, cos, sin, sw);
    auto raw = torch::matmul(p.q * logitScaleTensor(sw, m_l2Scale), p.k.transpose(2, 3));
    return maxCausalLogitPerHead(raw);
}

void CausalSelfAttentionImpl::clipHead(int64_t head, double factor) {
    // W_qkv rows: [q heads | k heads | v heads], each head d_head rows.
    const int64_t C = m_nHeads * m_dHead;
    auto& w = m_qkv->weight;
    w.narrow(0, head * m_dHead, m_dHead).mul_(factor);
    w.narrow(0, C + head * m_dHead, m_dHead).mul_(factor);
}

// ---- block -------------------------------------------------------------------------------

BlockImpl::BlockImpl(const RunConfig& c) {
    const int64_t C = c.model.dModel;
    // Both kinds register as "attn", so checkpoint names read the same.
    if (c.attention.kind == AttentionKind::Mla)
        mla = register_module("attn", LatentAttention(c));
    else
        attn = register_module("attn", CausalSelfAttention(c));
    m_norm1 = register_parameter("norm1", torch::ones({C}));
    m_norm2 = register_parameter("norm2", torch::ones({C}));
    m_fc = register_module(
        "fc", torch::nn::Linear(torch::nn::LinearOptions(C, c.model.mlpRatio * C).bias(false)));
    m_out = register_module(
        "out", torch::nn::Linear(torch::nn::LinearOptions(c.model.mlpRatio * C, C).bias(false)));
}

torch::Tensor BlockImpl::attentionInput(const torch::Tensor& x) {
    return rmsNorm(x, m_norm1);
}

torch::Tensor BlockImpl::mlp(const torch::Tensor& h) {
    return h + m_out(torch::gelu(m_fc(rmsNorm(h, m_norm2))));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                 const torch::Tensor& sin, const torch::Tensor& mask,
                                 const AttentionSwitches& sw, AttentionCapture* capture) {
    const auto in = attentionInput(x);
    auto a = mla ? mla->forward(in, cos, sin, mask, sw, capture)
                 : attn->forward(in, cos, sin, mask, sw, capture);
    return mlp(x + a);
}

torch::Tensor BlockImpl::decode(const torch::Tensor& x, const torch::Tensor& cos,
                                const torch::Tensor& sin, const AttentionSwitches& sw,
                                LayerCache& cache, int64_t past, DecodeCache mode) {
    const auto in = attentionInput(x);
    auto a = mla ? mla->decode(in, cos, sin, sw, cache, past, mode)
                 : attn->decode(in, cos, sin, sw, cache, past);
    return mlp(x + a);
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
      m_zLoss(c.optim.zLoss) {
    const int64_t C = m_dModel, V = 256;
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
}

const torch::Tensor& TransformerImpl::causalMask(int64_t T, const torch::TensorOptions& options) {
    if (!m_mask.defined() || m_mask.size(0) != T || m_mask.device() != options.device() ||
        m_mask.dtype() != options.dtype()) {
        m_mask = torch::full({T, T}, -std::numeric_limits<float>::infinity(), options).triu(1);
    }
    return m_mask;
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
    ForwardResult r;
    r.ceLoss = F::cross_entropy(flat, targets.reshape({-1}));
    r.loss = r.ceLoss;
    if (m_zLoss > 0) r.loss = r.ceLoss + m_zLoss * torch::logsumexp(flat, -1).pow(2).mean();
    return r;
}

DecodeState TransformerImpl::newDecodeState(DecodeCache mode, int64_t batch, int64_t capacity,
                                            const AttentionSwitches& sw) {
    TORCH_CHECK(capacity <= m_maxT, "decode capacity ", capacity, " exceeds the model's ", m_maxT);
    DecodeState st;
    st.mode = mode;
    st.capacity = capacity;
    st.layers.resize(m_blocks.size());
    const auto options = m_finalNorm.options().requires_grad(false);
    for (size_t i = 0; i < m_blocks.size(); ++i) {
        if (m_blocks[i]->mla)
            m_blocks[i]->mla->allocateCache(st.layers[i], batch, capacity, mode, sw, options);
        else
            m_blocks[i]->attn->allocateCache(st.layers[i], batch, capacity, options);
    }
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
        auto sMax = (b->mla ? b->mla->maxLogitPerHead(in, cos, sin, mask, measure)
                            : b->attn->maxLogitPerHead(in, cos, sin, mask, measure))
                        .to(torch::kFloat64)
                        .cpu();
        for (int64_t h = 0; h < sMax.size(0); ++h) {
            const double s = sMax[h].item<double>();
            if (!(s > tau) || !std::isfinite(s)) continue;
            const double factor = std::sqrt(tau / s);
            if (b->mla)
                b->mla->clipHead(h, factor);
            else
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
        for (auto& g : b->mla ? b->mla->qkGains() : b->attn->qkGains()) out.push_back(g);
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

int64_t TransformerImpl::parameterCount() {
    int64_t n = 0;
    for (auto& p : parameters()) n += p.numel();
    return n;
}

}  // namespace qklab
