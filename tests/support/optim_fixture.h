// optim_fixture.h — what the optimizer tests share (optim_test, fused_adamw_test): a small
// model config, twin models of one seed stepped on the same batches, a relative difference,
// an archive round trip through bytes, and an observer that records what a run reports.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/src/data_loader.h"
#include "engine/src/device_optim.h"
#include "engine/src/model.h"
#include "qklab/config/corpus.h"
#include "qklab/config/events.h"
#include "qklab/engine/trainer.h"

namespace qklab::testing_support {

inline RunConfig smallConfig(int64_t steps) {
    RunConfig c;
    c.model.dModel = 64;
    c.model.nLayers = 2;
    c.model.nHeads = 4;
    c.model.seqLen = 32;
    c.data.batchSize = 8;
    c.schedule.steps = steps;
    c.schedule.warmupSteps = 5;
    c.optim.lr = 1e-2;
    c.eval.every = 0;
    c.eval.batches = 1;
    c.run.threads = 2;
    c.run.fusedAttention = false;  // the explicit path, as the optimizer was checked before
    c.probes.every = 0;
    c.optim.fused = AutoSwitch::Off;  // the per-parameter AdamW, in LibTorch's operation order
    return c;
}

inline AttentionSwitches plainSwitches(const RunConfig& c, double alpha = 1.0) {
    AttentionSwitches sw;
    sw.qkNorm = c.attention.qkNorm;
    sw.scale = c.logitScale();
    sw.alpha = alpha;
    return sw;
}

// Largest |a - b| / max(|b|, tiny) over two tensors, and whether they are bitwise equal.
inline double maxRelativeDifference(const torch::Tensor& a, const torch::Tensor& b) {
    auto denom = b.abs().clamp_min(1e-12);
    return ((a - b).abs() / denom).max().item<double>();
}

// The same model twice (same seed), one step at a time, each with its own optimizer.
struct Twins {
    RunConfig config;
    Transformer a{nullptr}, b{nullptr};
    std::unique_ptr<TokenDataLoader> data;
    explicit Twins(const RunConfig& c) : config(c) {
        torch::manual_seed(11);
        a = Transformer(c);
        torch::manual_seed(11);
        b = Transformer(c);
        data = std::make_unique<TokenDataLoader>(loadCorpus("builtin"), Tokenizer(), 0.1,
                                                 c.model.seqLen, 5);
    }
    std::vector<AdamWGroup> groups(Transformer& m) {
        return {{m->decayedParameters(), config.optim.weightDecay},
                {m->undecayedParameters(), 0.0}};
    }
    // Forward + backward of the same batch on both models; alpha < 1 exercises the gains.
    void backward(double alpha) {
        auto batch = data->trainBatch(config.data.batchSize, config.model.seqLen);
        for (Transformer* m : {&a, &b}) {
            for (auto& p : (*m)->parameters()) p.mutable_grad() = torch::Tensor();
            (*m)->forward(batch.x, batch.y, plainSwitches(config, alpha), nullptr).loss.backward();
        }
    }
};

// An archive written to bytes and read back, as a checkpoint file would be.
inline torch::serialize::InputArchive reread(torch::serialize::OutputArchive& out) {
    std::ostringstream bytes;
    out.save_to(bytes);
    std::istringstream in(bytes.str());
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    return archive;
}

struct LossRecorder : TrainingObserver {
    std::vector<StepMetrics> steps;
    std::vector<ProbeStats> probes;
    std::vector<std::string> order;  // kinds of the calls, in order
    void onStep(const StepMetrics& m) override {
        steps.push_back(m);
        order.push_back("step " + std::to_string(m.step));
    }
    void onProbes(int64_t step, const std::vector<ProbeStats>& s,
                  const std::vector<LogitHistogram>&) override {
        probes.insert(probes.end(), s.begin(), s.end());
        order.push_back("probes " + std::to_string(step));
    }
    void onEvent(const EventRecord& e) override {
        order.push_back("event " + std::to_string(e.step));
    }
    void onSpike(const Spike& s) override { order.push_back("spike " + std::to_string(s.step)); }
};

// A run with eager steps around every kind of special step: probes every 7 (0, 7, ..., 56),
// validation every 25 and an LR multiplier event at step 20.
inline RunConfig eventfulConfig(int64_t steps) {
    RunConfig c = smallConfig(steps);
    c.run.fusedAttention = true;
    c.probes.every = 7;
    c.eval.every = 25;
    c.events.push_back(
        eventFromJson({{"step", 20}, {"kind", "lr_multiplier"}, {"factor", 3.0}}, "test"));
    return c;
}

// Two runs reported exactly the same: the same calls in the same order, every step's loss,
// norms, validation loss and output-logit statistics (||mu|| too), and every probe's max logit.
inline void expectSameReport(const LossRecorder& a, const LossRecorder& b) {
    EXPECT_EQ(a.order, b.order);
    ASSERT_EQ(a.steps.size(), b.steps.size());
    for (size_t i = 0; i < a.steps.size(); ++i) {
        EXPECT_EQ(a.steps[i].loss, b.steps[i].loss) << i;
        EXPECT_EQ(a.steps[i].gradNorm, b.steps[i].gradNorm) << i;
        EXPECT_EQ(a.steps[i].valLoss, b.steps[i].valLoss) << i;
        EXPECT_EQ(a.steps[i].logZMean, b.steps[i].logZMean) << i;
        EXPECT_EQ(a.steps[i].logZMax, b.steps[i].logZMax) << i;
        EXPECT_EQ(a.steps[i].outLogitMax, b.steps[i].outLogitMax) << i;
        EXPECT_EQ(a.steps[i].zLossTerm, b.steps[i].zLossTerm) << i;
        EXPECT_EQ(a.steps[i].updateNorm, b.steps[i].updateNorm) << i;
        EXPECT_EQ(a.steps[i].muNorm, b.steps[i].muNorm) << i;
    }
    ASSERT_EQ(a.probes.size(), b.probes.size());
    for (size_t i = 0; i < a.probes.size(); ++i)
        EXPECT_EQ(a.probes[i].logitMaxRaw, b.probes[i].logitMaxRaw) << i;
}

}  // namespace qklab::testing_support
