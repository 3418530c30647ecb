// precision_check — bf16-vs-fp32 relative error of raw attention logits, the guide's claim
// that QK-norm cuts it by about an order of magnitude (domain brief section 4).
//
//   precision_check [--preset P] [--set k=v]... [--steps N]
//
// Trains N fp32 steps (so that logits have grown where they will), then runs one batch through
// the trained model twice, in fp32 and under bf16 autocast, and compares the raw logits of
// every layer: relative Frobenius error over the causal logits, and the max absolute error.
// Prints one JSON line. Works on the CPU (slowly in bf16 with LibTorch 1.13) and on CUDA.
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "data_loader.h"
#include "model.h"
#include "qklab/corpus.h"
#include "qklab/schedules.h"
#include "qklab/trainer.h"

using namespace qklab;

int main(int argc, char** argv) {
    CLI::App app{"precision_check: bf16 vs fp32 attention logits"};
    std::string preset;
    std::vector<std::string> overrides;
    int64_t steps = 100;
    app.add_option("--preset", preset, "preset JSON (default: all defaults)");
    app.add_option("--set", overrides, "config override");
    app.add_option("--steps", steps, "fp32 training steps before the comparison");
    CLI11_PARSE(app, argc, argv);

    RunConfig c = preset.empty() ? RunConfig{} : loadPreset(preset, false);
    for (const auto& o : overrides) applyOverride(c, o);
    c.schedule.steps = steps;
    c.schedule.warmupSteps = std::min(c.schedule.warmupSteps, steps);
    c.run.dtype = Precision::Fp32;
    c.eval.every = 0;
    c.probes.every = 0;
    char tmpl[] = "/tmp/qklab-precision-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    {
        Trainer trainer(c);
        trainer.setCheckpointDir(dir);
        TrainingObserver quiet;
        trainer.run(quiet);
    }
    const torch::Device device = c.run.device == DeviceKind::Cuda ? torch::Device(torch::kCUDA, 0)
                                                                  : torch::Device(torch::kCPU);
    Transformer model(c);
    torch::serialize::InputArchive archive;
    archive.load_from(dir + "/step-" + std::to_string(steps) + ".pt", device);
    model->load(archive);
    model->to(device);
    model->eval();
    std::filesystem::remove_all(dir);

    ByteDataLoader data(loadCorpus(c.data.source), c.data.valFraction, c.maxSeqLen(), 99);
    auto batch = data.valBatch(0, 1, c.data.batchSize, c.model.seqLen);
    const auto settings = settingsAt(c, steps - 1);
    AttentionSwitches sw;
    sw.qkNorm = c.attention.qkNorm;
    sw.alpha = settings.alpha;
    sw.scale = c.logitScale();
    sw.softcap = settings.softcapKind;
    sw.softcapC = settings.softcapC;

    torch::NoGradGuard noGrad;
    std::vector<AttentionCapture> fp32, bf16;
    model->forward(batch.x.to(device), batch.y.to(device), sw, &fp32);
    setBf16Autocast(device, true);
    model->forward(batch.x.to(device), batch.y.to(device), sw, &bf16);
    setBf16Autocast(device, false);
    at::autocast::clear_cache();

    const int64_t T = c.model.seqLen;
    auto causal =
        torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(device)).tril();
    double errSq = 0, refSq = 0, maxAbsErr = 0, maxLogit = 0;
    for (size_t l = 0; l < fp32.size(); ++l) {
        auto ref = fp32[l].raw.to(torch::kFloat32).masked_select(causal);
        auto low = bf16[l].raw.to(torch::kFloat32).masked_select(causal);
        errSq += (low - ref).pow(2).sum().item<double>();
        refSq += ref.pow(2).sum().item<double>();
        maxAbsErr = std::max(maxAbsErr, (low - ref).abs().max().item<double>());
        maxLogit = std::max(maxLogit, ref.abs().max().item<double>());
    }
    nlohmann::json r;
    r["qk_norm"] = c.attention.qkNorm;
    r["lr"] = c.optim.lr;
    r["steps"] = steps;
    r["device"] = c.run.device;
    r["max_abs_logit_fp32"] = maxLogit;
    r["rel_err"] = std::sqrt(errSq / std::max(refSq, 1e-30));
    r["max_abs_err"] = maxAbsErr;
    r["bf16_dtype_seen"] = std::string(c10::toString(bf16[0].raw.scalar_type()));
    std::cout << r.dump() << std::endl;
    return 0;
}
