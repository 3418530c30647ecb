// sigma_reparam.h — attention.sigma_reparam (Zhai et al. 2023, "Stabilizing Transformer Training
// by Preventing Attention Entropy Collapse", arXiv 2303.06296): a weight matrix W is used as
// W^ = gamma / sigma(W) * W, sigma(W) its spectral norm estimated by power iteration and gamma a
// learnable scalar. The paper bounds the attention entropy from below by a function that falls
// exponentially with the spectral norm of the logits, and reports that sigmaReparam prevents
// entropy collapse.
//
// One SpectralReparam belongs to one Linear's weight (out, in), read as `slices` matrices of
// out / slices rows each (the fused W_qkv: q, k and v are three matrices with a sigma and a gamma
// each). Buffers u (slices, out / slices) and v (slices, in) are unit vectors. A training forward
// (training mode, gradients on) first takes ONE power-iteration step and stores it, without
// gradient: v <- normalize(W^T u), u <- normalize(W v); then sigma = u^T W v with gradient through
// W, u and v constants, as in the paper. Any other forward (eval, generate, decode, the
// validation loss, the maps before an event: no gradients) takes the same step on copies and
// leaves u and v as they are. The power step and sigma are elementwise products and sums, not
// matmuls, so bf16 autocast leaves them in fp32.
//
// Initialisation (initialise(), called by the Transformer after every other weight is drawn):
// u and v are drawn from the model's generator and warmed up by kWarmupSteps power steps, and
// gamma starts at sigma(W) (an SVD), so that the initial W^ is the initial W. That follows the
// authors' PyTorch reference, which their README says was also used for the language models
// (github.com/apple/ml-sigma-reparam, vision/layers.py: SNLinear's learnable scale starts at the
// SVD's top singular value, u at the top singular vector). Their JAX reference (speech/layers.py)
// starts gamma at 1 instead; with qklab's GPT-2 init (sigma(W) about 0.3 at d_model 32) that
// would multiply every reparameterised matrix by about 3 at step 0. Private to core: torch.
#pragma once

#include <ATen/core/Generator.h>
#include <torch/torch.h>

#include <utility>

namespace qklab {

class SpectralReparamImpl : public torch::nn::Module {
  public:
    static constexpr int kWarmupSteps = 30;  // power steps at initialisation
    // `weight` is the Linear's own parameter (a handle: loads and moves keep it current).
    explicit SpectralReparamImpl(torch::Tensor weight, int64_t slices = 1);
    // W^ = gamma / sigma(W) * W, (out, in); a training forward stores its power step first.
    torch::Tensor forward();
    // sigma(W) per slice (slices), with gradient through W; `store`: keep the power step.
    torch::Tensor sigma(bool store);
    // Draws u and v from `generator`, warms them up, sets gamma = sigma(W) (see above).
    void initialise(at::Generator& generator);
    // One power step on W (S, r, c) from u (S, r): (u', v') = (normalize(W normalize(W^T u)),
    // normalize(W^T u)). No gradient.
    static std::pair<torch::Tensor, torch::Tensor> powerStep(const torch::Tensor& w,
                                                             const torch::Tensor& from);
    torch::Tensor& gamma() { return m_gamma; }
    torch::Tensor& u() { return m_u; }
    torch::Tensor& v() { return m_v; }

  private:
    torch::Tensor matrices() const;  // the weight as (slices, out / slices, in)
    torch::Tensor m_weight;
    int64_t m_slices;
    torch::Tensor m_gamma;   // (slices) learnable
    torch::Tensor m_u, m_v;  // (slices, rows), (slices, in) buffers: unit vectors
};
TORCH_MODULE(SpectralReparam);

// linear(x) through W^ where `sigma` is set, else the Linear itself (the same kernels as before
// sigmaReparam existed).
torch::Tensor reparamLinear(torch::nn::Linear& linear, SpectralReparam& sigma,
                            const torch::Tensor& x);
// The weight a Linear is used with: W^ where `sigma` is set, else W.
torch::Tensor reparamWeight(torch::nn::Linear& linear, SpectralReparam& sigma);

}  // namespace qklab
