// gpu_test.cpp — what only a GPU can check: CUDA training against the CPU, DeviceAdamW and the
// fused attention kernel on CUDA, deferred readback and bf16 autocast on CUDA. Without a CUDA
// device every test skips and says why; scripts/gpu-check.sh runs them on a GPU machine.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "engine/src/device_optim.h"
#include "engine/src/model.h"
#include "engine/src/step_graph.h"
#include "qklab/engine/trainer.h"

using namespace qklab;

namespace {

#define QKLAB_REQUIRE_CUDA()                                                                   \
    do {                                                                                       \
        if (!torch::cuda::is_available())                                                      \
            GTEST_SKIP() << "no CUDA device visible to LibTorch " TORCH_VERSION                \
                            " (GPU-only test; scripts/gpu-check.sh runs it on a GPU machine)"; \
    } while (0)

RunConfig tinyConfig(int64_t steps, const std::string& device) {
    RunConfig c;
    c.model.dModel = 64;
    c.model.nLayers = 2;
    c.model.nHeads = 4;
    c.model.seqLen = 64;
    c.data.batchSize = 8;
    c.schedule.steps = steps;
    c.schedule.warmupSteps = 2;
    c.eval.every = 0;
    c.eval.batches = 1;
    c.probes.every = 5;
    c.run.device = *parseChoice<DeviceKind>(device);
    c.run.readback = Readback::EveryStep;
    return c;
}

struct Steps : TrainingObserver {
    std::vector<StepMetrics> steps;
    std::vector<ProbeStats> probes;
    void onStep(const StepMetrics& m) override { steps.push_back(m); }
    void onProbes(int64_t, const std::vector<ProbeStats>& s,
                  const std::vector<LogitHistogram>&) override {
        probes.insert(probes.end(), s.begin(), s.end());
    }
};

Steps train(const RunConfig& c) {
    Trainer t(c);
    Steps s;
    EXPECT_EQ(t.run(s).status, RunStatus::Finished);
    return s;
}

}  // namespace

TEST(Gpu, TrainingOnCudaFollowsTheCpuCurve) {
    QKLAB_REQUIRE_CUDA();
    const auto cpu = train(tinyConfig(30, "cpu"));
    const auto gpu = train(tinyConfig(30, "cuda"));
    ASSERT_EQ(cpu.steps.size(), gpu.steps.size());
    double worst = 0;
    for (size_t i = 0; i < cpu.steps.size(); ++i)
        worst = std::max(worst, std::fabs(cpu.steps[i].loss - gpu.steps[i].loss));
    // fp32 kernels reduce in another order on the GPU; the gap compounds over the steps.
    EXPECT_LT(worst, 2e-2);
    ASSERT_EQ(cpu.probes.size(), gpu.probes.size());
    for (size_t i = 0; i < cpu.probes.size(); ++i)
        EXPECT_NEAR(gpu.probes[i].logitMaxRaw, cpu.probes[i].logitMaxRaw,
                    0.05 * std::fabs(cpu.probes[i].logitMaxRaw));
}

TEST(Gpu, DeviceAdamWOnCudaMatchesTheCpu) {
    QKLAB_REQUIRE_CUDA();
    for (const bool fused : {false, kHaveFusedAdamW}) {
        SCOPED_TRACE(fused ? "fused AdamW" : "per-parameter AdamW");
        torch::manual_seed(1);
        std::vector<torch::Tensor> cpuParams = {torch::randn({64, 32}), torch::randn({32})};
        std::vector<torch::Tensor> gpuParams;
        for (auto& p : cpuParams) {
            p.requires_grad_(true);
            gpuParams.push_back(p.detach().to(torch::kCUDA).requires_grad_(true));
        }
        DeviceAdamW onCpu({{{cpuParams[0]}, 0.1}, {{cpuParams[1]}, 0.0}}, 0.9, 0.95, 1e-8, fused);
        DeviceAdamW onGpu({{{gpuParams[0]}, 0.1}, {{gpuParams[1]}, 0.0}}, 0.9, 0.95, 1e-8, fused);
        for (int step = 0; step < 10; ++step) {
            for (size_t i = 0; i < cpuParams.size(); ++i) {
                auto g = torch::randn_like(cpuParams[i]);
                cpuParams[i].mutable_grad() = g;
                gpuParams[i].mutable_grad() = g.to(torch::kCUDA);
            }
            clipGradNorm(cpuParams, 1.0);
            clipGradNorm(gpuParams, 1.0);
            onCpu.setLr(1e-2);
            onGpu.setLr(1e-2);
            onCpu.step();
            onGpu.step();
        }
        for (size_t i = 0; i < cpuParams.size(); ++i) {
            auto diff = (gpuParams[i].cpu() - cpuParams[i]).abs().max().item<double>();
            EXPECT_LE(diff, 1e-5 * cpuParams[i].abs().max().item<double>()) << i;
        }
        EXPECT_NEAR(onGpu.lastUpdateNorm().item<double>(), onCpu.lastUpdateNorm().item<double>(),
                    1e-5 * onCpu.lastUpdateNorm().item<double>());
    }
}

TEST(Gpu, FusedAttentionOnCudaMatchesTheExplicitPath) {
    QKLAB_REQUIRE_CUDA();
    RunConfig c = tinyConfig(1, "cuda");
    torch::manual_seed(3);
    Transformer model(c);
    model->to(torch::kCUDA);
    auto tokens = torch::randint(0, 256, {4, c.model.seqLen}, torch::kInt64).to(torch::kCUDA);
    AttentionSwitches sw;
    sw.qkNorm = QkNormVariant::Rms;
    sw.scale = c.logitScale();
    double losses[2];
    std::vector<torch::Tensor> grads[2];
    for (int fused = 0; fused < 2; ++fused) {
        sw.fused = fused == 1;
        for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
        auto r = model->forward(tokens, tokens.roll(-1, 1), sw, nullptr);
        r.loss.backward();
        losses[fused] = r.loss.item<double>();
        for (auto& p : model->parameters())
            grads[fused].push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
    }
    EXPECT_NEAR(losses[1], losses[0], 1e-5 * losses[0]);
    for (size_t i = 0; i < grads[0].size(); ++i) {
        ASSERT_EQ(grads[0][i].defined(), grads[1][i].defined()) << i;
        if (!grads[0][i].defined()) continue;
        const double scale = grads[0][i].norm().item<double>();
        if (scale > 0) {
            EXPECT_LE((grads[1][i] - grads[0][i]).norm().item<double>() / scale, 1e-4) << i;
        }
    }
}

TEST(Gpu, DeferredReadbackOnCudaReportsTheSameCurve) {
    QKLAB_REQUIRE_CUDA();
    RunConfig c = tinyConfig(40, "cuda");
    const auto every = train(c);
    c.run.readback = Readback::Deferred;
    const auto deferred = train(c);
    ASSERT_EQ(every.steps.size(), deferred.steps.size());
    // Embedding backward uses atomics on CUDA: runs agree closely, not bitwise.
    for (size_t i = 0; i < every.steps.size(); ++i)
        EXPECT_NEAR(deferred.steps[i].loss, every.steps[i].loss, 1e-4 * every.steps[i].loss) << i;
}

TEST(Gpu, Bf16AutocastTrainsWithFiniteProbes) {
    QKLAB_REQUIRE_CUDA();
    RunConfig c = tinyConfig(20, "cuda");
    c.run.dtype = Precision::Bf16;
    const auto run = train(c);
    ASSERT_EQ(run.steps.size(), 20u);
    EXPECT_LT(run.steps.back().loss, run.steps.front().loss);
    for (const auto& p : run.probes) EXPECT_TRUE(std::isfinite(p.logitMaxRaw));
    for (const auto& m : run.steps)
        EXPECT_EQ(m.attentionPath, m.step % 5 == 0 ? "explicit" : "fused");
}

namespace {

// A run through the plugin's graphs, counted: a capture that failed would leave every step
// eager and the losses trivially equal, so the tests also ask for the captures and replays.
struct GraphedRun {
    Steps steps;
    int captures = 0;
    int64_t replays = 0;
};

GraphedRun trainGraphed(RunConfig c) {
    c.run.cudaGraphs = AutoSwitch::On;
    auto captures = std::make_shared<int>(0);
    TrainerOptions options;
    options.stepGraphFactory = [captures]() -> std::unique_ptr<StepGraph> {
        std::string why;
        const auto plugin = cudaStepGraphFactory(why);
        if (!plugin) throw std::runtime_error(why);
        ++*captures;
        return plugin();
    };
    Trainer t(c, options);
    EXPECT_NE(t.deviceDescription().find("CUDA graphs"), std::string::npos);
    GraphedRun r;
    EXPECT_EQ(t.run(r.steps).status, RunStatus::Finished);
    r.captures = *captures;
    r.replays = t.replayedSteps();
    return r;
}

// The same kernels on the same inputs: only a nondeterministic kernel could differ.
void expectSameCurve(const Steps& graphed, const Steps& eager, const char* what) {
    ASSERT_EQ(graphed.steps.size(), eager.steps.size());
    double worst = 0;
    for (size_t i = 0; i < eager.steps.size(); ++i) {
        worst = std::max(worst, std::fabs(graphed.steps[i].loss - eager.steps[i].loss));
        EXPECT_NEAR(graphed.steps[i].updateNorm, eager.steps[i].updateNorm,
                    1e-4 * eager.steps[i].updateNorm)
            << i;
    }
    EXPECT_LE(worst, 1e-5);
    std::printf("%s: largest loss difference %.3g\n", what, worst);
}

RunConfig graphConfig() {
    RunConfig c = tinyConfig(60, "cuda");
    c.run.readback = Readback::Deferred;
    c.run.cudaGraphs = AutoSwitch::Off;
    return c;
}

}  // namespace

TEST(Gpu, CapturedStepsEqualEagerSteps) {
    QKLAB_REQUIRE_CUDA();
    // Probes every 5 and an LR multiplier at step 20: eager steps around the graph, and a new
    // LR the graph must read from its device tensor.
    RunConfig c = graphConfig();
    c.events.push_back(
        eventFromJson({{"step", 20}, {"kind", "lr_multiplier"}, {"factor", 3.0}}, "test"));
    const auto eager = train(c);
    const auto graphed = trainGraphed(c);
    // One graph (the LR is a device tensor); eager: the 12 probe steps (the event step 20 is
    // one of them) and the 2 that make the key stable.
    EXPECT_EQ(graphed.captures, 1);
    EXPECT_EQ(graphed.replays, 60 - 12 - 2);
    expectSameCurve(graphed.steps, eager, "captured vs eager, 60 steps");
}

TEST(Gpu, ABriefContextSwitchReplaysTheFirstGraphOnItsOwnMask) {
    QKLAB_REQUIRE_CUDA();
    // T 64 -> 32 for two steps (too few to capture), then back: T = 64's graph replays, and
    // with explicit attention it reads the T = 64 causal mask, which must still be the one it
    // captured (the model keeps every mask it made).
    RunConfig c = graphConfig();
    c.run.fusedAttention = false;
    c.events.push_back(
        eventFromJson({{"step", 30}, {"kind", "context_length"}, {"seq_len", 32}}, "test"));
    c.events.push_back(
        eventFromJson({{"step", 32}, {"kind", "context_length"}, {"seq_len", 64}}, "test"));
    const auto eager = train(c);
    const auto graphed = trainGraphed(c);
    EXPECT_EQ(graphed.captures, 1);
    EXPECT_GT(graphed.replays, 30);
    expectSameCurve(graphed.steps, eager, "captured vs eager around a brief context switch");
}
