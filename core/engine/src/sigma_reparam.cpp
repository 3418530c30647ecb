// sigma_reparam.cpp — sigmaReparam's power iteration and reparameterised weight (see
// sigma_reparam.h).
#include "sigma_reparam.h"

namespace qklab {

namespace F = torch::nn::functional;

namespace {

constexpr double kNormEps = 1e-12;  // as torch.nn.utils.spectral_norm

// Unit vectors along the last dimension.
torch::Tensor unit(const torch::Tensor& x) {
    return F::normalize(x, F::NormalizeFuncOptions().dim(-1).eps(kNormEps));
}

}  // namespace

SpectralReparamImpl::SpectralReparamImpl(torch::Tensor weight, int64_t slices)
    : m_weight(std::move(weight)), m_slices(slices) {
    TORCH_CHECK(m_weight.dim() == 2 && slices >= 1 && m_weight.size(0) % slices == 0,
                "sigmaReparam: a (out, in) weight whose rows split into ", slices, " slices");
    const int64_t rows = m_weight.size(0) / slices, cols = m_weight.size(1);
    const auto options = m_weight.options().requires_grad(false);
    // Until initialise(): gamma 1 and the unit vectors (1, ..., 1) / sqrt(n).
    m_gamma = register_parameter("gamma", torch::ones({slices}, options));
    m_u = register_buffer("u", unit(torch::ones({slices, rows}, options)));
    m_v = register_buffer("v", unit(torch::ones({slices, cols}, options)));
}

torch::Tensor SpectralReparamImpl::matrices() const {
    return m_weight.view({m_slices, m_weight.size(0) / m_slices, m_weight.size(1)});
}

std::pair<torch::Tensor, torch::Tensor> SpectralReparamImpl::powerStep(const torch::Tensor& w,
                                                                       const torch::Tensor& from) {
    torch::NoGradGuard noGrad;
    const auto wd = w.detach();
    auto vNext = unit((wd * from.unsqueeze(2)).sum(1));   // W^T u: (S, c)
    auto uNext = unit((wd * vNext.unsqueeze(1)).sum(2));  // W v: (S, r)
    return {uNext, vNext};
}

torch::Tensor SpectralReparamImpl::sigma(bool store) {
    const auto w = matrices();
    const auto [uNext, vNext] = powerStep(w, m_u);
    if (store) {
        torch::NoGradGuard noGrad;
        m_u.copy_(uNext);  // in place: a CUDA graph replays the update
        m_v.copy_(vNext);
    }
    return (w * uNext.unsqueeze(2) * vNext.unsqueeze(1)).sum({1, 2});  // u^T W v per slice
}

torch::Tensor SpectralReparamImpl::forward() {
    const bool store = is_training() && torch::GradMode::is_enabled();
    const auto scale = (m_gamma / sigma(store)).view({m_slices, 1, 1});
    return (matrices() * scale).view(m_weight.sizes());
}

void SpectralReparamImpl::initialise(at::Generator& generator) {
    torch::NoGradGuard noGrad;
    m_u.normal_(0.0, 1.0, generator);
    m_v.normal_(0.0, 1.0, generator);
    m_u.copy_(unit(m_u));
    m_v.copy_(unit(m_v));
    const auto w = matrices();
    for (int i = 0; i < kWarmupSteps; ++i) {
        const auto [uNext, vNext] = powerStep(w, m_u);
        m_u.copy_(uNext);
        m_v.copy_(vNext);
    }
    const auto top = torch::linalg_svdvals(w.to(torch::kFloat64)).select(1, 0);  // (S)
    m_gamma.copy_(top.to(m_gamma.dtype()));
}

torch::Tensor reparamLinear(torch::nn::Linear& linear, SpectralReparam& sigma,
                            const torch::Tensor& x) {
    if (!sigma) return linear(x);
    return torch::linear(x, sigma->forward());
}

torch::Tensor reparamWeight(torch::nn::Linear& linear, SpectralReparam& sigma) {
    return sigma ? sigma->forward() : linear->weight;
}

}  // namespace qklab
