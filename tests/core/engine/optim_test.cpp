// optim_test.cpp — the pieces a CUDA-graph step needs, checked on the CPU against what they
// replace: DeviceAdamW against LibTorch's AdamW, clipGradNorm against clip_grad_norm_, a
// legacy AdamW checkpoint imported into DeviceAdamW, and the trainer (DeviceAdamW, device-side
// clip, every-step or deferred readback) against a plain loop over LibTorch's own optimizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <set>
#include <sstream>
#include <thread>
#include <type_traits>

#include "engine/src/data_loader.h"
#include "engine/src/device_optim.h"
#include "engine/src/model.h"
#include "qklab/config/corpus.h"
#include "qklab/config/schedules.h"
#include "qklab/engine/trainer.h"
#include "support/optim_fixture.h"
#include "support/test_files.h"

using namespace qklab;
using namespace qklab::testing_support;

namespace {

torch::optim::AdamW libtorchAdamW(const std::vector<AdamWGroup>& groups, const RunConfig& c) {
    using torch::optim::AdamWOptions;
    auto base =
        AdamWOptions(c.optim.lr).betas({c.optim.betas[0], c.optim.betas[1]}).eps(c.optim.eps);
    std::vector<torch::optim::OptimizerParamGroup> g;
    for (const auto& group : groups)
        g.emplace_back(group.params, std::make_unique<AdamWOptions>(
                                         AdamWOptions(base).weight_decay(group.weightDecay)));
    return torch::optim::AdamW(std::move(g), base);
}

void setLr(torch::optim::AdamW& opt, double lr) {
    for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
}

}  // namespace

TEST(DeviceAdamW, MatchesLibTorchAdamWOverTenSteps) {
    RunConfig c = smallConfig(10);
    c.attention.qkNorm = QkNormVariant::RmsAffine;  // the QK gains get gradients
    Twins t(c);
    auto reference = libtorchAdamW(t.groups(t.a), c);
    DeviceAdamW device(t.groups(t.b), c.optim.betas[0], c.optim.betas[1], c.optim.eps);
    for (int step = 0; step < 10; ++step) {
        t.backward(1.0);
        // Gains without gradient on odd steps (as during an anneal): both must skip them.
        if (step % 2 == 1)
            for (Transformer* m : {&t.a, &t.b})
                for (auto& g : (*m)->qkGains()) g.mutable_grad() = torch::Tensor();
        const double lr = 1e-2 * (step + 1) / 10.0;  // a changing LR, as under warm-up
        setLr(reference, lr);
        device.setLr(lr);
        reference.step();
        device.step();
    }
    const auto pa = t.a->parameters(), pb = t.b->parameters();
    double worst = 0;
    bool bitwise = true;
    for (size_t i = 0; i < pa.size(); ++i) {
        worst = std::max(worst, maxRelativeDifference(pb[i], pa[i]));
        bitwise = bitwise && torch::equal(pa[i], pb[i]);
    }
    EXPECT_LE(worst, 1e-5);
    EXPECT_TRUE(bitwise) << "worst relative difference " << worst
                         << " (within tolerance, but the operation order should make it exact)";
    // Step counts per parameter: 10 for matrices and norms, 5 for the QK gains that had
    // gradients on even steps only, 0 for the gains this variant never uses.
    std::set<int64_t> counts;
    for (size_t i = 0; i < pb.size(); ++i) counts.insert(device.stepCount(i));
    EXPECT_EQ(counts, (std::set<int64_t>{0, 5, 10}));
    EXPECT_EQ(device.stepCount(0), 10);
}

namespace {

// LibTorch keys optimizer state by the parameter's TensorImpl: the pointer in 2.x, the pointer
// printed to a string in 1.13.
template <class Optimizer>
const torch::optim::AdamWParamState* adamWState(Optimizer& opt, const torch::Tensor& p) {
    auto& state = opt.state();
    using Key = typename std::decay_t<decltype(state)>::key_type;
    Key key;
    if constexpr (std::is_same_v<Key, std::string>) {
        std::ostringstream os;
        os << static_cast<const void*>(p.unsafeGetTensorImpl());
        key = os.str();
    } else {
        key = p.unsafeGetTensorImpl();
    }
    auto it = state.find(key);
    return it == state.end() ? nullptr
                             : &static_cast<const torch::optim::AdamWParamState&>(*it->second);
}

// An archive in the layout LibTorch's optimizer serialisation writes (state/<key>/{step,
// exp_avg, exp_avg_sq}, param_groups/<g>/params/<i> = key), with each parameter's key
// spelled by `keyOf`: the parameter's address in decimal as 2.x writes it, in hex as 1.13
// (c10::guts::to_string of the pointer) wrote it.
torch::serialize::InputArchive legacyArchive(torch::optim::AdamW& opt,
                                             const std::function<std::string(const void*)>& keyOf) {
    torch::serialize::OutputArchive out, states, groups;
    out.write("pytorch_version", c10::IValue("1.5.0"));
    groups.write("param_groups/size",
                 torch::tensor(static_cast<int64_t>(opt.param_groups().size())));
    for (size_t g = 0; g < opt.param_groups().size(); ++g) {
        torch::serialize::OutputArchive group;
        const auto& params = opt.param_groups()[g].params();
        group.write("params/size", torch::tensor(static_cast<int64_t>(params.size())));
        for (size_t i = 0; i < params.size(); ++i) {
            const std::string key = keyOf(params[i].unsafeGetTensorImpl());
            group.write("params/" + std::to_string(i), c10::IValue(key));
            const auto* found = adamWState(opt, params[i]);
            if (!found) continue;
            const auto& st = *found;
            torch::serialize::OutputArchive state;
            state.write("step", c10::IValue(st.step()));
            state.write("exp_avg", c10::IValue(st.exp_avg()));
            state.write("exp_avg_sq", c10::IValue(st.exp_avg_sq()));
            states.write(key, state);
        }
        groups.write("param_groups/" + std::to_string(g), group);
    }
    out.write("state", states);
    out.write("param_groups", groups);
    return reread(out);
}

torch::serialize::InputArchive savedBy(torch::optim::AdamW& opt) {
    torch::serialize::OutputArchive out;
    opt.save(out);
    return reread(out);
}

}  // namespace

TEST(DeviceAdamW, ImportsLibTorchAdamWStateOfEitherVersionAndContinuesIdentically) {
    const std::vector<std::string> spellings = {"this LibTorch's own save", "1.13 hex keys",
                                                "2.x decimal keys"};
    for (const auto& spelling : spellings) {
        RunConfig c = smallConfig(10);
        c.attention.qkNorm = QkNormVariant::RmsAffine;  // gains with state next to gains without
        Twins t(c);
        auto reference = libtorchAdamW(t.groups(t.a), c);
        auto legacy = libtorchAdamW(t.groups(t.b), c);
        for (int step = 0; step < 5; ++step) {
            t.backward(1.0);
            reference.step();
            legacy.step();
        }
        // Halfway: the legacy optimizer's state as an old checkpoint holds it, imported into
        // a DeviceAdamW that carries on.
        auto archive = spelling == spellings[0] ? savedBy(legacy)
                       : spelling == spellings[1]
                           ? legacyArchive(legacy,
                                           [](const void* p) {
                                               std::ostringstream os;
                                               os << p;  // 0x55...
                                               return os.str();
                                           })
                           : legacyArchive(legacy, [](const void* p) {
                                 return std::to_string(reinterpret_cast<size_t>(p));
                             });
        DeviceAdamW device(t.groups(t.b), c.optim.betas[0], c.optim.betas[1], c.optim.eps);
        device.importLibTorchAdamW(archive);
        device.setLr(c.optim.lr);
        EXPECT_EQ(device.stepCount(0), 5) << spelling;
        for (int step = 5; step < 10; ++step) {
            t.backward(1.0);
            reference.step();
            device.step();
        }
        const auto pa = t.a->parameters(), pb = t.b->parameters();
        for (size_t i = 0; i < pa.size(); ++i)
            EXPECT_LE(maxRelativeDifference(pb[i], pa[i]), 1e-5) << spelling << " parameter " << i;
    }
}

TEST(DeviceAdamW, RefusesAnOptimizerStateOfAnotherModel) {
    RunConfig small = smallConfig(2), wide = smallConfig(2);
    wide.model.dModel = 96;
    wide.model.nHeads = 4;
    Twins a(small), b(wide);
    auto opt = libtorchAdamW(a.groups(a.a), small);
    a.backward(1.0);
    opt.step();
    auto archive = savedBy(opt);
    DeviceAdamW device(b.groups(b.a), 0.9, 0.95, 1e-8);
    EXPECT_THROW(device.importLibTorchAdamW(archive), c10::Error);
}

TEST(DeviceAdamW, SaveAndLoadRoundTrip) {
    RunConfig c = smallConfig(4);
    Twins t(c);
    DeviceAdamW first(t.groups(t.a), 0.9, 0.95, 1e-8);
    first.setLr(1e-2);
    t.backward(1.0);
    first.step();
    torch::serialize::OutputArchive out;
    first.save(out);
    auto archive = reread(out);
    DeviceAdamW second(t.groups(t.a), 0.9, 0.95, 1e-8);
    second.load(archive);
    EXPECT_EQ(second.stepCount(0), 1);
    EXPECT_EQ(second.stepCount(3), first.stepCount(3));
}

TEST(ClipGradNorm, EqualsLibTorchClipWithoutReadingBack) {
    for (double maxNorm : {0.05, 1e6, std::numeric_limits<double>::infinity()}) {
        RunConfig c = smallConfig(1);
        Twins t(c);
        t.backward(1.0);
        const double expected = torch::nn::utils::clip_grad_norm_(t.a->parameters(), maxNorm);
        const torch::Tensor norm = clipGradNorm(t.b->parameters(), maxNorm);
        EXPECT_EQ(norm.dim(), 0);
        EXPECT_EQ(norm.item<double>(), expected) << "max norm " << maxNorm;
        const auto pa = t.a->parameters(), pb = t.b->parameters();
        for (size_t i = 0; i < pa.size(); ++i)
            if (pa[i].grad().defined()) {
                EXPECT_TRUE(torch::equal(pa[i].grad(), pb[i].grad())) << i;
            }
    }
}

namespace {

// The loop the trainer ran before DeviceAdamW: LibTorch's AdamW, clip_grad_norm_, .item().
struct ReferenceLoop {
    RunConfig c;
    TokenDataLoader data;
    Transformer model{nullptr};
    std::unique_ptr<torch::optim::AdamW> opt;
    std::vector<torch::Tensor> params;

    explicit ReferenceLoop(const RunConfig& config)
        : c(config),
          data(loadCorpus(c.data.source), Tokenizer(), c.data.valFraction, c.maxSeqLen(),
               static_cast<uint64_t>(c.run.seed)) {
        // As the trainer does, in its order: BLAS rounding depends on the thread count.
        torch::set_num_threads(static_cast<int>(c.run.threads));
        torch::manual_seed(static_cast<uint64_t>(c.run.seed));
        model = Transformer(c);
        opt = std::make_unique<torch::optim::AdamW>(
            libtorchAdamW({{model->decayedParameters(), c.optim.weightDecay},
                           {model->undecayedParameters(), 0.0}},
                          c));
        params = model->parameters();
    }
    double step(int64_t step) {
        const auto s = settingsAt(c, step);
        setLr(*opt, s.lr);
        auto batch = data.trainBatch(c.data.batchSize, s.seqLen);
        auto result = model->forward(batch.x, batch.y, plainSwitches(c), nullptr);
        for (auto p : params) p.mutable_grad() = torch::Tensor();
        result.loss.backward();
        torch::nn::utils::clip_grad_norm_(params, c.optim.gradClip);
        const double loss = result.loss.item<double>();
        opt->step();
        return loss;
    }
};

std::vector<double> referenceLossCurve(const RunConfig& c) {
    ReferenceLoop loop(c);
    std::vector<double> losses;
    for (int64_t step = 0; step < c.schedule.steps; ++step) losses.push_back(loop.step(step));
    return losses;
}

LossRecorder trainWith(RunConfig c, Readback readback) {
    c.run.readback = readback;
    Trainer t(c);
    LossRecorder r;
    EXPECT_EQ(t.run(r).status, RunStatus::Finished);
    return r;
}

}  // namespace

TEST(Trainer, LossCurveMatchesLibTorchAdamWOverHundredSteps) {
    const RunConfig c = smallConfig(100);
    const auto reference = referenceLossCurve(c);
    for (const Readback mode : {Readback::EveryStep, Readback::Deferred}) {
        const auto run = trainWith(c, mode);
        ASSERT_EQ(run.steps.size(), reference.size()) << nameOf(mode);
        double worst = 0;
        for (size_t i = 0; i < reference.size(); ++i)
            worst = std::max(worst, std::fabs(run.steps[i].loss - reference[i]));
        EXPECT_LE(worst, 1e-4) << nameOf(mode);
        EXPECT_EQ(worst, 0.0) << nameOf(mode) << ": the same operations in the same order";
        EXPECT_LT(reference.back(), reference.front() - 0.5);  // it learned: not a flat curve
    }
}

TEST(Trainer, DeferredReadbackReportsExactlyWhatEveryStepReadbackReports) {
    const RunConfig c = eventfulConfig(60);
    const auto a = trainWith(c, Readback::EveryStep);
    const auto b = trainWith(c, Readback::Deferred);
    expectSameReport(a, b);
    for (const auto& m : b.steps) EXPECT_GT(m.tokensPerSec, 0) << m.step;
}

TEST(Trainer, DeferredReadbackStopsAtTheFirstNonFiniteStep) {
    RunConfig c = smallConfig(40);
    c.optim.lr = 1e6;  // the largest LR accepted: diverges within a few steps
    c.schedule.warmupSteps = 0;
    c.optim.gradClip = 0;
    std::vector<RunOutcome> outcomes;
    std::vector<size_t> reported;
    for (const Readback mode : {Readback::EveryStep, Readback::Deferred}) {
        c.run.readback = mode;
        Trainer t(c);
        LossRecorder r;
        outcomes.push_back(t.run(r));
        reported.push_back(r.steps.size());
        ASSERT_FALSE(r.steps.empty());
        EXPECT_FALSE(std::isfinite(r.steps.back().loss) && std::isfinite(r.steps.back().gradNorm));
        for (const auto& m : r.steps)
            EXPECT_TRUE(std::isfinite(m.tokensPerSec)) << nameOf(mode) << " " << m.step;
    }
    EXPECT_EQ(outcomes[0].status, RunStatus::Diverged);
    EXPECT_EQ(outcomes[1].status, RunStatus::Diverged);
    EXPECT_EQ(outcomes[0].stepsDone, outcomes[1].stepsDone);
    EXPECT_EQ(outcomes[0].message, outcomes[1].message);
    EXPECT_EQ(reported[0], reported[1]);  // nothing reported past the diverged step
}

TEST(Trainer, ResumesACheckpointWrittenWithLibTorchAdamW) {
    // Checkpoints saved before DeviceAdamW hold LibTorch's AdamW state under "optimizer".
    RunConfig c = smallConfig(20);
    const auto reference = referenceLossCurve(c);  // 20 uninterrupted steps

    ReferenceLoop loop(c);
    for (int64_t step = 0; step < 10; ++step) loop.step(step);
    auto bytes = [](const std::string& s) {
        return torch::from_blob(const_cast<char*>(s.data()), {static_cast<int64_t>(s.size())},
                                torch::kUInt8)
            .clone();
    };
    const std::string path =
        (qklab::testsupport::scratchDir("legacy-ckpt") / "step-10.pt").string();
    torch::serialize::OutputArchive archive, optArchive;
    loop.model->save(archive);
    loop.opt->save(optArchive);
    archive.write("optimizer", optArchive);
    archive.write("next_step", torch::tensor(int64_t{10}));
    archive.write("sampler_state", bytes(loop.data.rngState()));
    archive.write("config_json", bytes(configToJson(c).dump()));
    archive.save_to(path);

    TrainerOptions options;
    options.resumeFrom = path;
    Trainer resumed(c, options);
    EXPECT_EQ(resumed.startStep(), 10);
    LossRecorder r;
    EXPECT_EQ(resumed.run(r).status, RunStatus::Finished);
    ASSERT_EQ(r.steps.size(), 10u);
    for (size_t i = 0; i < r.steps.size(); ++i)
        EXPECT_NEAR(r.steps[i].loss, reference[10 + i], 1e-5 * reference[10 + i])
            << "step " << 10 + i;
    std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(Trainer, PausingInDeferredReadbackReportsEveryStepAndKeepsThePauseOutOfTokensPerSecond) {
    RunConfig c = smallConfig(100);
    c.run.readback = Readback::Deferred;
    Trainer t(c);
    LossRecorder r;
    size_t reportedWhenPaused = 0, reportedLater = 0;
    int64_t pausedAt = -1;
    double pausedSeconds = 0;
    // The pause is asked for once a few steps have trained (not after a fixed time: on a busy
    // machine the run may not have started by then), and the waits are bounded by a minute,
    // far more than the ~1 ms a step of this model takes.
    const auto waitFor = [](const auto& done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!done() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    };
    std::thread control([&] {
        waitFor([&] { return t.currentStep() >= 3; });
        t.requestPause();
        waitFor([&] { return t.isPaused(); });
        const auto paused = std::chrono::steady_clock::now();
        pausedAt = t.currentStep();
        reportedWhenPaused = r.steps.size();
        std::this_thread::sleep_for(std::chrono::milliseconds(800));
        reportedLater = r.steps.size();
        pausedSeconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - paused).count();
        t.requestResume();
    });
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(t.run(r).status, RunStatus::Finished);
    const double runSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    control.join();
    ASSERT_EQ(r.steps.size(), 100u);
    ASSERT_GT(pausedAt, 0) << "the run ended before the pause";
    ASSERT_LT(pausedAt, 100) << "the run ended before the pause";
    // Paused at the start of a step: every step trained before it has been reported.
    EXPECT_EQ(reportedWhenPaused, static_cast<size_t>(pausedAt));
    EXPECT_EQ(reportedLater, reportedWhenPaused);
    // The time the steps' tokens/s account for leaves the pause out.
    double stepSeconds = 0;
    for (const auto& m : r.steps)
        stepSeconds += static_cast<double>(c.data.batchSize * m.seqLen) / m.tokensPerSec;
    EXPECT_LT(stepSeconds, runSeconds - 0.5 * pausedSeconds)
        << "run " << runSeconds << " s, paused " << pausedSeconds << " s";
}
