// device_optim.cpp — DeviceAdamW and clipGradNorm: LibTorch's AdamW and clip_grad_norm_ with
// every scalar that changes per step kept in device tensors.
#include "device_optim.h"

#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

namespace qklab {

DeviceAdamW::DeviceAdamW(std::vector<AdamWGroup> groups, double beta1, double beta2, double eps)
    : m_beta1(beta1), m_beta2(beta2), m_eps(eps) {
    for (auto& g : groups)
        for (auto& p : g.params) {
            m_params.push_back(p);
            m_weightDecay.push_back(g.weightDecay);
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
    m_steps = torch::zeros({static_cast<int64_t>(m_params.size())}, f64);
    m_decayRates = torch::tensor(m_weightDecay, torch::kFloat64).to(device);
}

void DeviceAdamW::setLr(double lr) {
    m_lr.fill_(lr);
}

torch::Tensor DeviceAdamW::activeMask(const std::vector<bool>& active) {
    auto it = m_masks.find(active);
    if (it != m_masks.end()) return it->second;
    std::vector<double> ones(active.begin(), active.end());
    auto mask = torch::tensor(ones, torch::kFloat64).to(m_steps.device());
    return m_masks.emplace(active, mask).first->second;
}

void DeviceAdamW::step() {
    torch::NoGradGuard noGrad;
    std::vector<bool> active(m_params.size());
    for (size_t i = 0; i < m_params.size(); ++i) active[i] = m_params[i].grad().defined();
    m_steps.add_(activeMask(active));

    // All bias corrections in a few vector ops, in float64 as LibTorch computes them on the
    // host, then cast to the parameters' dtype as its Scalar arguments are.
    const auto dtype = m_params.front().scalar_type();
    auto biasCorrection1 = 1 - torch::pow(m_beta1, m_steps);
    auto biasCorrection2 = 1 - torch::pow(m_beta2, m_steps);
    auto negStepSize = (-(m_lr / biasCorrection1)).to(dtype);
    auto sqrtBiasCorrection2 = biasCorrection2.sqrt().to(dtype);
    auto decayFactor = (1 - m_lr * m_decayRates).to(dtype);

    for (size_t i = 0; i < m_params.size(); ++i) {
        if (!active[i]) continue;
        auto& p = m_params[i];
        const auto& grad = p.grad();
        const auto ii = static_cast<int64_t>(i);
        if (m_weightDecay[i] != 0) p.mul_(decayFactor[ii]);
        m_expAvg[i].mul_(m_beta1).add_(grad, 1 - m_beta1);
        m_expAvgSq[i].mul_(m_beta2).addcmul_(grad, grad, 1 - m_beta2);
        auto denom = (m_expAvgSq[i].sqrt() / sqrtBiasCorrection2[ii]).add_(m_eps);
        // p + (-step_size * m) / denom: addcdiv's operation order.
        p.add_(m_expAvg[i].mul(negStepSize[ii]).div_(denom));
    }
}

void DeviceAdamW::save(torch::serialize::OutputArchive& archive) const {
    archive.write("steps", m_steps);
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
        m_expAvg[i].copy_(read("exp_avg." + std::to_string(i)));
        m_expAvgSq[i].copy_(read("exp_avg_sq." + std::to_string(i)));
    }
}

namespace {

// LibTorch keys optimizer state by the parameter's TensorImpl: the pointer itself in 2.x, the
// pointer printed to a string (c10::guts::to_string, i.e. operator<<) in 1.13.
template <class StateMap>
typename StateMap::key_type optimizerStateKey(const torch::Tensor& p) {
    using Key = typename StateMap::key_type;
    if constexpr (std::is_same_v<Key, std::string>) {
        std::ostringstream os;
        os << static_cast<const void*>(p.unsafeGetTensorImpl());
        return os.str();
    } else {
        return p.unsafeGetTensorImpl();
    }
}

}  // namespace

void DeviceAdamW::importFrom(torch::optim::AdamW& legacy) {
    torch::NoGradGuard noGrad;
    auto& state = legacy.state();
    std::vector<double> steps(m_params.size(), 0.0);
    for (size_t i = 0; i < m_params.size(); ++i) {
        auto it = state.find(optimizerStateKey<std::decay_t<decltype(state)>>(m_params[i]));
        if (it == state.end()) continue;  // never stepped
        auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
        steps[i] = static_cast<double>(s.step());
        m_expAvg[i].copy_(s.exp_avg());
        m_expAvgSq[i].copy_(s.exp_avg_sq());
    }
    m_steps.copy_(torch::tensor(steps, torch::kFloat64));
}

int64_t DeviceAdamW::stepCount(size_t paramIndex) const {
    return static_cast<int64_t>(m_steps[static_cast<int64_t>(paramIndex)].item<double>());
}

torch::Tensor clipGradNorm(const std::vector<torch::Tensor>& params, double maxNorm) {
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> grads, norms;
    for (const auto& p : params)
        if (p.grad().defined()) grads.push_back(p.grad());
    if (grads.empty()) return torch::zeros({});
    for (const auto& g : grads) norms.push_back(g.norm(2));
    auto total = norms.size() == 1 ? norms[0] : torch::stack(norms).norm(2);
    if (maxNorm == std::numeric_limits<double>::infinity()) return total;  // factor would be 1
    auto factor = torch::clamp_max(maxNorm / (total + 1e-6), 1.0);
    for (auto& g : grads) g.mul_(factor);
    return total;
}

}  // namespace qklab
