// bench_train — training throughput of the C++ engine, for scripts/bench.sh.
//
//   bench_train --config tiny|10m|PRESET.json [--steps N] [--warmup W] [--probes-every P]
//               [--threads T] [--set k=v]...
//
// Prints one JSON line: steps/s, tokens/s, model FLOP/s (6N + 12*L*T*d per token, the PaLM
// count) and the machine's measured matmul FLOP/s, so results can be read against the peak.
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>

#include "bench_configs.h"
#include "qklab/engine/environment.h"
#include "qklab/engine/trainer.h"

#if __has_include(<c10/cuda/CUDACachingAllocator.h>) && defined(QKLAB_WITH_CUDA_HEADERS)
#include <c10/cuda/CUDACachingAllocator.h>
static int64_t cudaPeakMemoryBytes() {
    return c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].peak;
}
static void resetCudaPeakMemory() {
    c10::cuda::CUDACachingAllocator::resetPeakStats(0);
}
#else
static void resetCudaPeakMemory() {}
static int64_t cudaPeakMemoryBytes() {
    return 0;
}  // CPU-only LibTorch
#endif

using namespace qklab;
using Clock = std::chrono::steady_clock;

namespace {

// Seconds from building the trainer to the device having finished the last step. Observers
// cannot time steps: with deferred readback (the CUDA default) onStep arrives in bursts at
// readback points, long after the step ran, so a clock started in onStep measured almost
// nothing (a 300,000-step/s "tiny" row on the H200). The difference of two whole runs does
// not depend on when the engine reports.
struct TimedRun {
    double seconds = 0;
    int64_t parameters = 0;
    std::string engine;         // what ran: device, dtype, AdamW kind, CUDA graphs
    int64_t replayedSteps = 0;  // steps that really ran as graph replays
};

TimedRun timeWholeRun(const RunConfig& c, const std::string& profilePath) {
    const auto t0 = Clock::now();
    Trainer trainer(c);
    {
        std::unique_ptr<torch::autograd::profiler::RecordProfile> profile;
        if (!profilePath.empty())
            profile = std::make_unique<torch::autograd::profiler::RecordProfile>(profilePath);
        TrainingObserver quiet;
        trainer.run(quiet);
    }
    if (c.run.device == DeviceKind::Cuda) torch::cuda::synchronize();
    return {std::chrono::duration<double>(Clock::now() - t0).count(), trainer.parameterCount(),
            trainer.deviceDescription(), trainer.replayedSteps()};
}

// The machine's matmul rate in the run's dtype on the run's device: the MFU denominator.
double matmulGflops(const RunConfig& c) {
    torch::NoGradGuard g;
    const bool cuda = c.run.device == DeviceKind::Cuda;
    const int64_t n = cuda ? 8192 : 1024;
    auto opts = torch::TensorOptions()
                    .device(cuda ? torch::kCUDA : torch::kCPU)
                    .dtype(c.run.dtype == Precision::Bf16 ? torch::kBFloat16 : torch::kFloat32);
    auto a = torch::randn({n, n}, opts), b = torch::randn({n, n}, opts);
    auto sync = [&] {
        if (cuda) torch::cuda::synchronize();
    };
    torch::mm(a, b);
    sync();
    const auto t0 = Clock::now();
    int reps = 0;
    while (std::chrono::duration<double>(Clock::now() - t0).count() < 1.0) {
        torch::mm(a, b);
        ++reps;
        sync();
    }
    return 2.0 * n * n * n * reps / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_train: steps/s of the qklab engine"};
    std::string configName = "tiny";
    int64_t steps = 60, warmup = 10, probesEvery = 10, threads = 0;
    std::vector<std::string> overrides;
    std::string profilePath;
    app.add_option("--profile", profilePath, "write a chrome://tracing profile of the run here");
    app.add_option("--config", configName, "tiny, 10m or a preset file");
    app.add_option("--steps", steps, "measured steps");
    app.add_option("--warmup", warmup, "untimed steps first");
    app.add_option("--probes-every", probesEvery, "probes.every (0 = off)");
    app.add_option("--threads", threads, "CPU threads (0 = all)");
    app.add_option("--set", overrides, "config override");
    CLI11_PARSE(app, argc, argv);

    RunConfig c = benchConfig(configName);
    c.schedule.steps = warmup + steps;
    c.schedule.warmupSteps = std::min<int64_t>(c.schedule.warmupSteps, warmup);
    c.probes.every = probesEvery;
    c.probes.attnMapEvery = 0;
    c.eval.every = 0;  // validation is not part of a training step
    c.eval.batches = 1;
    c.run.threads = threads;
    for (const auto& o : overrides) applyOverride(c, o);
    // The warm-up alone, then warm-up + measured steps: the difference is the measured steps
    // (start-up, first-step compilation and CUDA-graph capture cancel out).
    // A first, untimed run pays what a process pays once (CUDA context, kernel module loads,
    // cuBLAS handles): on the H200 that was seconds, more than 200 tiny steps, and it made the
    // difference negative.
    RunConfig warmOnly = c;
    warmOnly.schedule.steps = warmup;
    timeWholeRun(warmOnly, "");
    const TimedRun warm = timeWholeRun(warmOnly, "");
    if (c.run.device == DeviceKind::Cuda) resetCudaPeakMemory();
    const TimedRun full = timeWholeRun(c, profilePath);
    const double seconds = std::max(1e-9, full.seconds - warm.seconds);
    const double stepsPerSec = static_cast<double>(steps) / seconds;
    const double tokens = static_cast<double>(c.data.batchSize * c.model.seqLen);
    const double nonEmbedding = 12.0 * c.model.nLayers * c.model.dModel * c.model.dModel;
    const double flopsPerToken = 6.0 * (nonEmbedding + 256.0 * c.model.dModel) +
                                 12.0 * c.model.nLayers * c.model.seqLen * c.model.dModel;
    nlohmann::json r;
    r["impl"] = "cpp";
    r["config"] = configName;
    r["params"] = full.parameters;
    r["threads"] = torch::get_num_threads();
    r["probes_every"] = probesEvery;
    r["steps_per_s"] = stepsPerSec;
    r["tokens_per_s"] = stepsPerSec * tokens;
    r["model_gflops"] = stepsPerSec * tokens * flopsPerToken / 1e9;
    r["matmul_gflops"] = matmulGflops(c);
    r["device"] = c.run.device;
    r["dtype"] = c.run.dtype;
    // A softcapped model never takes the fused kernel (it needs the logits), whatever
    // run.fused_attention says: the 300m config's two attention rows are the same code.
    const bool fused = c.run.fusedAttention && c.attention.softcap.kind == SoftcapKind::None;
    r["attention"] = fused ? "fused" : (c.run.fusedAttention ? "explicit (softcap)" : "explicit");
    // A row that asked for graphs but replayed none (the capture failed) says so.
    const bool graphsAsked = full.engine.find("CUDA graphs") != std::string::npos;
    r["engine"] =
        graphsAsked && full.replayedSteps == 0 ? full.engine + " (none replayed)" : full.engine;
    r["replayed_steps"] = full.replayedSteps;
    if (c.run.device == DeviceKind::Cuda)
        r["peak_mem_gb"] = static_cast<double>(cudaPeakMemoryBytes()) / 1e9;
    r["torch"] = torchVersion();
    std::cout << r.dump() << std::endl;
    return 0;
}
