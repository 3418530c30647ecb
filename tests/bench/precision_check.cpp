// precision_check — bf16-vs-fp32 relative error of raw attention logits, the guide's claim
// that QK-norm cuts it by about an order of magnitude (domain brief section 4).
//
//   precision_check [--preset P] [--set k=v]... [--steps N] [--seeds 1,2,3] [--batches 4]
//
// For each seed: trains N fp32 steps, then runs `batches` validation batches through the trained
// model twice, in fp32 and under bf16 autocast, and compares the raw logits of each layer
// (relative Frobenius error over the causal logits, and the max absolute error). A model trained
// with QK-norm is measured twice from the same checkpoint: as trained (normed) and with the norm
// not applied (alpha = 0), so that the two readings share one training state. Prints one JSON
// line per seed, view and layer. Works on the CPU and on CUDA.
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "engine/src/data_loader.h"
#include "engine/src/model.h"
#include "qklab/config/corpus.h"
#include "qklab/config/schedules.h"
#include "qklab/engine/trainer.h"

using namespace qklab;

namespace {

// Trains c in fp32 and returns the model loaded from its final checkpoint.
Transformer trainFp32(const RunConfig& c, const torch::Device& device) {
    char tmpl[] = "/tmp/qklab-precision-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    {
        Trainer trainer(c);
        trainer.setCheckpointDir(dir);
        TrainingObserver quiet;
        trainer.run(quiet);
    }
    Transformer model(c);
    torch::serialize::InputArchive archive;
    archive.load_from(dir + "/step-" + std::to_string(c.schedule.steps) + ".pt", device);
    model->load(archive);
    model->to(device);
    model->eval();
    std::filesystem::remove_all(dir);
    return model;
}

struct LayerError {
    double errSq = 0, refSq = 0, maxAbsErr = 0, maxLogit = 0;
    std::vector<double> perBatchRelErr;
};

// bf16-vs-fp32 error of every layer's raw logits over `batches` validation batches.
std::vector<LayerError> measure(Transformer& model, const RunConfig& c, TokenDataLoader& data,
                                const AttentionSwitches& sw, int64_t batches,
                                const torch::Device& device) {
    torch::NoGradGuard noGrad;
    const int64_t T = c.model.seqLen;
    auto causal =
        torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(device)).tril();
    std::vector<LayerError> layers(c.model.nLayers);
    for (int64_t b = 0; b < batches; ++b) {
        auto batch = data.valBatch(b, batches, c.data.batchSize, T);
        std::vector<AttentionCapture> fp32, bf16;
        model->forward(batch.x.to(device), batch.y.to(device), sw, &fp32);
        setBf16Autocast(device, true);
        model->forward(batch.x.to(device), batch.y.to(device), sw, &bf16);
        setBf16Autocast(device, false);
        at::autocast::clear_cache();
        for (size_t l = 0; l < fp32.size(); ++l) {
            auto ref = fp32[l].raw.to(torch::kFloat32).masked_select(causal);
            auto low = bf16[l].raw.to(torch::kFloat32).masked_select(causal);
            const double e = (low - ref).pow(2).sum().item<double>();
            const double r = ref.pow(2).sum().item<double>();
            LayerError& L = layers[l];
            L.errSq += e;
            L.refSq += r;
            L.perBatchRelErr.push_back(std::sqrt(e / std::max(r, 1e-30)));
            L.maxAbsErr = std::max(L.maxAbsErr, (low - ref).abs().max().item<double>());
            L.maxLogit = std::max(L.maxLogit, ref.abs().max().item<double>());
        }
    }
    return layers;
}

void report(const RunConfig& c, int64_t seed, const std::string& view, double alpha,
            const std::vector<LayerError>& layers) {
    for (size_t l = 0; l < layers.size(); ++l) {
        const LayerError& L = layers[l];
        nlohmann::json r;
        r["trained_qk_norm"] = nameOf(c.attention.qkNorm);
        r["view"] = view;
        r["alpha"] = alpha;
        r["lr"] = c.optim.lr;
        r["steps"] = c.schedule.steps;
        r["seed"] = seed;
        r["layer"] = l;
        r["device"] = nameOf(c.run.device);
        r["max_abs_logit_fp32"] = L.maxLogit;
        r["rel_err"] = std::sqrt(L.errSq / std::max(L.refSq, 1e-30));
        r["rel_err_per_batch"] = L.perBatchRelErr;
        r["max_abs_err"] = L.maxAbsErr;
        std::cout << r.dump() << std::endl;
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"precision_check: bf16 vs fp32 attention logits"};
    std::string preset;
    std::vector<std::string> overrides;
    int64_t steps = 100, batches = 4;
    std::vector<int64_t> seeds{1337};
    app.add_option("--preset", preset, "preset JSON (default: all defaults)");
    app.add_option("--set", overrides, "config override");
    app.add_option("--steps", steps, "fp32 training steps before the comparison");
    app.add_option("--seeds", seeds, "training seeds (one model each)")->delimiter(',');
    app.add_option("--batches", batches, "validation batches compared per model");
    CLI11_PARSE(app, argc, argv);

    RunConfig c = preset.empty() ? RunConfig{} : loadPreset(preset, false);
    for (const auto& o : overrides) applyOverride(c, o);
    c.schedule.steps = steps;
    c.schedule.warmupSteps = std::min(c.schedule.warmupSteps, steps);
    c.run.dtype = Precision::Fp32;
    c.eval.every = 0;
    c.probes.every = 0;
    const torch::Device device = c.run.device == DeviceKind::Cuda ? torch::Device(torch::kCUDA, 0)
                                                                  : torch::Device(torch::kCPU);
    TokenDataLoader data(loadCorpus(c.data.source), Tokenizer(), c.data.valFraction, c.maxSeqLen(),
                         99);
    for (int64_t seed : seeds) {
        c.run.seed = seed;
        Transformer model = trainFp32(c, device);
        const auto settings = settingsAt(c, steps - 1);
        AttentionSwitches sw;
        sw.qkNorm = c.attention.qkNorm;
        sw.alpha = settings.alpha;
        sw.scale = c.logitScale();
        sw.softcap = settings.softcap;
        sw.softcapC = settings.softcapC;
        report(c, seed, c.attention.qkNorm == QkNormVariant::None ? "raw" : "normed", sw.alpha,
               measure(model, c, data, sw, batches, device));
        if (c.attention.qkNorm != QkNormVariant::None) {
            sw.alpha = 0.0;  // the same weights with the norm not applied
            report(c, seed, "norm_removed", 0.0, measure(model, c, data, sw, batches, device));
        }
    }
    return 0;
}
