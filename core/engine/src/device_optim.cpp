// device_optim.cpp — DeviceAdamW and clipGradNorm: LibTorch's AdamW and clip_grad_norm_ with
// every scalar that changes per step kept in device tensors.
#include "device_optim.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace qklab {

torch::Tensor newtonSchulz5(const torch::Tensor& g, int64_t steps) {
    constexpr double ca = 3.4445, cb = -4.7750, cc = 2.0315;
    auto x = g.to(torch::kFloat32);
    const bool tall = x.size(-2) > x.size(-1);  // iterate on the wide side: A is the smaller
    if (tall) x = x.transpose(-2, -1);
    x = x / (x.norm(2, {-2, -1}, /*keepdim=*/true) + 1e-7);
    for (int64_t k = 0; k < steps; ++k) {
        const auto a = torch::matmul(x, x.transpose(-2, -1));
        const auto b = a * cb + torch::matmul(a, a) * cc;
        x = x * ca + torch::matmul(b, x);
    }
    return tall ? x.transpose(-2, -1).contiguous() : x;
}

double muonScale(int64_t rows, int64_t cols) {
    return 0.2 * std::sqrt(static_cast<double>(std::max(rows, cols)));
}

DeviceAdamW::DeviceAdamW(std::vector<AdamWGroup> groups, double beta1, double beta2, double eps,
                         bool fused, MuonSettings muon, std::vector<QuackPair> quack)
    : m_muonSettings(muon), m_beta1(beta1), m_beta2(beta2), m_eps(eps), m_fused(fused) {
    TORCH_CHECK(!fused || kHaveFusedAdamW, "fused AdamW needs LibTorch 2.4 or later");
    for (auto& g : groups) {
        TORCH_CHECK(g.rowBlocks.empty() || g.rowBlocks.size() == g.params.size(),
                    "DeviceAdamW: rowBlocks has ", g.rowBlocks.size(), " entries for ",
                    g.params.size(), " parameters");
        for (size_t j = 0; j < g.params.size(); ++j) {
            const auto& p = g.params[j];
            const int64_t blocks = g.rowBlocks.empty() ? 1 : g.rowBlocks[j];
            m_params.push_back(p);
            m_weightDecay.push_back(g.weightDecay);
            m_muon.push_back(g.muon);
            m_rowBlocks.push_back(blocks);
            m_muonScale.push_back(0);
            if (!g.muon) continue;
            TORCH_CHECK(p.dim() == 2 && blocks >= 1 && p.size(0) % blocks == 0,
                        "Muon: parameter of shape ", p.sizes(), " is not a matrix of ", blocks,
                        " equal row blocks");
            m_muonScale.back() = muonScale(p.size(0) / blocks, p.size(1));
        }
    }
    TORCH_CHECK(!m_params.empty(), "DeviceAdamW: no parameters");
    torch::NoGradGuard noGrad;
    const auto device = m_params.front().device();
    const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(device);
    for (auto& p : m_params) {
        m_expAvg.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        m_expAvgSq.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    }
    m_lr = torch::zeros({}, f64);
    const auto stepType = fused ? torch::kFloat32 : torch::kFloat64;
    m_steps = torch::zeros({static_cast<int64_t>(m_params.size())}, f64.dtype(stepType));
    m_decayRates = torch::tensor(m_weightDecay, torch::kFloat64).to(device);
    if (fused) {
        m_lrFloat = torch::zeros({}, f64.dtype(torch::kFloat32));
        for (auto& p : m_params) m_before.push_back(torch::empty_like(p));
    }
    attachQuack(std::move(quack));
}

void DeviceAdamW::attachQuack(std::vector<QuackPair> pairs) {
    m_rowScale.assign(m_params.size(), torch::Tensor());
    auto indexOf = [this](const HeadRows& s) {
        size_t i = 0;
        while (i < m_params.size() && !m_params[i].is_same(s.weight)) ++i;
        TORCH_CHECK(i < m_params.size(),
                    "QuacK: a query or key weight is not among the optimizer's parameters");
        return i;
    };
    for (const auto& pair : pairs) {
        TORCH_CHECK(pair.key.heads == pair.query.heads || pair.key.heads == 1,
                    "QuacK: ", pair.key.heads, " key heads for ", pair.query.heads, " query heads");
        std::array<size_t, 2> sides{};
        for (int side = 0; side < 2; ++side) {
            const HeadRows* s = side == 0 ? &pair.query : &pair.key;
            const size_t i = sides[side] = indexOf(*s);
            TORCH_CHECK(m_params[i].dim() == 2 && s->offset + s->rows <= s->stride &&
                            s->base + s->heads * s->stride <= m_params[i].size(0),
                        "QuacK: head rows outside a parameter of shape ", m_params[i].sizes());
            if (!m_rowScale[i].defined())
                m_rowScale[i] = torch::ones({m_params[i].size(0), 1}, m_lr.options());
        }
        m_quackIndex.push_back(sides);
    }
    m_quack = std::move(pairs);
}

void DeviceAdamW::updateQuackScales() {
    // Every multiplier from the weights before any of this step's updates: a pair's query and
    // key may sit in one tensor (MHA's qkv) or in two stepped one after the other.
    std::vector<QuackScales> scales;
    for (const auto& pair : m_quack) scales.push_back(quackScales(pair));
    for (size_t j = 0; j < m_quack.size(); ++j) {
        writeRowScales(m_rowScale[m_quackIndex[j][0]], m_quack[j].query, scales[j].query);
        writeRowScales(m_rowScale[m_quackIndex[j][1]], m_quack[j].key, scales[j].key);
    }
}

void DeviceAdamW::setLr(double lr) {
    m_lr.fill_(lr);
    if (m_fused) m_lrFloat.fill_(lr);
}

namespace {

// ||theta' - theta||^2 of one parameter whose update is theta' = (1 + decay) theta + adamStep
// (decay undefined: none), read before theta changes. Three dot products instead of the
// difference: no copy of the parameter. decay = decayFactor - 1 is exact in the parameters'
// dtype (Sterbenz), so this is the decay actually applied.
torch::Tensor squaredUpdateNorm(const torch::Tensor& p, const torch::Tensor& adamStep,
                                const torch::Tensor& decay) {
    if (decay.defined() && decay.dim() > 0) {  // QuacK: a decay per row, (rows, 1)
        const auto diff = adamStep.to(torch::kFloat64) +
                          p.detach().to(torch::kFloat64) * decay.to(torch::kFloat64);
        return diff.square().sum();
    }
    const auto u = adamStep.reshape({-1}), theta = p.detach().reshape({-1});
    auto squared = torch::dot(u, u).to(torch::kFloat64);
    if (!decay.defined()) return squared;
    const auto d = decay.to(torch::kFloat64);
    return squared + 2 * d * torch::dot(theta, u).to(torch::kFloat64) +
           d * d * torch::dot(theta, theta).to(torch::kFloat64);
}

}  // namespace

torch::Tensor DeviceAdamW::activeMask(const std::vector<bool>& active) {
    auto it = m_masks.find(active);
    if (it != m_masks.end()) return it->second;
    std::vector<double> ones(active.begin(), active.end());
    auto mask = torch::tensor(ones, torch::kFloat64).to(m_steps.device(), m_steps.scalar_type());
    return m_masks.emplace(active, mask).first->second;
}

void DeviceAdamW::step() {
    torch::NoGradGuard noGrad;
    std::vector<bool> active(m_params.size());
    for (size_t i = 0; i < m_params.size(); ++i) active[i] = m_params[i].grad().defined();
    m_steps.add_(activeMask(active));
    std::vector<torch::Tensor> squaredNorms;  // of each parameter's update, float64
    if (!m_quack.empty()) updateQuackScales();
    if (m_fused) fusedStep(active, squaredNorms);
    // Fused, the kernel stepped all but QuacK's parameters: without QuacK nothing is left, and
    // the bias corrections perParameterStep computes first would be device work for nothing.
    if (!m_fused || !m_quack.empty()) perParameterStep(active, squaredNorms);
    muonStep(active, squaredNorms);
    // clamp_min: the dot-product form can round below 0; a sum of norms is >= 0 already.
    m_updateNorm = squaredNorms.empty() ? torch::zeros({}, m_lr.options())
                                        : torch::stack(squaredNorms).sum().clamp_min(0).sqrt();
}

void DeviceAdamW::fusedStep(const std::vector<bool>& active,
                            std::vector<torch::Tensor>& squaredNorms) {
#ifdef QKLAB_HAVE_FUSED_ADAMW
    // One kernel call per weight-decay group over its parameters that have gradients. The
    // update norm is ||before - after||, from a copy taken into preallocated buffers (no
    // allocation per step, so a captured graph can replay it).
    for (size_t begin = 0; begin < m_params.size();) {
        size_t end = begin;
        while (end < m_params.size() && m_weightDecay[end] == m_weightDecay[begin]) ++end;
        std::vector<torch::Tensor> params, grads, expAvg, expAvgSq, steps, before;
        for (size_t i = begin; i < end; ++i) {
            if (!active[i] || m_muon[i] || m_rowScale[i].defined()) continue;
            // The kernels walk parameter and gradient as flat arrays.
            TORCH_CHECK(m_params[i].is_contiguous(), "fused AdamW: parameter ", i,
                        " is not contiguous");
            const auto& grad = m_params[i].grad();
            params.push_back(m_params[i]);
            grads.push_back(grad.is_contiguous() ? grad : grad.contiguous());
            expAvg.push_back(m_expAvg[i]);
            expAvgSq.push_back(m_expAvgSq[i]);
            steps.push_back(m_steps.select(0, static_cast<int64_t>(i)));
            before.push_back(m_before[i]);
        }
        if (!params.empty()) {
            at::_foreach_copy_(before, params);
            at::_fused_adamw_(params, grads, expAvg, expAvgSq, {}, steps, m_lrFloat, m_beta1,
                              m_beta2, m_weightDecay[begin], m_eps, /*amsgrad=*/false,
                              /*maximize=*/false);
            at::_foreach_sub_(before, params);
            for (const auto& n : at::_foreach_norm(before))
                squaredNorms.push_back(n.to(torch::kFloat64).square());
        }
        begin = end;
    }
#else
    (void)active;
    (void)squaredNorms;
    TORCH_CHECK(false, "fused AdamW needs LibTorch 2.4 or later");
#endif
}

void DeviceAdamW::perParameterStep(const std::vector<bool>& active,
                                   std::vector<torch::Tensor>& squaredNorms) {
    // All bias corrections in a few vector ops, in float64 as LibTorch computes them on the
    // host, then cast to the parameters' dtype as its Scalar arguments are.
    // Fused, the kernel has stepped all but QuacK's parameters, and the step counts are
    // float32: read as float64 (a no-op otherwise, so the unfused numbers are unchanged).
    const auto dtype = m_params.front().scalar_type();
    const auto steps = m_steps.to(torch::kFloat64);
    auto biasCorrection1 = 1 - torch::pow(m_beta1, steps);
    auto biasCorrection2 = 1 - torch::pow(m_beta2, steps);
    auto negStepSize = (-(m_lr / biasCorrection1)).to(dtype);
    auto sqrtBiasCorrection2 = biasCorrection2.sqrt().to(dtype);
    auto decayFactor = (1 - m_lr * m_decayRates).to(dtype);

    for (size_t i = 0; i < m_params.size(); ++i) {
        if (!active[i] || m_muon[i] || (m_fused && !m_rowScale[i].defined())) continue;
        auto& p = m_params[i];
        const auto& grad = p.grad();
        const auto ii = static_cast<int64_t>(i);
        auto negStep = negStepSize[ii], decay = decayFactor[ii];
        if (m_rowScale[i].defined()) {  // QuacK: the LR row by row, lr' = lr x multiplier
            const auto rowLr = m_lr * m_rowScale[i];
            negStep = (-(rowLr / biasCorrection1[ii])).to(dtype);
            decay = (1 - rowLr * m_decayRates[ii]).to(dtype);
        }
        m_expAvg[i].mul_(m_beta1).add_(grad, 1 - m_beta1);
        m_expAvgSq[i].mul_(m_beta2).addcmul_(grad, grad, 1 - m_beta2);
        auto denom = (m_expAvgSq[i].sqrt() / sqrtBiasCorrection2[ii]).add_(m_eps);
        // (-step_size * m) / denom: addcdiv's operation order.
        auto adamStep = m_expAvg[i].mul(negStep).div_(denom);
        squaredNorms.push_back(
            squaredUpdateNorm(p, adamStep, m_weightDecay[i] != 0 ? decay - 1 : torch::Tensor()));
        // Decay, then the Adam step: LibTorch's order (the moments do not read p).
        if (m_weightDecay[i] != 0) p.mul_(decay);
        p.add_(adamStep);
    }
}

void DeviceAdamW::muonStep(const std::vector<bool>& active,
                           std::vector<torch::Tensor>& squaredNorms) {
    if (std::find(m_muon.begin(), m_muon.end(), true) == m_muon.end()) return;
    const double mu = m_muonSettings.momentum;
    const auto decayFactors = 1 - m_lr * m_decayRates;  // (P) float64
    for (size_t i = 0; i < m_params.size(); ++i) {
        if (!active[i] || !m_muon[i]) continue;
        auto& p = m_params[i];
        const auto& grad = p.grad();
        const auto dtype = p.scalar_type();
        auto& momentum = m_expAvg[i];  // Muon's M, in AdamW's first-moment slot
        momentum.mul_(mu).add_(grad);
        const auto nesterov = grad.add(momentum, mu);
        const int64_t blocks = m_rowBlocks[i];
        auto update = newtonSchulz5(nesterov.reshape({blocks, p.size(0) / blocks, p.size(1)}),
                                    m_muonSettings.nsSteps)
                          .reshape(p.sizes())
                          .to(dtype);
        // QuacK: the LR row by row (lr' = lr x multiplier), decay included.
        const auto lr = m_rowScale[i].defined() ? m_lr * m_rowScale[i] : m_lr;
        update.mul_((lr * -m_muonScale[i]).to(dtype));
        const auto decayFactor = m_rowScale[i].defined()
                                     ? (1 - lr * m_decayRates[static_cast<int64_t>(i)]).to(dtype)
                                     : decayFactors[static_cast<int64_t>(i)].to(dtype);
        const bool decays = m_weightDecay[i] != 0;
        squaredNorms.push_back(
            squaredUpdateNorm(p, update, decays ? decayFactor - 1 : torch::Tensor()));
        if (decays) p.mul_(decayFactor);  // decoupled decay, then the update (Moonlight's order)
        p.add_(update);
    }
}

void DeviceAdamW::save(torch::serialize::OutputArchive& archive) const {
    archive.write("steps", m_steps.to(torch::kFloat64));  // one layout, fused or not
    for (size_t i = 0; i < m_params.size(); ++i) {
        archive.write("exp_avg." + std::to_string(i), m_expAvg[i]);
        archive.write("exp_avg_sq." + std::to_string(i), m_expAvgSq[i]);
    }
}

void DeviceAdamW::load(torch::serialize::InputArchive& archive) {
    torch::NoGradGuard noGrad;
    // A fresh tensor per read: InputArchive::read set_()s a defined tensor to the stored one.
    auto read = [&](const std::string& key) {
        torch::Tensor t;
        archive.read(key, t);
        return t;
    };
    const auto steps = read("steps");
    TORCH_CHECK(steps.numel() == m_steps.numel(), "optimizer state has ", steps.numel(),
                " parameters, the model ", m_steps.numel());
    m_steps.copy_(steps);
    for (size_t i = 0; i < m_params.size(); ++i) {
        const auto expAvg = read("exp_avg." + std::to_string(i));
        const auto expAvgSq = read("exp_avg_sq." + std::to_string(i));
        TORCH_CHECK(
            expAvg.sizes() == m_params[i].sizes() && expAvgSq.sizes() == m_params[i].sizes(),
            "optimizer state of parameter ", i, " does not match its shape ", m_params[i].sizes());
        m_expAvg[i].copy_(expAvg);
        m_expAvgSq[i].copy_(expAvgSq);
    }
}

namespace {

// A tensor-valued entry of a sub-archive, or an undefined tensor when absent.
torch::Tensor readTensorValue(torch::serialize::InputArchive& archive, const std::string& key) {
    c10::IValue value;
    if (!archive.try_read(key, value) || !value.isTensor()) return {};
    return value.toTensor();
}

// The state keys of every parameter in group order, as the archive spells them.
std::vector<std::string> legacyParameterKeys(torch::serialize::InputArchive& archive) {
    torch::serialize::InputArchive groups;
    archive.read("param_groups", groups);
    torch::Tensor count;
    groups.read("param_groups/size", count);
    std::vector<std::string> keys;
    for (int64_t g = 0; g < count.item<int64_t>(); ++g) {
        torch::serialize::InputArchive group;
        groups.read("param_groups/" + std::to_string(g), group);
        torch::Tensor size;
        group.read("params/size", size);
        for (int64_t i = 0; i < size.item<int64_t>(); ++i) {
            c10::IValue key;
            group.read("params/" + std::to_string(i), key);
            keys.push_back(key.toStringRef());
        }
    }
    return keys;
}

}  // namespace

void DeviceAdamW::importLibTorchAdamW(torch::serialize::InputArchive& archive) {
    torch::NoGradGuard noGrad;
    const auto keys = legacyParameterKeys(archive);
    TORCH_CHECK(keys.size() == m_params.size(), "the optimizer state covers ", keys.size(),
                " parameters, the model has ", m_params.size());
    torch::serialize::InputArchive states;
    archive.read("state", states);
    std::vector<double> steps(m_params.size(), 0.0);
    for (size_t i = 0; i < m_params.size(); ++i) {
        torch::serialize::InputArchive state;
        if (!states.try_read(keys[i], state)) continue;  // never stepped
        c10::IValue step;
        state.read("step", step);
        const auto expAvg = readTensorValue(state, "exp_avg");
        const auto expAvgSq = readTensorValue(state, "exp_avg_sq");
        TORCH_CHECK(expAvg.defined() && expAvg.sizes() == m_params[i].sizes() &&
                        expAvgSq.defined() && expAvgSq.sizes() == m_params[i].sizes(),
                    "optimizer state of parameter ", i, " does not match its shape ",
                    m_params[i].sizes());
        steps[i] = static_cast<double>(step.toInt());
        m_expAvg[i].copy_(expAvg);
        m_expAvgSq[i].copy_(expAvgSq);
    }
    m_steps.copy_(torch::tensor(steps, torch::kFloat64));  // copy_ converts to float32 if fused
}

int64_t DeviceAdamW::stepCount(size_t paramIndex) const {
    return static_cast<int64_t>(m_steps[static_cast<int64_t>(paramIndex)].item<double>());
}

torch::Tensor clipGradNorm(const std::vector<torch::Tensor>& params, double maxNorm) {
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> grads, norms;
    for (const auto& p : params)
        if (p.grad().defined()) grads.push_back(p.grad());
    if (grads.empty())
        return torch::zeros({}, params.empty() ? torch::TensorOptions() : params.front().options());
    for (const auto& g : grads) norms.push_back(g.norm(2));
    auto total = norms.size() == 1 ? norms[0] : torch::stack(norms).norm(2);
    if (maxNorm == std::numeric_limits<double>::infinity()) return total;  // factor would be 1
    auto factor = torch::clamp_max(maxNorm / (total + 1e-6), 1.0);
    for (auto& g : grads) g.mul_(factor);
    return total;
}

}  // namespace qklab
