// bench_optim — the optimizer step alone: optim.fused (ATen's fused AdamW) against the
// per-parameter AdamW, over the parameters of a benchmark config, for docs/BENCHMARKS.md.
//
//   bench_optim --config tiny|10m|300m|PRESET.json [--steps N] [--rounds R] [--threads T]
//               [--set k=v]...
//
// Both optimizers step the same parameters with the same fixed gradients; rounds alternate
// the two, so a machine that slows down mid-run slows both. Prints one JSON line per kind:
// steps/s (median over rounds) and the parameter count.
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <vector>

#include "bench_configs.h"
#include "engine/src/device_optim.h"
#include "engine/src/model.h"
#include "qklab/config/resources.h"
#include "qklab/engine/environment.h"

using namespace qklab;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Seconds for `steps` optimizer steps (the device drained before and after).
double timeSteps(DeviceAdamW& opt, int64_t steps, bool cuda) {
    if (cuda) torch::cuda::synchronize();
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < steps; ++i) {
        opt.setLr(1e-4);
        opt.step();
    }
    if (cuda) torch::cuda::synchronize();
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_optim: optimizer steps/s, fused AdamW against the per-parameter one"};
    std::string configName = "tiny";
    int64_t steps = 50, rounds = 5, threads = 0;
    std::vector<std::string> overrides;
    app.add_option("--config", configName, "tiny, 10m, 300m or a preset file");
    app.add_option("--steps", steps, "optimizer steps per round");
    app.add_option("--rounds", rounds, "alternating rounds of each kind");
    app.add_option("--threads", threads, "CPU threads (0 = all)");
    app.add_option("--set", overrides, "config override");
    CLI11_PARSE(app, argc, argv);
    if (!kHaveFusedAdamW) {
        std::cerr << "bench_optim: this LibTorch has no fused AdamW (2.4 or later)\n";
        return 2;
    }
    RunConfig c = benchConfig(configName);
    for (const auto& o : overrides) applyOverride(c, o);
    torch::set_num_threads(static_cast<int>(cappedThreads(threads)));
    const bool cuda = c.run.device == DeviceKind::Cuda;
    const torch::Device device = cuda ? torch::kCUDA : torch::kCPU;

    std::vector<Transformer> models;
    std::vector<std::unique_ptr<DeviceAdamW>> optimizers;
    for (const bool fused : {false, true}) {
        torch::manual_seed(1);
        models.emplace_back(c);
        auto& m = models.back();
        m->to(device);
        for (auto& p : m->parameters()) p.mutable_grad() = torch::randn_like(p) * 1e-3;
        optimizers.push_back(std::make_unique<DeviceAdamW>(
            std::vector<AdamWGroup>{{m->decayedParameters(), c.optim.weightDecay},
                                    {m->undecayedParameters(), 0.0}},
            c.optim.betas[0], c.optim.betas[1], c.optim.eps, fused));
        timeSteps(*optimizers.back(), 3, cuda);  // first-call costs out of the rounds
    }
    std::vector<std::vector<double>> rates(2);
    for (int64_t r = 0; r < rounds; ++r)
        for (size_t k = 0; k < 2; ++k)
            rates[k].push_back(static_cast<double>(steps) / timeSteps(*optimizers[k], steps, cuda));
    for (size_t k = 0; k < 2; ++k) {
        nlohmann::json j;
        j["bench"] = "optimizer";
        j["config"] = configName;
        j["adamw"] = k == 1 ? "fused" : "per-parameter";
        j["params"] = models[k]->parameterCount();
        j["device"] = nameOf(c.run.device);
        j["threads"] = torch::get_num_threads();
        j["steps_per_s"] = median(rates[k]);
        j["torch"] = torchVersion();
        std::cout << j.dump() << std::endl;
    }
    return 0;
}
