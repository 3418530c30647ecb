// output_centring_test.cpp — optim.output_centring (output embedding centring, Stollenwerk et al.
// 2026; issue 41): mu, the mean row of the output embedding, sets the mean output logit mu . h.
// mu_centring: after one AdamW step the rows are the step's weights less their mean, by hand
// in fp64, whether the step runs eagerly or inside a (stand-in) CUDA graph; mu_loss: the loss
// and the gradient add lambda ||mu||^2 and 2 lambda mu / V per row; mu_norm is ||mu||; with it
// off a run is unchanged; both modes train, tied or not, and resume bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>

#include "engine/src/device_optim.h"
#include "engine/src/model.h"
#include "qklab/engine/trainer.h"
#include "support/optim_fixture.h"
#include "support/resume_pair.h"
#include "support/stand_in_graph.h"
#include "support/test_files.h"
#include "support/tiny_config.h"

using namespace qklab;

namespace {

const auto kF64 = torch::TensorOptions().dtype(torch::kFloat64);

torch::Tensor f64(const torch::Tensor& t) {
    return t.detach().to(torch::kFloat64);
}

torch::Tensor fixedTokens(const RunConfig& c) {
    torch::manual_seed(3);
    return torch::randint(0, 256, {2, c.model.seqLen}, torch::kInt64);
}

// The model a run left in its last checkpoint (step-<steps>.pt in `dir`).
Transformer trainedModel(const RunConfig& c, const std::string& dir) {
    {
        Trainer t(c);
        t.setCheckpointDir(dir);
        TrainingObserver quiet;
        EXPECT_EQ(t.run(quiet).status, RunStatus::Finished);
    }
    Transformer model(c);
    torch::serialize::InputArchive archive;
    archive.load_from(dir + "/step-" + std::to_string(c.schedule.steps) + ".pt");
    model->load(archive);
    return model;
}

}  // namespace

// One AdamW step from zero moments moves each weight by lr g / (|g| + eps) after the decoupled
// decay (the bias corrections cancel): W1 = W0 (1 - lr wd) - lr g / (|g| + eps). The centring
// leaves W1 - mean_rows(W1). Adam's sign-like step has a mean row far from 0 although the
// cross-entropy gradient's rows sum to 0: the anisotropy the paper traces the divergence to.
TEST(OutputCentring, OneStepLeavesTheAdamWStepLessItsMeanRow) {
    for (const bool tied : {false, true}) {
        SCOPED_TRACE(tied ? "tied" : "untied");
        RunConfig c = testsupport::tinyRunConfig(1);
        c.model.tieEmbeddings = tied;
        Transformer model(c);
        const double lr = 0.01, wd = 0.1, eps = 1e-8;
        DeviceAdamW opt({{model->decayedParameters(), wd}, {model->undecayedParameters(), 0.0}},
                        0.9, 0.95, eps, /*fused=*/false);
        opt.setLr(lr);
        const auto w0 = f64(model->outputEmbedding());
        const auto tokens = fixedTokens(c);
        model->forward(tokens, tokens.roll(-1, 1), testing_support::plainSwitches(c), nullptr)
            .loss.backward();
        const auto g = f64(model->outputEmbedding().grad());
        opt.step();
        const auto w1 = w0 * (1 - lr * wd) - lr * g / (g.abs() + eps);
        EXPECT_LT((f64(model->outputEmbedding()) - w1).abs().max().item<double>(), 1e-7);
        // The step's mean row: of at most lr sqrt(C) = 5.7 lr, when every row moves alike.
        EXPECT_GT((w1 - w0).mean(0).norm().item<double>(), 2 * lr);
        model->centreOutputEmbedding();
        const auto centred = f64(model->outputEmbedding());
        EXPECT_LT((centred - (w1 - w1.mean(0, true))).abs().max().item<double>(), 1e-7);
        EXPECT_LT(centred.mean(0).abs().max().item<double>(), 1e-8);  // fp32 rounding
    }
}

// Through the trainer: a one-step run with mu_centring ends with the one-step run without it
// less its mean row; every other weight is the same bit for bit.
TEST(OutputCentring, ARunCentresAfterItsUpdate) {
    const std::string dir = testsupport::scratchDir("output-centring").string();
    RunConfig c = testsupport::tinyRunConfig(1);
    c.schedule.warmupSteps = 0;
    c.eval.every = 0;
    c.probes.every = 0;
    Transformer plain = trainedModel(c, dir + "/plain");
    c.optim.outputCentring = OutputCentring::MuCentring;
    Transformer centred = trainedModel(c, dir + "/centred");
    const auto w = f64(plain->outputEmbedding());
    ASSERT_GT(w.mean(0).norm().item<double>(), 1e-4);
    EXPECT_LT((f64(centred->outputEmbedding()) - (w - w.mean(0, true))).abs().max().item<double>(),
              1e-7);
    const auto mine = centred->named_parameters();
    for (const auto& item : plain->named_parameters()) {
        if (item.key() == "head.weight") continue;
        EXPECT_TRUE(torch::equal(item.value(), mine[item.key()])) << item.key();
    }
    std::filesystem::remove_all(dir);
}

// A CUDA graph replays the step's body: the centring must be in it. The stand-in graph's run
// equals the eager run exactly, and mu_norm reads 0 to fp32 rounding after the first step.
TEST(OutputCentring, AGraphedStepCentresAsTheEagerStep) {
    using namespace testing_support;
    RunConfig c = smallConfig(20);
    c.run.readback = Readback::Deferred;
    c.optim.outputCentring = OutputCentring::MuCentring;
    auto run = [&c](bool graphed) {
        TrainerOptions options;
        auto counts = std::make_shared<GraphCounts>();
        if (graphed)
            options.stepGraphFactory = [counts] { return std::make_unique<StandInGraph>(counts); };
        Trainer t(c, options);
        LossRecorder r;
        EXPECT_EQ(t.run(r).status, RunStatus::Finished);
        if (graphed) {
            EXPECT_GT(counts->replays, 10);
        }
        return r;
    };
    const LossRecorder eager = run(false), graphed = run(true);
    expectSameReport(graphed, eager);
    EXPECT_GT(eager.steps[0].muNorm, 1e-4);  // the initial weights are not centred
    for (size_t i = 1; i < eager.steps.size(); ++i) EXPECT_LT(eager.steps[i].muNorm, 1e-6) << i;
}

// mu_loss adds lambda ||mu||^2 to the cross-entropy, mu the mean row (by hand in fp64), and to
// each row's gradient d/de_i lambda ||mu||^2 = 2 lambda mu / V; the token embedding's when tied.
// mu_norm is ||mu||.
TEST(OutputCentring, MuLossAddsLambdaMuSquaredAndItsGradient) {
    for (const bool tied : {false, true}) {
        SCOPED_TRACE(tied ? "tied" : "untied");
        RunConfig c = testsupport::tinyRunConfig(1);
        c.model.tieEmbeddings = tied;
        Transformer plain(c);
        c.optim.outputCentring = OutputCentring::MuLoss;
        c.optim.muLoss = 0.5;
        Transformer regularised(c);  // the same seed: the same weights
        {
            // A common offset of 0.1 makes ||mu||^2 about C / 100 = 0.32: a term far above the
            // fp32 rounding of the cross-entropy it is added to.
            torch::NoGradGuard noGrad;
            plain->outputEmbedding().add_(0.1);
            regularised->outputEmbedding().add_(0.1);
        }
        const auto tokens = fixedTokens(c);
        const auto sw = testing_support::plainSwitches(c);
        const auto a = plain->forward(tokens, tokens, sw, nullptr);
        const auto b = regularised->forward(tokens, tokens, sw, nullptr);
        a.loss.backward();
        b.loss.backward();
        const auto e = f64(plain->outputEmbedding());
        const int64_t V = e.size(0);
        auto mu = torch::zeros({e.size(1)}, kF64);
        for (int64_t i = 0; i < V; ++i) mu += e[i];
        mu /= static_cast<double>(V);
        const double muSquared = mu.dot(mu).item<double>();
        EXPECT_TRUE(torch::equal(a.ceLoss, b.ceLoss));
        ASSERT_GT(muSquared, 0.25);
        EXPECT_NEAR((b.loss - b.ceLoss).item<double>(), 0.5 * muSquared, 2e-6);
        const auto extra =
            f64(regularised->outputEmbedding().grad()) - f64(plain->outputEmbedding().grad());
        const auto want = (2 * 0.5 / static_cast<double>(V) * mu).expand({V, e.size(1)});
        EXPECT_LT((extra - want).abs().max().item<double>(), 1e-8);
        EXPECT_NEAR(b.outputLogitStats[kMuNorm].item<double>(), std::sqrt(muSquared), 1e-6);
        EXPECT_NEAR(a.outputLogitStats[kMuNorm].item<double>(), std::sqrt(muSquared), 1e-6);
    }
}

// Off (none), the coefficient is not read: a run with another optim.mu_loss reports exactly
// what the default run reports, and its loss is the cross-entropy.
TEST(OutputCentring, OffLeavesARunUnchanged) {
    using namespace testing_support;
    RunConfig c = smallConfig(12);
    auto run = [](const RunConfig& config) {
        Trainer t(config);
        LossRecorder r;
        EXPECT_EQ(t.run(r).status, RunStatus::Finished);
        return r;
    };
    const LossRecorder base = run(c);
    c.optim.muLoss = 7;
    expectSameReport(run(c), base);
    Transformer model(c);
    const auto tokens = fixedTokens(c);
    const auto r = model->forward(tokens, tokens, plainSwitches(c), nullptr);
    EXPECT_TRUE(torch::equal(r.loss, r.ceLoss));
}

TEST(OutputCentring, BothModesTrainTiedOrNotAndResumeBitForBit) {
    for (const OutputCentring mode : {OutputCentring::MuCentring, OutputCentring::MuLoss}) {
        for (const bool tied : {false, true}) {
            RunConfig c = testsupport::tinyRunConfig(16);
            c.optim.outputCentring = mode;
            c.model.tieEmbeddings = tied;
            const std::string what = std::string(nameOf(mode)) + (tied ? ", tied" : ", untied");
            Trainer t(c);
            testsupport::expectTrainsToAFiniteLoss(t, what);
            if (tied) continue;
            SCOPED_TRACE(what);
            const testsupport::ResumePair r = testsupport::trainedWholeAndResumed(c, 7);
            testsupport::expectResumedEqualsWhole(r, 16);
            for (size_t i = 0; i < r.full.size(); ++i)
                EXPECT_EQ(r.full[i].muNorm, r.resumed[i].muNorm) << i;
        }
    }
}

TEST(OutputCentring, AMuLossWithoutACoefficientIsRefused) {
    RunConfig c = testsupport::tinyRunConfig(4);
    c.optim.outputCentring = OutputCentring::MuLoss;
    c.optim.muLoss = 0;
    const auto problems = validationProblems(c);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("optim.mu_loss"), std::string::npos) << problems[0];
    EXPECT_NE(problems[0].find("mu_loss"), std::string::npos) << problems[0];
    c.optim.outputCentring = OutputCentring::None;
    EXPECT_TRUE(validationProblems(c).empty());  // the coefficient is not read
    c.optim.muLoss = -1;
    ASSERT_EQ(validationProblems(c).size(), 1u);
}
