// muon_test.cpp — optim.kind = muon (issue 41, Moonlight's Muon as Kimi K2 trains): the
// Newton-Schulz iteration against the same iteration in fp64 and the singular values it ends
// with; one Muon step against its formula in fp64 (momentum, Nesterov, the 0.2 sqrt(max(A, B))
// scale, decoupled decay, row blocks); which parameters Muon takes under MHA and MLA; and a
// Muon run that trains, resumes bit for bit, and clips with QK-Clip (MuonClip).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/src/device_optim.h"
#include "engine/src/model.h"
#include "qklab/engine/run_session.h"
#include "qklab/engine/trainer.h"
#include "qklab/store/run_store.h"
#include "support/resume_pair.h"
#include "support/test_files.h"
#include "support/tiny_config.h"

using namespace qklab;

namespace {

// The quintic iteration written out in fp64, on the wide side of a 2-D matrix.
torch::Tensor newtonSchulzFp64(torch::Tensor g, int64_t steps) {
    const bool tall = g.size(0) > g.size(1);
    auto x = g.to(torch::kFloat64);
    if (tall) x = x.t();
    x = x / (x.norm() + 1e-7);
    for (int64_t k = 0; k < steps; ++k) {
        const auto a = x.mm(x.t());
        x = 3.4445 * x + (-4.7750 * a + 2.0315 * a.mm(a)).mm(x);
    }
    return tall ? x.t() : x;
}

// A 16 x 32 matrix whose singular values run from 1 down to 1e-2, log-spaced.
torch::Tensor spreadMatrix() {
    torch::manual_seed(3);
    const auto u = std::get<0>(torch::linalg_qr(torch::randn({16, 16}, torch::kFloat64)));
    const auto v = std::get<0>(torch::linalg_qr(torch::randn({32, 16}, torch::kFloat64)));
    const auto s = torch::logspace(0, -2, 16, 10, torch::kFloat64);
    return u.mm(torch::diag(s)).mm(v.t());
}

torch::Tensor singularValues(const torch::Tensor& m) {
    return torch::linalg_svdvals(m.to(torch::kFloat64));
}

}  // namespace

TEST(Muon, NewtonSchulzIsTheQuinticIterationAndEndsInItsBand) {
    const auto g = spreadMatrix();
    const auto in = singularValues(g);
    EXPECT_GT(in.max().item<double>() / in.min().item<double>(), 99.0);  // two orders apart
    const auto out = newtonSchulz5(g.to(torch::kFloat32), 5);
    ASSERT_EQ(out.scalar_type(), torch::kFloat32);
    EXPECT_LT((out.to(torch::kFloat64) - newtonSchulzFp64(g, 5)).abs().max().item<double>(), 1e-5);
    // The quintic's limit cycle spans [0.682, 1.134]: the iteration does not converge to 1.
    const auto sv = singularValues(out);
    EXPECT_GT(sv.min().item<double>(), 0.675);
    EXPECT_LT(sv.max().item<double>(), 1.14);
    // Tall: the transpose of its transpose's result. Batched: each matrix on its own.
    const auto f = g.to(torch::kFloat32);
    EXPECT_TRUE(torch::allclose(newtonSchulz5(f.t().contiguous(), 5), out.t(), 0, 1e-6));
    const auto batch = newtonSchulz5(torch::stack({f, 3 * f.flip(0)}), 5);
    EXPECT_TRUE(torch::allclose(batch[0], out, 0, 1e-6));
    EXPECT_TRUE(torch::allclose(batch[1], newtonSchulz5(3 * f.flip(0), 5), 0, 1e-6));
}

// Two Muon steps on a 4 x 6 matrix (so that the second has momentum), as two row blocks of
// 2 x 6 or as one matrix, against M <- mu M + G, U = G + mu M, W <- W (1 - lr wd) - lr 0.2
// sqrt(max(A, B)) NS(U), in fp64.
TEST(Muon, AStepIsMoonlightsFormula) {
    const double lr = 0.05, wd = 0.1, mu = 0.9;
    for (const int64_t blocks : {int64_t{1}, int64_t{2}}) {
        torch::manual_seed(5);
        const auto w0 = torch::randn({4, 6}, torch::kFloat64);
        const std::vector<torch::Tensor> grads{torch::randn({4, 6}, torch::kFloat64),
                                               torch::randn({4, 6}, torch::kFloat64)};
        auto w = w0.to(torch::kFloat32).requires_grad_();
        DeviceAdamW opt({{{w}, wd, /*muon=*/true, {blocks}}}, 0.9, 0.95, 1e-8, false,
                        MuonSettings{mu, 5});
        opt.setLr(lr);
        auto expected = w0.clone(), momentum = torch::zeros_like(w0);
        const double scale = 0.2 * std::sqrt(6.0);  // max(4 / blocks, 6) = 6
        EXPECT_DOUBLE_EQ(muonScale(4 / blocks, 6), scale);
        for (const auto& g : grads) {
            w.mutable_grad() = g.to(torch::kFloat32);
            opt.step();
            momentum = mu * momentum + g;
            const auto u = (g + mu * momentum).view({blocks, 4 / blocks, 6});
            std::vector<torch::Tensor> parts;
            for (int64_t b = 0; b < blocks; ++b) parts.push_back(newtonSchulzFp64(u[b], 5));
            const auto before = expected.clone();
            expected = expected * (1 - lr * wd) - lr * scale * torch::cat(parts).view({4, 6});
            EXPECT_NEAR(opt.lastUpdateNorm().item<double>(),
                        (expected - before).norm().item<double>(), 1e-5);
        }
        EXPECT_LT((w.detach().to(torch::kFloat64) - expected).abs().max().item<double>(), 1e-5)
            << blocks << " blocks";
        EXPECT_EQ(opt.stepCount(0), 2);
    }
}

// Muon takes every 2-D weight inside the blocks; AdamW the embeddings, the LM head, the norms
// and the gains; MHA's fused qkv is three row blocks.
TEST(Muon, TakesTheBlocksHiddenMatricesUnderMhaAndMla) {
    RunConfig c = testsupport::tinyRunConfig(4);
    c.attention.gate = AttentionGate::Headwise;
    Transformer mha(c);
    auto split = mha->muonSplit();
    EXPECT_EQ(split.names,
              (std::vector<std::string>{"block0.attn.qkv.weight", "block0.attn.proj.weight",
                                        "block0.attn.gate.w.weight", "block0.fc.weight",
                                        "block0.out.weight"}));
    EXPECT_EQ(split.rowBlocks, (std::vector<int64_t>{3, 1, 1, 1, 1}));
    EXPECT_EQ(split.adamw.size(), 2u);  // tokens.weight, head.weight
    EXPECT_EQ(split.hidden.size() + split.adamw.size(), mha->decayedParameters().size());

    c.attention.kind = AttentionKind::Mla;
    c.attention.gate = AttentionGate::None;
    c.attention.mla.dC = 16;
    c.attention.mla.dRope = 8;
    c.attention.mla.qLora = 8;
    Transformer mla(c);
    split = mla->muonSplit();
    EXPECT_EQ(
        split.names,
        (std::vector<std::string>{
            "block0.attn.kv_down.weight", "block0.attn.k_up.weight", "block0.attn.v_up.weight",
            "block0.attn.k_rope.weight", "block0.attn.q_down.weight", "block0.attn.q_up.weight",
            "block0.attn.proj.weight", "block0.fc.weight", "block0.out.weight"}));
    EXPECT_EQ(split.rowBlocks, std::vector<int64_t>(9, 1));
    EXPECT_EQ(split.adamw.size(), 2u);
    EXPECT_EQ(split.hidden.size() + split.adamw.size(), mla->decayedParameters().size());
}

TEST(Muon, ATinyRunTrainsWithFallingLossPerParameterAndFused) {
    std::vector<bool> fusedModes{false};
    if (kHaveFusedAdamW) fusedModes.push_back(true);
    for (const bool fused : fusedModes) {
        RunConfig c = testsupport::tinyRunConfig(30);
        c.optim.kind = OptimKind::Muon;
        c.optim.fused = fused ? AutoSwitch::On : AutoSwitch::Off;
        c.probes.every = 0;
        c.eval.every = 0;
        struct Losses : TrainingObserver {
            std::vector<double> loss;
            void onStep(const StepMetrics& m) override { loss.push_back(m.loss); }
        } losses;
        Trainer trainer(c);
        // The run's description (stored with it, printed by the CLI) names both optimizers.
        EXPECT_NE(trainer.deviceDescription().find(fused ? ", Muon + fused AdamW"
                                                         : ", Muon + per-parameter AdamW"),
                  std::string::npos)
            << trainer.deviceDescription();
        EXPECT_EQ(trainer.run(losses).status, RunStatus::Finished);
        ASSERT_EQ(losses.loss.size(), 30u);
        for (const double l : losses.loss) {
            EXPECT_TRUE(std::isfinite(l)) << "fused " << fused;
        }
        EXPECT_LT(losses.loss.back(), losses.loss.front() - 0.5) << "fused " << fused;
    }
}

TEST(Muon, AStoppedAndResumedRunEqualsAnUninterruptedOne) {
    RunConfig c = testsupport::tinyRunConfig(16);
    c.optim.kind = OptimKind::Muon;
    const testsupport::ResumePair r = testsupport::trainedWholeAndResumed(c, 7);
    testsupport::expectResumedEqualsWhole(r, 16);
}

// MuonClip: QK-Clip after each Muon step. A tau this small needs clipping within a few steps.
TEST(Muon, WithQkClipItClipsAndRecordsTheClips) {
    RunConfig c = testsupport::tinyRunConfig(20);
    c.optim.kind = OptimKind::Muon;
    c.optim.lr = 3e-2;
    c.attention.qkClip.tau = 0.1;
    const auto dir = testsupport::scratchDir("muon-clip");
    const std::string db = (dir / "runs.db").string();
    int64_t id = 0;
    {
        RunSession session(c, SessionOptions{db, "muon_clip", {}});
        id = session.runId();
        EXPECT_EQ(session.run().status, RunStatus::Finished);
    }
    RunStore store(db);
    const auto clips = store.qkClips(id);
    ASSERT_FALSE(clips.empty());
    for (const auto& clip : clips) {
        EXPECT_GT(clip.sMax, 0.1);
        EXPECT_NEAR(clip.factor, std::sqrt(0.1 / clip.sMax), 1e-12);
    }
    std::filesystem::remove_all(dir);
}
