// output_gate_test.cpp — attention.gate (gated attention, Qwen; issue 41): the gate against
// sigmoid values worked out by hand, headwise and elementwise; gated MHA and MLA models train
// to finite losses with the gate's parameters counted; and a gated run stopped and resumed
// trains exactly as one that never stopped (the gate is in the checkpoint).
#include "engine/src/output_gate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "qklab/engine/trainer.h"
#include "support/resume_pair.h"
#include "support/tiny_config.h"

using namespace qklab;

namespace {

double sigmoid(double z) {
    return 1.0 / (1.0 + std::exp(-z));
}

// One token (B = T = 1), d_model 4, 2 heads of 2; every output y = 1, so the gated output is
// the gate itself.
torch::Tensor onesOutput() {
    return torch::ones({1, 2, 1, 2});  // (B, H, T, d_head)
}

}  // namespace

TEST(OutputGate, HeadwiseIsOneSigmoidPerHeadOfTheInput) {
    OutputGate gate(AttentionGate::Headwise, 4, 2, 2);
    torch::NoGradGuard noGrad;
    // W_g rows: head 0 reads 2 x0, head 1 reads -1 x1 + 0.5 x3.
    gate->weight()->weight.copy_(torch::tensor({{2.0, 0.0, 0.0, 0.0}, {0.0, -1.0, 0.0, 0.5}}));
    const auto x = torch::tensor({1.0, 3.0, 7.0, 2.0}).view({1, 1, 4});
    const auto y = gate(onesOutput(), x);
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{1, 2, 1, 2}));
    for (int64_t d = 0; d < 2; ++d) {
        EXPECT_NEAR(y[0][0][0][d].item<double>(), sigmoid(2.0), 1e-6);         // 0.880797
        EXPECT_NEAR(y[0][1][0][d].item<double>(), sigmoid(-3.0 + 1.0), 1e-6);  // 0.119203
    }
}

TEST(OutputGate, ElementwiseIsOneSigmoidPerChannelInHeadOrder) {
    OutputGate gate(AttentionGate::Elementwise, 4, 2, 2);
    torch::NoGradGuard noGrad;
    // Channel c of the output reads (c + 1) x0 - x1: with x = (1, 2, ...) gates at -1, 0, 1, 2;
    // channels 0-1 are head 0's, 2-3 head 1's.
    gate->weight()->weight.copy_(torch::tensor({{1.0, -1.0, 0.0, 0.0},
                                                {2.0, -1.0, 0.0, 0.0},
                                                {3.0, -1.0, 0.0, 0.0},
                                                {4.0, -1.0, 0.0, 0.0}}));
    const auto x = torch::tensor({1.0, 2.0, 5.0, 5.0}).view({1, 1, 4});
    const auto y = gate(onesOutput() * 3.0, x);
    EXPECT_NEAR(y[0][0][0][0].item<double>(), 3 * sigmoid(-1.0), 1e-6);
    EXPECT_NEAR(y[0][0][0][1].item<double>(), 3 * sigmoid(0.0), 1e-6);
    EXPECT_NEAR(y[0][1][0][0].item<double>(), 3 * sigmoid(1.0), 1e-6);
    EXPECT_NEAR(y[0][1][0][1].item<double>(), 3 * sigmoid(2.0), 1e-6);
}

// d_model 32, 2 heads, 1 layer: the gate adds 32 x 2 (headwise) or 32 x 32 (elementwise)
// weights to each layer, under MHA and MLA, and the run trains to finite losses.
TEST(OutputGate, GatedMhaAndMlaTrainWithTheGateCounted) {
    for (const AttentionKind kind : {AttentionKind::Mha, AttentionKind::Mla}) {
        RunConfig c = testsupport::tinyRunConfig(6);
        c.attention.kind = kind;
        c.attention.mla.dC = 16;
        c.attention.mla.dRope = 8;
        const int64_t plain = Trainer(c).parameterCount();
        c.attention.gate = AttentionGate::Headwise;
        EXPECT_EQ(Trainer(c).parameterCount(), plain + 32 * 2) << nameOf(kind);
        c.attention.gate = AttentionGate::Elementwise;
        Trainer t(c);
        EXPECT_EQ(t.parameterCount(), plain + 32 * 32) << nameOf(kind);
        testsupport::expectTrainsToAFiniteLoss(t, nameOf(kind));
    }
}

TEST(OutputGate, AGatedRunResumesToTheSameLosses) {
    RunConfig c = testsupport::tinyRunConfig(16);
    c.attention.gate = AttentionGate::Elementwise;
    const testsupport::ResumePair r = testsupport::trainedWholeAndResumed(c, 7);
    testsupport::expectResumedEqualsWhole(r, 16);
}
