// device_optim.h — the optimizer step without host round trips (private to core).
//
// A CUDA graph replays a recorded sequence of kernels; nothing in it may read a value back to
// the host. LibTorch's C++ AdamW keeps each parameter's step count on the host and computes
// the bias corrections there, and clip_grad_norm_ returns the norm as a host double (.item()).
// DeviceAdamW keeps the step counts, the learning rate and the bias corrections on the
// parameters' device, and clipGradNorm returns the norm as a device tensor, so a whole
// training step (forward, backward, clip, update) is launches only. On the CPU both compute
// what LibTorch's AdamW and clip_grad_norm_ compute, in the same operation order.
//
// With `fused`, the update itself is ATen's fused AdamW kernel (_fused_adamw_, the kernel
// PyTorch's AdamW(fused=True) runs): one pass over each parameter, its gradient and moments
// instead of about ten, one launch per group on CUDA. Its bias corrections are computed in
// double and its elementwise math in fp32 in another order, so it agrees with the
// per-parameter path within fp32 rounding (tests/core/engine/fused_adamw_test.cpp states the
// tolerances). Both keep the same state, so a checkpoint of either loads into the other.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <array>
#include <map>
#include <vector>

#include "quack.h"

namespace qklab {

struct AdamWGroup {
    std::vector<torch::Tensor> params;
    double weightDecay = 0;
    // optim.kind = muon: this group's 2-D matrices step by Muon, not AdamW. rowBlocks: per
    // parameter, into how many equal row blocks it is cut, each orthogonalised as a matrix of
    // its own (MHA's fused qkv: 3, q, k and v); empty = 1 each.
    bool muon = false;
    std::vector<int64_t> rowBlocks = {};
};

// Muon's settings (optim.muon_momentum, optim.muon_ns_steps).
struct MuonSettings {
    double momentum = 0.95;
    int64_t nsSteps = 5;
};

// Muon's orthogonalisation: `steps` quintic Newton-Schulz iterations X <- aX + (bA + cA^2)X,
// A = XX^T, (a, b, c) = (3.4445, -4.7750, 2.0315), from X = G / (||G||_F + 1e-7), on the
// transpose when G has more rows than columns. G: (rows, cols) or a batch (n, rows, cols),
// each matrix on its own. In fp32 whatever G's dtype (the references run bf16 on GPUs; the
// CPU numbers stay fp32). The singular values end near 1, not at it: in about [0.68, 1.13].
torch::Tensor newtonSchulz5(const torch::Tensor& g, int64_t steps);
// Moonlight's update RMS matching: Muon's update of an A x B matrix is scaled by
// 0.2 sqrt(max(A, B)), so that its RMS is about AdamW's (0.2 to 0.4) and AdamW's LR and
// weight decay carry over.
double muonScale(int64_t rows, int64_t cols);

// ATen's _fused_adamw_ with a tensor learning rate runs on the CPU from LibTorch 2.4 and on
// CUDA from 2.2; Debian's 1.13 has neither.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define QKLAB_HAVE_FUSED_ADAMW 1
constexpr bool kHaveFusedAdamW = true;
#else
constexpr bool kHaveFusedAdamW = false;
#endif

class DeviceAdamW {
  public:
    // quack (optim.quack): query/key slices of these parameters whose rows step with per-head
    // LR multipliers computed from the current weights before every step (engine/quack.h).
    // Those parameters always take the per-parameter (or Muon) path, the fused kernel having
    // one LR per call; the multipliers are device tensors, so a captured graph replays them.
    DeviceAdamW(std::vector<AdamWGroup> groups, double beta1, double beta2, double eps,
                bool fused = false, MuonSettings muon = {}, std::vector<QuackPair> quack = {});
    bool fused() const { return m_fused; }

    // The learning rate of the next step (a device tensor written in place: a captured graph
    // reads the new value on its next replay).
    void setLr(double lr);
    // One AdamW step (decoupled weight decay, bias-corrected moments). As in LibTorch's AdamW
    // a parameter without a gradient is left alone: no decay, and its step count stays.
    // Parameters of a muon group take Muon's step instead (Moonlight's form): M <- mu M + G,
    // O = newtonSchulz5(G + mu M) per row block, W <- W(1 - lr wd) - lr muonScale O; their
    // momentum M lives in the exp_avg slot (exp_avg_sq stays 0), so a checkpoint keeps one
    // format. All on the device (no host reads): a captured CUDA graph replays it too.
    void step();
    // Global L2 norm of what the last step() added to the parameters, ||theta' - theta||
    // (weight decay and the Adam step together), as a 0-dim float64 device tensor: the
    // observable that leads a loss spike when the update, not the gradient, blows up.
    const torch::Tensor& lastUpdateNorm() const { return m_updateNorm; }
    // optim.quack: the (rows, 1) float64 LR multipliers parameter i stepped with last (ones
    // where no pair reaches; undefined for a parameter QuacK leaves alone). For the tests.
    const torch::Tensor& quackRowScale(size_t paramIndex) const {
        return m_rowScale.at(paramIndex);
    }

    void save(torch::serialize::OutputArchive& archive) const;
    void load(torch::serialize::InputArchive& archive);
    // Moments and step counts from a LibTorch AdamW's archive (optimizer->save) over the same
    // parameters in the same group order: checkpoints written before DeviceAdamW existed.
    // Read directly, not through LibTorch's loader, which cannot read another version's keys
    // (1.13 names each state by the parameter's address in hex, 2.x in decimal).
    void importLibTorchAdamW(torch::serialize::InputArchive& archive);

    int64_t stepCount(size_t paramIndex) const;  // reads back: for tests and checkpoints only

  private:
    torch::Tensor activeMask(const std::vector<bool>& active);
    // Each appends the squared norm of every parameter's update it made.
    void perParameterStep(const std::vector<bool>& active, std::vector<torch::Tensor>& squared);
    void fusedStep(const std::vector<bool>& active, std::vector<torch::Tensor>& squared);
    void muonStep(const std::vector<bool>& active, std::vector<torch::Tensor>& squared);
    void attachQuack(std::vector<QuackPair> pairs);
    void updateQuackScales();  // every pair's multipliers from the weights before this step

    std::vector<torch::Tensor> m_params, m_expAvg, m_expAvgSq;
    std::vector<torch::Tensor> m_before;  // fused: each parameter before the step (update norm)
    std::vector<double> m_weightDecay;
    std::vector<bool> m_muon;          // per parameter: Muon's step, not AdamW's
    std::vector<int64_t> m_rowBlocks;  // Muon: row blocks orthogonalised separately
    std::vector<double> m_muonScale;   // Muon: 0.2 sqrt(max(A, B)) of one row block
    MuonSettings m_muonSettings;
    std::vector<QuackPair> m_quack;
    std::vector<std::array<size_t, 2>> m_quackIndex;  // per pair: its query's, its key's param
    std::vector<torch::Tensor> m_rowScale;  // per parameter: QuacK's (rows, 1), or undefined
    double m_beta1, m_beta2, m_eps;
    bool m_fused;
    torch::Tensor m_lr;       // 0-dim float64
    torch::Tensor m_lrFloat;  // fused: 0-dim float32 (the CUDA kernel reads the LR as a float)
    // (P) step count per parameter: float64, or float32 when fused (the kernel's state_steps
    // are float32 views of it); saved as float64 either way.
    torch::Tensor m_steps;
    torch::Tensor m_decayRates;                          // (P) float64: weight decay per parameter
    std::map<std::vector<bool>, torch::Tensor> m_masks;  // which parameters step, as 0/1
    torch::Tensor m_updateNorm;                          // 0-dim float64, of the last step
};

// Global L2 norm of the gradients, then every gradient scaled by min(1, maxNorm / (norm +
// 1e-6)), exactly as torch::nn::utils::clip_grad_norm_, but the norm stays a 0-dim device
// tensor. maxNorm = infinity only measures. Parameters without gradients are skipped.
torch::Tensor clipGradNorm(const std::vector<torch::Tensor>& params, double maxNorm);

}  // namespace qklab
