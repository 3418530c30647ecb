// sigma_reparam_test.cpp — attention.sigma_reparam (sigmaReparam, Zhai et al. 2023; issue 41):
// the power iteration against an SVD and against its formula worked out in fp64, the effective
// weight gamma / sigma * W, which forwards update u and v, the parameters each scope adds under
// MHA and MLA, gamma out of weight decay, a tiny run and a resumed run, the same initial weights
// as without it, and QK-Clip refused with it.
#include "engine/src/sigma_reparam.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/src/model.h"
#include "qklab/engine/trainer.h"
#include "support/resume_pair.h"
#include "support/tiny_config.h"

using namespace qklab;

namespace {

const auto kF64 = torch::TensorOptions().dtype(torch::kFloat64);

// A (rows, cols) float64 matrix U diag(s) V^T with the singular values `s`, U and V orthonormal
// columns from the QR of fixed random matrices.
torch::Tensor withSingularValues(int64_t rows, int64_t cols, const std::vector<double>& s,
                                 uint64_t seed) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    const auto k = static_cast<int64_t>(s.size());
    auto a = torch::empty({rows, k}, kF64).normal_(0.0, 1.0, gen);
    auto b = torch::empty({cols, k}, kF64).normal_(0.0, 1.0, gen);
    auto U = std::get<0>(torch::linalg_qr(a)), V = std::get<0>(torch::linalg_qr(b));
    return torch::matmul(U * torch::tensor(s, kF64), V.transpose(0, 1));
}

}  // namespace

// sigma = u^T W v after n power steps from a fixed start is the SVD's top singular value, per
// slice of a weight read as two matrices (as W_qkv is read as three).
TEST(SigmaReparam, PowerIterationConvergesToTheTopSingularValue) {
    const auto w = torch::cat({withSingularValues(4, 3, {3.0, 1.5, 0.5}, 1),
                               withSingularValues(4, 3, {2.0, 1.0, 0.25}, 2)});
    SpectralReparam sr(w, 2);
    torch::Tensor sigma;
    for (int step = 0; step < 40; ++step) sigma = sr->sigma(/*store=*/true);
    const auto top = torch::linalg_svdvals(w.view({2, 4, 3})).select(1, 0);
    EXPECT_NEAR(top[0].item<double>(), 3.0, 1e-12);
    EXPECT_NEAR(top[1].item<double>(), 2.0, 1e-12);
    EXPECT_NEAR(sigma[0].item<double>(), top[0].item<double>(), 1e-12);
    EXPECT_NEAR(sigma[1].item<double>(), top[1].item<double>(), 1e-12);
}

// One stored step: v = W^T u / |W^T u|, u' = W v / |W v|, sigma = u'^T W v, by hand in fp64.
TEST(SigmaReparam, OneStepIsTheFormula) {
    const auto w = torch::tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, -6.0}}, kF64);
    SpectralReparam sr(w);
    const std::vector<double> u0{1.0 / std::sqrt(2.0), 0.0, 1.0 / std::sqrt(2.0)};
    sr->u().copy_(torch::tensor(u0, kF64).view({1, 3}));
    const double W[3][2] = {{1, 2}, {3, 4}, {5, -6}};
    double v[2] = {0, 0}, u[3] = {0, 0, 0};
    for (int j = 0; j < 2; ++j)
        for (int i = 0; i < 3; ++i) v[j] += W[i][j] * u0[i];
    const double nv = std::hypot(v[0], v[1]);
    for (double& x : v) x /= nv;  // (6, -4) / |.| = (0.83205, -0.55470)
    for (int i = 0; i < 3; ++i) u[i] = W[i][0] * v[0] + W[i][1] * v[1];
    const double nu = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    double sigma = 0;
    for (int i = 0; i < 3; ++i) {
        u[i] /= nu;
        sigma += u[i] * (W[i][0] * v[0] + W[i][1] * v[1]);
    }
    const double got = sr->sigma(/*store=*/true).item<double>();
    EXPECT_NEAR(got, sigma, 1e-14);
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(sr->v()[0][j].item<double>(), v[j], 1e-14);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(sr->u()[0][i].item<double>(), u[i], 1e-14);
}

// The effective weight is gamma / sigma * W per slice, sigma with gradient through W; an eval
// forward, or one without gradients, leaves u and v as they are; a training forward stores its
// step.
TEST(SigmaReparam, EffectiveWeightIsGammaOverSigmaTimesW) {
    auto w = withSingularValues(6, 3, {2.0, 1.0, 0.5}, 3).requires_grad_(true);
    SpectralReparam sr(w, 2);
    {
        torch::NoGradGuard noGrad;
        sr->gamma().copy_(torch::tensor({0.7, 1.3}, kF64));
    }
    const auto u0 = sr->u().clone(), v0 = sr->v().clone();
    sr->eval();
    const auto sigma = sr->sigma(false).detach();
    const auto got = sr->forward();
    EXPECT_TRUE(torch::equal(sr->u(), u0));
    EXPECT_TRUE(torch::equal(sr->v(), v0));
    const auto want = torch::cat({w.detach().narrow(0, 0, 3) * (0.7 / sigma[0].item<double>()),
                                  w.detach().narrow(0, 3, 3) * (1.3 / sigma[1].item<double>())});
    EXPECT_TRUE(torch::allclose(got.detach(), want, 1e-14, 1e-14));
    got.sum().backward();  // d/dgamma_s of sum(gamma_s / sigma_s * W_s) = sum(W_s) / sigma_s
    EXPECT_NEAR(sr->gamma().grad()[0].item<double>(),
                w.detach().narrow(0, 0, 3).sum().item<double>() / sigma[0].item<double>(), 1e-12);
    ASSERT_TRUE(w.grad().defined());
    sr->train();
    {
        torch::NoGradGuard noGrad;
        sr->forward();
    }
    EXPECT_TRUE(torch::equal(sr->u(), u0));
    sr->forward();
    EXPECT_FALSE(torch::equal(sr->u(), u0));
}

// At initialisation gamma is sigma(W) (the authors' PyTorch reference), so W^ starts near W.
TEST(SigmaReparam, TheInitialEffectiveWeightIsTheInitialWeight) {
    RunConfig c = testsupport::tinyRunConfig(1);
    c.attention.sigmaReparam = SigmaReparamScope::All;
    Transformer model(c);
    model->eval();
    int count = 0;
    for (const auto& module : model->modules(false)) {
        auto* sr = module->as<SpectralReparamImpl>();
        if (!sr) continue;
        ++count;
        torch::NoGradGuard noGrad;
        const auto ratio = sr->gamma() / sr->sigma(false);
        EXPECT_LT((ratio - 1).abs().max().item<double>(), 1e-3);
    }
    EXPECT_EQ(count, 4);  // qkv, proj, fc, out
}

// Parameters: one gamma per matrix (W_qkv counts three); u and v are buffers. MHA: q, k, v, o;
// MLA (d_rope > 0, full-rank queries): kv_down, k_up, v_up, k_rope, q, proj. all adds the MLP's
// two. The gammas are not decayed; the runs train to finite losses.
TEST(SigmaReparam, ParametersPerScopeAndTinyRunsTrain) {
    for (const AttentionKind kind : {AttentionKind::Mha, AttentionKind::Mla}) {
        RunConfig c = testsupport::tinyRunConfig(6);
        c.attention.kind = kind;
        c.attention.mla.dC = 16;
        c.attention.mla.dRope = 8;
        const int64_t plain = Trainer(c).parameterCount();
        const int64_t attention = kind == AttentionKind::Mha ? 4 : 6;
        c.attention.sigmaReparam = SigmaReparamScope::Attention;
        EXPECT_EQ(Trainer(c).parameterCount(), plain + attention) << nameOf(kind);
        c.attention.sigmaReparam = SigmaReparamScope::All;
        Transformer model(c);
        auto in = [](const std::vector<torch::Tensor>& list, const torch::Tensor& p) {
            for (const auto& q : list)
                if (q.is_same(p)) return true;
            return false;
        };
        int gammas = 0;
        for (auto& item : model->named_parameters()) {
            if (item.key().find("_sigma.gamma") == std::string::npos) continue;
            ++gammas;
            EXPECT_TRUE(in(model->undecayedParameters(), item.value())) << item.key();
            EXPECT_FALSE(in(model->decayedParameters(), item.value())) << item.key();
        }
        EXPECT_EQ(gammas, kind == AttentionKind::Mha ? 4 : 8);  // W_qkv's three in one tensor
        Trainer t(c);
        EXPECT_EQ(t.parameterCount(), plain + attention + 2) << nameOf(kind);
        testsupport::expectTrainsToAFiniteLoss(t, nameOf(kind));
    }
}

// u and v are in the checkpoint with gamma: stopped and resumed equals uninterrupted.
TEST(SigmaReparam, AReparameterisedRunResumesToTheSameLosses) {
    RunConfig c = testsupport::tinyRunConfig(16);
    c.attention.sigmaReparam = SigmaReparamScope::All;
    const testsupport::ResumePair r = testsupport::trainedWholeAndResumed(c, 7);
    testsupport::expectResumedEqualsWhole(r, 16);
}

// u and v are drawn after every other weight: the weights both runs have are the same.
TEST(SigmaReparam, TheOtherWeightsAreDrawnAsWithoutIt) {
    for (const AttentionKind kind : {AttentionKind::Mha, AttentionKind::Mla}) {
        RunConfig c = testsupport::tinyRunConfig(1);
        c.attention.kind = kind;
        c.attention.mla.dC = 16;
        c.attention.mla.dRope = 8;
        Transformer plain(c);
        c.attention.sigmaReparam = SigmaReparamScope::All;
        Transformer reparam(c);
        const auto mine = reparam->named_parameters();
        for (const auto& item : plain->named_parameters()) {
            ASSERT_NE(mine.find(item.key()), nullptr) << item.key();
            EXPECT_TRUE(torch::equal(item.value(), mine[item.key()])) << item.key();
        }
    }
}

TEST(SigmaReparam, QkClipIsRefusedWithIt) {
    RunConfig c = testsupport::tinyRunConfig(4);
    c.attention.sigmaReparam = SigmaReparamScope::Attention;
    EXPECT_TRUE(validationProblems(c).empty());
    c.attention.qkClip.tau = 100;
    auto problems = validationProblems(c);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("attention.qk_clip.tau"), std::string::npos) << problems[0];
    EXPECT_NE(problems[0].find("attention.sigma_reparam"), std::string::npos) << problems[0];
    c.attention.qkClip.tau = 0;
    Event e;
    e.step = 2;
    e.kind = EventKind::QkClip;
    e.args.tau = 50;
    c.events.push_back(e);
    problems = validationProblems(c);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("events[0].tau"), std::string::npos) << problems[0];
}
