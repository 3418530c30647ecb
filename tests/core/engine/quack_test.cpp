// quack_test.cpp — optim.quack (issue 41, QuacK, arXiv 2511.21377): the per-head LR
// multipliers against norms computed by hand in fp64 under MHA and MLA (with and without
// q_lora); one AdamW step of W_q and W_k against AdamW's first step at the predicted scaled LR,
// the multipliers recomputed from the weights every step; Muon's step scaled row by row; the
// parameters QuacK leaves alone stepping bit for bit as without it; runs that train (AdamW per
// parameter and fused, Muon, MHA and MLA) and resume bit for bit; the refusal with sigmaReparam.
// Off, the optimizer is the one tests/core/engine/optim_test.cpp holds to LibTorch's AdamW bit
// for bit (the trainer builds it without pairs).
#include "engine/src/quack.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/src/device_optim.h"
#include "engine/src/model.h"
#include "qklab/engine/trainer.h"
#include "support/resume_pair.h"
#include "support/tiny_config.h"

using namespace qklab;

namespace {

RunConfig mlaConfig(int64_t steps, int64_t qLora) {
    RunConfig c = testsupport::tinyRunConfig(steps);
    c.attention.kind = AttentionKind::Mla;
    c.attention.mla.dC = 16;
    c.attention.mla.dRope = 8;
    c.attention.mla.qLora = qLora;
    return c;
}

// ||rows [first, first + n) of w||_F in fp64.
double rowsNorm(const torch::Tensor& w, int64_t first, int64_t n) {
    return w.detach().narrow(0, first, n).to(torch::kFloat64).norm().item<double>();
}

// The multiplier every row of every QuacK weight should get, by hand from the weights: a map
// from the parameter to its (rows) expected scale, 1 where no pair reaches.
struct Expected {
    torch::Tensor weight, scale;
};

std::vector<Expected> handScalesMha(TransformerImpl& m, const RunConfig& c) {
    const int64_t H = c.model.nHeads, D = c.dHead(), C = c.model.dModel;
    const auto w = m.block(0)->attn->named_parameters()["qkv.weight"];
    const double ref = c.model.initStd * std::sqrt(double(D * C));  // same shape both sides
    auto scale = torch::ones({3 * C}, torch::kFloat64);
    for (int64_t h = 0; h < H; ++h) {
        scale.narrow(0, h * D, D).fill_(ref / rowsNorm(w, C + h * D, D));  // q rows: 1/||W_K,h||
        scale.narrow(0, C + h * D, D).fill_(ref / rowsNorm(w, h * D, D));  // k rows: 1/||W_Q,h||
    }
    return {{w, scale}};
}

std::vector<Expected> handScalesMla(TransformerImpl& m, const RunConfig& c) {
    const int64_t H = c.model.nHeads, D = c.dHead(), R = c.attention.mla.dRope;
    const int64_t C = c.model.dModel, dC = c.attention.mla.dC, qIn = c.attention.mla.qLora;
    auto params = m.block(0)->attn->named_parameters();
    const auto wq = params[qIn > 0 ? "q_up.weight" : "q.weight"];
    const auto kUp = params["k_up.weight"], kRope = params["k_rope.weight"];
    const double s = c.model.initStd;
    const double refQc = s * std::sqrt(double(D * (qIn > 0 ? qIn : C)));
    const double refQr = s * std::sqrt(double(R * (qIn > 0 ? qIn : C)));
    const double refUk = s * std::sqrt(double(D * dC)), refKr = s * std::sqrt(double(R * C));
    auto q = torch::ones({H * (D + R)}, torch::kFloat64), k = torch::ones({H * D}, torch::kFloat64);
    double maxRope = 0;
    for (int64_t h = 0; h < H; ++h) {
        const int64_t row = h * (D + R);
        q.narrow(0, row, D).fill_(refUk / rowsNorm(kUp, h * D, D));
        q.narrow(0, row + D, R).fill_(refKr / rowsNorm(kRope, 0, R));
        k.narrow(0, h * D, D).fill_(refQc / rowsNorm(wq, row, D));
        maxRope = std::max(maxRope, rowsNorm(wq, row + D, R));
    }
    return {{wq, q}, {kUp, k}, {kRope, torch::full({R}, refQr / maxRope, torch::kFloat64)}};
}

std::vector<Expected> handScales(TransformerImpl& m, const RunConfig& c) {
    return c.attention.kind == AttentionKind::Mla ? handScalesMla(m, c) : handScalesMha(m, c);
}

// The index of `w` among `params`.
size_t indexOf(const std::vector<torch::Tensor>& params, const torch::Tensor& w) {
    size_t i = 0;
    while (i < params.size() && !params[i].is_same(w)) ++i;
    return i;
}

std::vector<RunConfig> kinds() {
    return {testsupport::tinyRunConfig(4), mlaConfig(4, 0), mlaConfig(4, 8)};
}

}  // namespace

TEST(Quack, TheMultipliersAreTheOtherSidesInverseNormsTimesItsInitNorm) {
    for (const RunConfig& c : kinds()) {
        Transformer m(c);
        const auto pairs = m->quackPairs(c.model.initStd);
        EXPECT_EQ(pairs.size(), c.attention.kind == AttentionKind::Mla ? 2u : 1u);
        auto params = m->decayedParameters();
        DeviceAdamW opt({{params, 0.0}}, 0.9, 0.95, 1e-8, false, {}, pairs);
        for (auto& p : params) p.mutable_grad() = torch::zeros_like(p);
        opt.step();  // zero gradients: the multipliers are computed, the weights keep still
        for (const Expected& e : handScales(*m, c)) {
            const auto got = opt.quackRowScale(indexOf(params, e.weight)).view({-1});
            EXPECT_LT((got - e.scale).abs().max().item<double>(), 1e-12)
                << nameOf(c.attention.kind);
            // At init each side's norm is near the init norm its rho assumes.
            EXPECT_GT(got.min().item<double>(), 0.8);
            EXPECT_LT(got.max().item<double>(), 1.25);
        }
        // QuacK leaves the down projections, the values and the MLP alone.
        const std::vector<std::string> reached{"block0.attn.qkv.weight", "block0.attn.q.weight",
                                               "block0.attn.q_up.weight", "block0.attn.k_up.weight",
                                               "block0.attn.k_rope.weight"};
        for (const auto& item : m->named_parameters()) {
            const size_t i = indexOf(params, item.value());
            if (i == params.size()) continue;
            const bool expected =
                std::find(reached.begin(), reached.end(), item.key()) != reached.end();
            EXPECT_EQ(opt.quackRowScale(i).defined(), expected) << item.key();
        }
    }
}

// The first AdamW step is W (1 - lr' wd) - lr' g / (|g| + eps) (m^ = g, v^ = g^2), with
// lr' = lr x the row's multiplier from the weights before the step; the second step's
// multipliers come from the weights after the first.
TEST(Quack, AnAdamWStepIsAdamWsAtThePredictedScaledLr) {
    const double lr = 0.01, wd = 0.1, eps = 1e-8;
    for (const RunConfig& c : kinds()) {
        Transformer m(c);
        auto params = m->decayedParameters();
        const auto before = handScales(*m, c);
        std::vector<torch::Tensor> w0;
        for (const auto& e : before) w0.push_back(e.weight.detach().to(torch::kFloat64));
        DeviceAdamW opt({{params, wd}}, 0.9, 0.95, eps, false, {}, m->quackPairs(c.model.initStd));
        opt.setLr(lr);
        torch::manual_seed(11);
        for (auto& p : params) p.mutable_grad() = torch::randn_like(p);
        opt.step();
        for (size_t j = 0; j < before.size(); ++j) {
            const auto& e = before[j];
            const auto g = e.weight.grad().to(torch::kFloat64);
            const auto rowLr = (lr * e.scale).view({-1, 1});
            const auto expected = w0[j] * (1 - rowLr * wd) - rowLr * g / (g.abs() + eps);
            EXPECT_LT((e.weight.detach().to(torch::kFloat64) - expected).abs().max().item<double>(),
                      5e-8)
                << nameOf(c.attention.kind) << " weight " << j;
        }
        // The same gradients again: the multipliers follow the weights the first step left.
        const auto between = handScales(*m, c);
        opt.step();
        for (size_t j = 0; j < between.size(); ++j) {
            const auto got = opt.quackRowScale(indexOf(params, between[j].weight)).view({-1});
            EXPECT_LT((got - between[j].scale).abs().max().item<double>(), 1e-12);
            EXPECT_GT((got - before[j].scale).abs().max().item<double>(), 1e-4);
        }
    }
}

// Muon's update row by row times the multipliers (no decay: the two runs share every input).
TEST(Quack, AMuonStepIsScaledRowByRow) {
    const RunConfig c = testsupport::tinyRunConfig(4);
    Transformer a(c), b(c);
    auto pa = a->muonSplit(), pb = b->muonSplit();
    const auto w0 = pa.hidden[0].detach().clone();  // block0.attn.qkv.weight
    ASSERT_TRUE(torch::equal(w0, pb.hidden[0]));
    torch::manual_seed(12);
    for (size_t i = 0; i < pa.hidden.size(); ++i) {
        pa.hidden[i].mutable_grad() = torch::randn_like(pa.hidden[i]);
        pb.hidden[i].mutable_grad() = pa.hidden[i].grad().clone();
    }
    const auto scale = handScales(*b, c)[0].scale.view({-1, 1});
    DeviceAdamW plain({{pa.hidden, 0.0, true, pa.rowBlocks}}, 0.9, 0.95, 1e-8);
    DeviceAdamW quack({{pb.hidden, 0.0, true, pb.rowBlocks}}, 0.9, 0.95, 1e-8, false, {},
                      b->quackPairs(c.model.initStd));
    plain.setLr(0.02);
    quack.setLr(0.02);
    plain.step();
    quack.step();
    const auto dPlain = (pa.hidden[0].detach() - w0).to(torch::kFloat64);
    const auto dQuack = (pb.hidden[0].detach() - w0).to(torch::kFloat64);
    EXPECT_LT((dQuack - scale * dPlain).abs().max().item<double>(), 2e-8);
    EXPECT_GT(dPlain.abs().max().item<double>(), 1e-3);  // it did step
    for (size_t i = 1; i < pa.hidden.size(); ++i)        // the rest: Muon's step bit for bit
        EXPECT_TRUE(torch::equal(pa.hidden[i], pb.hidden[i])) << pa.names[i];
}

// Parameters no pair reaches step exactly as without QuacK, fused or not; unfused, so do the
// rows of a reached one whose multiplier is 1 (fused, that parameter leaves the kernel).
TEST(Quack, TheOtherParametersStepBitForBitAsWithoutIt) {
    std::vector<bool> fusedModes{false};
    if (kHaveFusedAdamW) fusedModes.push_back(true);
    for (const bool fused : fusedModes) {
        const RunConfig c = testsupport::tinyRunConfig(4);
        Transformer a(c), b(c);
        auto pa = a->decayedParameters(), pb = b->decayedParameters();
        torch::manual_seed(13);
        for (size_t i = 0; i < pa.size(); ++i) {
            pa[i].mutable_grad() = torch::randn_like(pa[i]);
            pb[i].mutable_grad() = pa[i].grad().clone();
        }
        DeviceAdamW plain({{pa, 0.1}}, 0.9, 0.95, 1e-8, fused);
        DeviceAdamW quack({{pb, 0.1}}, 0.9, 0.95, 1e-8, fused, {}, b->quackPairs(0.02));
        plain.setLr(0.01);
        quack.setLr(0.01);
        plain.step();
        quack.step();
        const auto qkv = b->block(0)->attn->named_parameters()["qkv.weight"];
        const int64_t C = c.model.dModel;
        for (size_t i = 0; i < pa.size(); ++i) {
            if (pb[i].is_same(qkv)) {  // its v rows have multiplier 1
                if (!fused) {
                    EXPECT_TRUE(torch::equal(pa[i].narrow(0, 2 * C, C), pb[i].narrow(0, 2 * C, C)));
                }
                EXPECT_FALSE(torch::equal(pa[i], pb[i]));
                continue;
            }
            EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i << " fused " << fused;
        }
    }
}

TEST(Quack, TinyRunsTrainUnderMhaAndMlaWithAdamWFusedAndMuon) {
    std::vector<RunConfig> configs;
    for (RunConfig c : {testsupport::tinyRunConfig(12), mlaConfig(12, 8)}) {
        c.optim.quack = true;
        configs.push_back(c);
        c.optim.kind = OptimKind::Muon;
        configs.push_back(c);
        c.optim.kind = OptimKind::AdamW;
        if (!kHaveFusedAdamW) continue;
        c.optim.fused = AutoSwitch::On;
        configs.push_back(c);
    }
    for (const RunConfig& c : configs) {
        ASSERT_TRUE(validationProblems(c).empty());
        Trainer t(c);
        testsupport::expectTrainsToAFiniteLoss(
            t, std::string(nameOf(c.attention.kind)) + " " + nameOf(c.optim.kind));
    }
}

// QuacK keeps no state: the multipliers come from the weights, which the checkpoint holds.
TEST(Quack, AStoppedAndResumedRunEqualsAnUninterruptedOne) {
    for (RunConfig c : {testsupport::tinyRunConfig(16), mlaConfig(16, 0)}) {
        c.optim.quack = true;
        const testsupport::ResumePair r = testsupport::trainedWholeAndResumed(c, 7);
        testsupport::expectResumedEqualsWhole(r, 16);
    }
}

TEST(Quack, IsRefusedWithSigmaReparam) {
    RunConfig c = testsupport::tinyRunConfig(4);
    c.optim.quack = true;
    EXPECT_TRUE(validationProblems(c).empty());
    c.attention.sigmaReparam = SigmaReparamScope::Attention;
    const auto problems = validationProblems(c);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("optim.quack"), std::string::npos) << problems[0];
    EXPECT_NE(problems[0].find("attention.sigma_reparam"), std::string::npos) << problems[0];
}
