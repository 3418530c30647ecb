// output_logits_test.cpp — the output-logit statistics (log Z mean and max, the max output
// logit, the z-loss term) against hand-computed values, the loss left exactly as it was, and
// the optimizer's update norm against ||theta_after - theta_before|| (issue 25).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/src/device_optim.h"
#include "engine/src/model.h"
#include "qklab/engine/trainer.h"

using namespace qklab;
namespace F = torch::nn::functional;

namespace {

RunConfig tinyConfig() {
    RunConfig c;
    c.model.dModel = 32;
    c.model.nLayers = 1;
    c.model.nHeads = 2;
    c.model.seqLen = 16;
    c.data.batchSize = 4;
    c.run.threads = 2;
    c.eval.every = 0;
    c.eval.batches = 1;
    c.probes.every = 0;
    return c;
}

AttentionSwitches plainSwitches(const RunConfig& c) {
    AttentionSwitches sw;
    sw.qkNorm = c.attention.qkNorm;
    sw.scale = c.logitScale();
    return sw;
}

std::vector<double> statsOf(const torch::Tensor& stats) {
    const auto s = stats.to(torch::kFloat64).contiguous();
    return {s.data_ptr<double>(), s.data_ptr<double>() + s.numel()};
}

struct StepRecorder : TrainingObserver {
    std::vector<StepMetrics> steps;
    void onStep(const StepMetrics& m) override { steps.push_back(m); }
};

}  // namespace

TEST(OutputLogitStats, MatchHandComputedValuesOnFixedLogits) {
    // Three tokens over a vocabulary of 4: Z = 4, 4 e^2 and 5 + 1 + 1 + 1 = 8.
    const double ln2 = std::log(2.0);
    const auto logits = torch::tensor({0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 2.0,  //
                                       std::log(5.0), 0.0, 0.0, 0.0},
                                      torch::kFloat32)
                            .reshape({3, 4});
    const auto stats =
        statsOf(outputLogitStats(logits, torch::logsumexp(logits, -1), torch::tensor(2.25)));
    ASSERT_EQ(stats.size(), static_cast<size_t>(kOutputLogitStats));
    EXPECT_DOUBLE_EQ(stats[kMuNorm], 1.5);  // ||mu|| from ||mu||^2
    const double z1 = 2 * ln2, z2 = 2 + 2 * ln2, z3 = 3 * ln2;
    EXPECT_NEAR(stats[kLogZMean], (z1 + z2 + z3) / 3, 1e-6);
    EXPECT_NEAR(stats[kLogZMax], z2, 1e-6);
    EXPECT_NEAR(stats[kOutLogitMax], 2.0, 1e-7);
    EXPECT_NEAR(stats[kZLossTerm], (z1 * z1 + z2 * z2 + z3 * z3) / 3, 1e-5);
}

TEST(OutputLogitStats, ForwardKeepsTheLossBitForBitAndMeasuresTheCappedLogits) {
    RunConfig c = tinyConfig();
    c.optim.zLoss = 1e-4;
    c.model.outputSoftcap = 1.5;  // below the init's largest logits: the cap shows
    Transformer model(c);
    const auto tokens = torch::randint(0, 256, {2, c.model.seqLen}, torch::kInt64);
    const auto r = model->forward(tokens, tokens, plainSwitches(c), nullptr);
    // The z-loss as it was written before the statistics existed.
    torch::NoGradGuard noGrad;
    const auto logits = model->logits(tokens, plainSwitches(c));
    const auto flat = logits.reshape({-1, logits.size(-1)}).to(torch::kFloat32);
    const auto before = r.ceLoss + c.optim.zLoss * torch::logsumexp(flat, -1).pow(2).mean();
    EXPECT_TRUE(torch::equal(r.loss, before));
    const auto stats = statsOf(r.outputLogitStats);
    const auto lse = torch::logsumexp(flat, -1).to(torch::kFloat64);
    EXPECT_DOUBLE_EQ(stats[kOutLogitMax], flat.max().item<double>());
    EXPECT_LT(stats[kOutLogitMax], 1.5);
    EXPECT_NEAR(stats[kLogZMax], lse.max().item<double>(), 1e-5);
    EXPECT_NEAR(stats[kZLossTerm], (r.loss - r.ceLoss).item<double>() / c.optim.zLoss, 0.05);

    EXPECT_TRUE(torch::equal(r.ceLoss, F::cross_entropy(flat, tokens.reshape({-1}))));
}

TEST(OutputLogitStats, WithoutZLossTheyComeFromTheLossOwnLogProbabilities) {
    RunConfig c = tinyConfig();
    Transformer model(c);
    const auto tokens = torch::randint(0, 256, {2, c.model.seqLen}, torch::kInt64);
    const auto targets = torch::randint(0, 256, {2, c.model.seqLen}, torch::kInt64);
    const auto r = model->forward(tokens, targets, plainSwitches(c), nullptr);
    EXPECT_FALSE(r.outputLogitStats.requires_grad());
    torch::NoGradGuard noGrad;
    const auto logits = model->logits(tokens, plainSwitches(c));
    const auto flat = logits.reshape({-1, logits.size(-1)}).to(torch::kFloat32);
    // The loss is what F::cross_entropy gives, bit for bit: the same operations.
    EXPECT_TRUE(torch::equal(r.loss, F::cross_entropy(flat, targets.reshape({-1}))));
    EXPECT_TRUE(torch::equal(r.loss, r.ceLoss));
    const auto lse = torch::logsumexp(flat, -1).to(torch::kFloat64);
    const auto stats = statsOf(r.outputLogitStats);
    EXPECT_NEAR(stats[kLogZMean], lse.mean().item<double>(), 1e-5);
    EXPECT_NEAR(stats[kLogZMax], lse.max().item<double>(), 1e-5);
    EXPECT_NEAR(stats[kZLossTerm], lse.pow(2).mean().item<double>(), 1e-4);
    EXPECT_DOUBLE_EQ(stats[kOutLogitMax], flat.max().item<double>());
}

TEST(UpdateNorm, EqualsTheNormOfThetaAfterMinusThetaBefore) {
    for (const bool fused : {false, kHaveFusedAdamW}) {
        SCOPED_TRACE(fused ? "fused AdamW" : "per-parameter AdamW");
        RunConfig c = tinyConfig();
        Transformer model(c);
        // A strong decay and LR: the decay term is a visible part of the update.
        DeviceAdamW optimizer(
            {{model->decayedParameters(), 0.5}, {model->undecayedParameters(), 0}}, 0.9, 0.95, 1e-8,
            fused);
        optimizer.setLr(0.05);
        const auto tokens = torch::randint(0, 256, {2, c.model.seqLen}, torch::kInt64);
        auto params = model->parameters();
        for (int step = 0; step < 3; ++step) {  // the moments differ from the first step's
            std::vector<torch::Tensor> before;
            for (auto& p : params) {
                p.mutable_grad() = torch::Tensor();
                before.push_back(p.detach().clone().to(torch::kFloat64));
            }
            model->forward(tokens, tokens, plainSwitches(c), nullptr).loss.backward();
            optimizer.step();
            double squared = 0;
            for (size_t i = 0; i < params.size(); ++i)
                squared += (params[i].detach().to(torch::kFloat64) - before[i])
                               .pow(2)
                               .sum()
                               .item<double>();
            const double norm = optimizer.lastUpdateNorm().item<double>();
            EXPECT_NEAR(norm, std::sqrt(squared), 1e-5 * std::sqrt(squared)) << "step " << step;
            EXPECT_GT(norm, 0);
        }
    }
}

TEST(UpdateNorm, AndOutputLogitStatisticsReachEveryStepOfARun) {
    RunConfig c = tinyConfig();
    c.schedule.steps = 12;
    c.schedule.warmupSteps = 2;
    for (const Readback mode : {Readback::EveryStep, Readback::Deferred}) {
        c.run.readback = mode;
        Trainer t(c);
        StepRecorder r;
        ASSERT_EQ(t.run(r).status, RunStatus::Finished);
        ASSERT_EQ(r.steps.size(), 12u);
        // At init the logits are near 0: log Z is near ln 256.
        EXPECT_NEAR(r.steps[0].logZMean, std::log(256.0), 0.1) << nameOf(mode);
        for (const StepMetrics& m : r.steps) {
            EXPECT_LE(m.logZMean, m.logZMax) << m.step;
            EXPECT_LE(m.outLogitMax, m.logZMax) << m.step;              // log Z >= the row's max
            EXPECT_GE(m.zLossTerm, m.logZMean * m.logZMean) << m.step;  // Jensen
            EXPECT_TRUE(std::isfinite(m.updateNorm) && m.updateNorm > 0) << m.step;
            EXPECT_TRUE(std::isfinite(m.muNorm) && m.muNorm > 0) << m.step;
        }
    }
}
