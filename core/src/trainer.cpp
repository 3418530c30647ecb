// trainer.cpp — the training loop: schedules and events per step, forward/backward, clipping,
// AdamW, probes, spike detection and diagnosis, validation, checkpoints, and the controls
// (pause, resume, stop, interventions) that other threads use.
#include "qklab/trainer.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <ATen/autocast_mode.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "data_loader.h"
#include "model.h"
#include "probes.h"
#include "qklab/corpus.h"
#include "qklab/error.h"
#include "qklab/schedules.h"
#include "qklab/spikes.h"

namespace qklab {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// A training step allocates and frees the same few-MB activation buffers every step. glibc
// serves such sizes with fresh mmap()s and returns them on free(), so every step pays page
// faults and zeroing on first touch: on the tiny config that halved the step rate. Keeping
// them in the heap (mmap only above 32 MiB, no trimming) makes reuse free. Process-wide, once.
void keepActivationMemoryInHeap() {
#if defined(__GLIBC__)
    static std::once_flag once;
    std::call_once(once, [] {
        mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
        mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024);
    });
#endif
}

torch::Tensor stringTensor(const std::string& s) {
    return torch::from_blob(const_cast<char*>(s.data()), {static_cast<int64_t>(s.size())}, torch::kUInt8).clone();
}

std::string tensorString(const torch::Tensor& t) {
    auto c = t.contiguous();
    return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()), static_cast<size_t>(c.numel()));
}

}  // namespace

struct Trainer::Impl {
    RunConfig config;              // events grow with interventions
    TrainerOptions options;
    torch::Device device{torch::kCPU};
    bool bf16 = false;
    Transformer model{nullptr};
    std::unique_ptr<torch::optim::AdamW> optimizer;
    std::unique_ptr<ByteDataLoader> data;
    int64_t startStep = 0;
    int64_t paramCount = 0;

    std::atomic<bool> pauseRequested{false}, stopRequested{false}, paused{false};
    std::mutex controlMutex;
    std::condition_variable controlCv;
    std::deque<Event> pendingInterventions;
    int64_t currentStep = 0;
    std::string lastCheckpoint;

    AttentionSwitches switchesFor(const StepSettings& s) const {
        AttentionSwitches sw;
        sw.qkNorm = qkNormFromString(s.qkNorm);
        const auto& on = config.attention.qkNormOn;
        sw.normOn = on == "k" ? NormTarget::K : on == "qkv" ? NormTarget::QKV : NormTarget::QK;
        sw.normAfterRope = config.attention.qkNormPlacement == "after_rope";
        sw.alpha = s.alpha;
        sw.scale = config.logitScale();
        sw.softcap = softcapFromString(s.softcapKind);
        sw.softcapC = s.softcapC;
        return sw;
    }

    void buildOptimizer() {
        using torch::optim::AdamWOptions;
        auto base = AdamWOptions(config.optim.lr)
                        .betas({config.optim.betas[0], config.optim.betas[1]})
                        .eps(config.optim.eps);
        std::vector<torch::optim::OptimizerParamGroup> groups;
        groups.emplace_back(model->decayedParameters(),
                            std::make_unique<AdamWOptions>(AdamWOptions(base).weight_decay(config.optim.weightDecay)));
        groups.emplace_back(model->undecayedParameters(),
                            std::make_unique<AdamWOptions>(AdamWOptions(base).weight_decay(0.0)));
        optimizer = std::make_unique<torch::optim::AdamW>(std::move(groups), base);
    }

    void setLr(double lr) {
        for (auto& g : optimizer->param_groups())
            static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
    }

    void saveCheckpoint(int64_t nextStep, TrainingObserver& observer) {
        if (options.checkpointDir.empty()) return;
        std::filesystem::create_directories(options.checkpointDir);
        const std::string path = options.checkpointDir + "/step-" + std::to_string(nextStep) + ".pt";
        torch::serialize::OutputArchive archive;
        model->save(archive);
        torch::serialize::OutputArchive optArchive;
        optimizer->save(optArchive);
        archive.write("optimizer", optArchive);
        archive.write("next_step", torch::tensor(nextStep));
        archive.write("sampler_state", stringTensor(data->rngState()));
        archive.write("config_json", stringTensor(configToJson(config).dump()));
        archive.save_to(path);
        // Keep only the newest checkpoint: a run resumes from its last one.
        if (!lastCheckpoint.empty() && lastCheckpoint != path) std::filesystem::remove(lastCheckpoint);
        lastCheckpoint = path;
        observer.onCheckpoint(CheckpointInfo{nextStep, path});
    }

    void loadCheckpoint(const std::string& path) {
        if (!std::filesystem::exists(path))
            throw Error(ErrorCode::MissingFile, "checkpoint " + path + " does not exist");
        torch::serialize::InputArchive archive;
        try {
            archive.load_from(path, device);
            model->load(archive);
            torch::serialize::InputArchive optArchive;
            archive.read("optimizer", optArchive);
            optimizer->load(optArchive);
            torch::Tensor next, sampler;
            archive.read("next_step", next);
            archive.read("sampler_state", sampler);
            startStep = next.item<int64_t>();
            data->setRngState(tensorString(sampler));
        } catch (const c10::Error& e) {
            throw Error(ErrorCode::InvalidConfig, "checkpoint " + path + " cannot be loaded: " +
                                                      e.what_without_backtrace());
        }
        lastCheckpoint = path;
    }

    double validationLoss(const StepSettings& s) {
        torch::NoGradGuard noGrad;
        const auto sw = switchesFor(s);
        double total = 0;
        for (int64_t i = 0; i < config.eval.batches; ++i) {
            auto b = data->valBatch(i, config.eval.batches, config.data.batchSize, s.seqLen);
            total += model->forward(b.x.to(device), b.y.to(device), sw, nullptr).ceLoss.item<double>();
        }
        return total / static_cast<double>(config.eval.batches);
    }

    // Apply pending interventions at `step`; returns them for reporting.
    std::vector<Event> takeInterventions(int64_t step) {
        std::lock_guard<std::mutex> lock(controlMutex);
        std::vector<Event> taken;
        while (!pendingInterventions.empty()) {
            Event e = pendingInterventions.front();
            pendingInterventions.pop_front();
            e.step = step;
            auto pos = std::upper_bound(config.events.begin(), config.events.end(), e,
                                        [](const Event& a, const Event& b) { return a.step < b.step; });
            config.events.insert(pos, e);
            taken.push_back(e);
        }
        return taken;
    }

    // Blocks while paused; returns false when a stop was requested.
    bool waitWhilePaused() {
        std::unique_lock<std::mutex> lock(controlMutex);
        while (pauseRequested && !stopRequested) {
            paused = true;
            controlCv.wait_for(lock, std::chrono::milliseconds(100));
        }
        paused = false;
        return !stopRequested;
    }
};

Trainer::Trainer(const RunConfig& config, TrainerOptions options) : m_impl(std::make_unique<Impl>()) {
    validate(config);
    keepActivationMemoryInHeap();
    auto& d = *m_impl;
    d.config = config;
    std::stable_sort(d.config.events.begin(), d.config.events.end(),
                     [](const Event& a, const Event& b) { return a.step < b.step; });
    d.options = std::move(options);
    if (config.run.device == "cuda") {
        if (!torch::cuda::is_available())
            throw Error(ErrorCode::Unsupported,
                        "run.device = cuda, but this LibTorch has no CUDA or no GPU is visible "
                        "(use run.device = cpu)");
        d.device = torch::Device(torch::kCUDA, 0);
    }
    d.bf16 = config.run.dtype == "bf16";
    torch::set_num_threads(config.run.threads > 0
                               ? static_cast<int>(config.run.threads)
                               : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    d.data = std::make_unique<ByteDataLoader>(loadCorpus(config.data.source), config.data.valFraction,
                                              config.maxSeqLen(), static_cast<uint64_t>(config.run.seed));
    torch::manual_seed(static_cast<uint64_t>(config.run.seed));
    d.model = Transformer(config);
    d.model->to(d.device);
    d.paramCount = d.model->parameterCount();
    d.buildOptimizer();
    if (!d.options.resumeFrom.empty()) d.loadCheckpoint(d.options.resumeFrom);
}

Trainer::~Trainer() = default;

RunOutcome Trainer::run(TrainingObserver& observer) {
    auto& d = *m_impl;
    auto& cfg = d.config;
    RunOutcome outcome;
    outcome.stepsDone = d.startStep;
    RollingZScore lossZ(cfg.spikes.window, cfg.spikes.minHistory);
    RollingZScore gradZ(cfg.spikes.window, cfg.spikes.minHistory);
    std::vector<ProbeSummary> probeHistory;
    int64_t spikesSoFar = 0, lastSpikeStep = -1000000;
    constexpr int64_t kSpikeRefractorySteps = 10;  // one report per spike episode
    auto lastFlush = Clock::now();
    const auto params = d.model->parameters();
    const auto gains = d.model->qkGains();
    ProbeSettings probeSettings;
    probeSettings.bins = cfg.probes.histBins;
    probeSettings.lo = cfg.probes.histMin;
    probeSettings.hi = cfg.probes.histMax;
    probeSettings.symlog = cfg.probes.histScale == "symlog";

    d.model->train();
    for (int64_t step = d.startStep; step < cfg.schedule.steps; ++step) {
        d.currentStep = step;
        if (d.stopRequested || !d.waitWhilePaused()) {
            d.saveCheckpoint(step, observer);
            outcome.status = RunStatus::Stopped;
            outcome.message = "stopped at step " + std::to_string(step);
            observer.onFlushPoint();
            return outcome;
        }
        for (const auto& e : d.takeInterventions(step)) {
            auto params = e.params;
            params.erase("_intervention");
            observer.onEvent(EventRecord{e.step, e.kind, params.dump(), "user"});
        }
        const auto t0 = Clock::now();
        const StepSettings s = settingsAt(cfg, step);
        for (const auto& e : cfg.events)  // config events are reported when they take effect
            if (e.step == step && !e.params.contains("_intervention"))
                observer.onEvent(EventRecord{e.step, e.kind, e.params.dump(), "config"});
        const auto sw = d.switchesFor(s);
        d.setLr(s.lr);

        Batch batch = s.dirtyBatch ? d.data->dirtyBatch(s.dirtyText, cfg.data.batchSize, s.seqLen)
                                   : d.data->trainBatch(cfg.data.batchSize, s.seqLen);
        auto x = batch.x.to(d.device), y = batch.y.to(d.device);
        const bool probing = cfg.probes.every > 0 && step % cfg.probes.every == 0;
        const bool mapping = probing && cfg.probes.attnMapEvery > 0 && step % cfg.probes.attnMapEvery == 0;
        std::vector<AttentionCapture> captures;

        // bf16: the forward runs under autocast (matmuls in bf16, fp32 master weights); the
        // backward follows the forward's dtypes. Probes convert to fp32 themselves.
        if (d.bf16) setBf16Autocast(d.device, true);
        auto result = d.model->forward(x, y, sw, probing ? &captures : nullptr);
        if (d.bf16) {
            setBf16Autocast(d.device, false);
            at::autocast::clear_cache();  // cached bf16 weight copies go stale after the update
        }
        for (auto& p : params) p.mutable_grad() = torch::Tensor();  // zero_grad(set_to_none)
        result.loss.backward();
        const double clipTo = cfg.optim.gradClip > 0 ? cfg.optim.gradClip : std::numeric_limits<double>::infinity();
        const double gradNorm = torch::nn::utils::clip_grad_norm_(params, clipTo);
        const double loss = result.loss.item<double>();

        if (probing) {
            probeSettings.softcap = sw.softcap;
            probeSettings.softcapC = sw.softcapC;
            std::vector<ProbeStats> stats;
            std::vector<LogitHistogram> hists;
            computeProbes(step, captures, probeSettings, stats, hists);
            probeHistory.push_back(summarizeProbes(step, stats));
            // Keep the run's first probe (the diagnosis compares against it) and the latest 63.
            if (probeHistory.size() > 64) probeHistory.erase(probeHistory.begin() + 1);
            observer.onProbes(step, stats, hists);
            if (mapping) observer.onAttentionMaps(attentionMaps(step, captures));
            captures.clear();  // free the (B, H, T, T) tensors before the update
        }

        StepMetrics m;
        m.step = step;
        m.loss = loss;
        m.gradNorm = gradNorm;
        m.lr = s.lr;
        m.alpha = s.alpha;
        m.softcapC = s.softcapC;
        m.seqLen = s.seqLen;

        if (!std::isfinite(loss) || !std::isfinite(gradNorm)) {
            // Divergence is an outcome: keep the weights of the last good step, report, stop.
            m.tokensPerSec = static_cast<double>(cfg.data.batchSize * s.seqLen) / seconds(t0, Clock::now());
            observer.onStep(m);
            observer.onFlushPoint();
            outcome.status = RunStatus::Diverged;
            outcome.stepsDone = step + 1;
            outcome.message = std::string(std::isfinite(loss) ? "gradient norm" : "loss") +
                              " became " + (std::isnan(std::isfinite(loss) ? gradNorm : loss) ? "nan" : "inf") +
                              " at step " + std::to_string(step);
            return outcome;
        }

        // Learnable QK scales are frozen during an anneal: the optimizer would otherwise
        // inflate them to compensate, and they would explode as alpha reaches 0.
        if (s.annealing)
            for (auto& g : gains) g.mutable_grad() = torch::Tensor();
        d.optimizer->step();

        // Spikes: rolling z-scores of loss and grad norm, diagnosed from earlier probes.
        const auto zl = lossZ.push(loss), zg = gradZ.push(gradNorm);
        const bool lossSpike = zl && *zl > cfg.spikes.zThreshold;
        const bool gradSpike = zg && *zg > cfg.spikes.zThreshold;
        if ((lossSpike || gradSpike) && step - lastSpikeStep > kSpikeRefractorySteps) {
            lastSpikeStep = step;
            ++spikesSoFar;
            Spike spike;
            spike.step = step;
            spike.metric = lossSpike && gradSpike ? "loss,grad_norm" : lossSpike ? "loss" : "grad_norm";
            spike.value = lossSpike ? loss : gradNorm;
            spike.zScore = std::max(zl.value_or(0.0), zg.value_or(0.0));
            DiagnosisContext ctx;
            ctx.qkNormActive = s.qkNorm != "none" && s.alpha > 0;
            ctx.spikesSoFar = spikesSoFar;
            ctx.stepsSoFar = step + 1;
            diagnoseSpike(spike, probeHistory, ctx);
            observer.onSpike(spike);
        }

        const bool lastStep = step + 1 == cfg.schedule.steps;
        if ((cfg.eval.every > 0 && (step + 1) % cfg.eval.every == 0) || lastStep)
            m.valLoss = d.validationLoss(s);
        m.tokensPerSec = static_cast<double>(cfg.data.batchSize * s.seqLen) / seconds(t0, Clock::now());
        observer.onStep(m);
        outcome.stepsDone = step + 1;
        outcome.finalLoss = loss;

        if (cfg.run.checkpointEvery > 0 && (step + 1) % cfg.run.checkpointEvery == 0 && !lastStep)
            d.saveCheckpoint(step + 1, observer);
        if (probing || seconds(lastFlush, Clock::now()) > 0.5) {
            observer.onFlushPoint();
            lastFlush = Clock::now();
        }
    }
    d.saveCheckpoint(cfg.schedule.steps, observer);
    observer.onFlushPoint();
    outcome.status = RunStatus::Finished;
    return outcome;
}

void Trainer::requestPause() {
    m_impl->pauseRequested = true;
}

void Trainer::requestResume() {
    m_impl->pauseRequested = false;
    m_impl->controlCv.notify_all();
}

void Trainer::requestStop() {
    m_impl->stopRequested = true;
    m_impl->controlCv.notify_all();
}

bool Trainer::isPaused() const {
    return m_impl->paused;
}

void Trainer::postIntervention(const Event& event) {
    auto& d = *m_impl;
    Event e = event;
    e.step = std::min<int64_t>(d.currentStep + 1, d.config.schedule.steps - 1);
    e.params["_intervention"] = true;  // reported as a user event, not again as a config event
    RunConfig probe = d.config;
    probe.events.push_back(e);
    for (auto& ev : probe.events) ev.params.erase("_intervention");
    const auto problems = validationProblems(probe);
    if (!problems.empty()) throw Error(ErrorCode::InvalidConfig, "intervention: " + problems.front());
    if (e.kind == "context_length" && e.params.value("seq_len", int64_t{0}) > d.config.maxSeqLen())
        throw Error(ErrorCode::InvalidConfig,
                    "intervention: context_length seq_len " + e.params["seq_len"].dump() +
                        " exceeds the longest context this model was built for (" +
                        std::to_string(d.config.maxSeqLen()) +
                        "); add the context switch to the preset's events instead");
    std::lock_guard<std::mutex> lock(d.controlMutex);
    d.pendingInterventions.push_back(e);
}

void Trainer::setCheckpointDir(const std::string& dir) { m_impl->options.checkpointDir = dir; }
const RunConfig& Trainer::config() const { return m_impl->config; }
int64_t Trainer::parameterCount() const { return m_impl->paramCount; }
int64_t Trainer::startStep() const { return m_impl->startStep; }

std::string Trainer::deviceDescription() const {
    const auto& d = *m_impl;
    std::string s = d.device.is_cuda() ? "cuda:0" : "cpu (" + std::to_string(torch::get_num_threads()) + " threads)";
    return s + ", " + d.config.run.dtype;
}

std::string torchVersion() {
    return TORCH_VERSION;
}

std::string appVersion() {
    return std::string(QKLAB_VERSION) + "+" + QKLAB_GIT_HASH;
}

bool cudaAvailable() {
    return torch::cuda::is_available();
}

namespace {

// The optimised BLAS libraries mapped into this process, from /proc/self/maps (Linux).
std::string optimisedBlasLoaded() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    for (const char* name : {"openblas", "libmkl", "libblis", "libatlas"}) {
        maps.clear();
        maps.seekg(0);
        while (std::getline(maps, line))
            if (line.find(name) != std::string::npos) return name;
    }
    return {};
}

}  // namespace

BlasCheck checkBlasSpeed() {
    torch::NoGradGuard noGrad;
    const int64_t n = 384;
    auto a = torch::randn({n, n}), b = torch::randn({n, n});
    torch::mm(a, b);  // warm-up (thread pool start)
    const auto t0 = Clock::now();
    int reps = 0;
    while (seconds(t0, Clock::now()) < 0.05 || reps < 3) {
        torch::mm(a, b);
        ++reps;
    }
    BlasCheck r;
    r.gflops = 2.0 * n * n * n * reps / seconds(t0, Clock::now()) / 1e9;
    // The reference BLAS does ~1-3 GFLOP/s here, OpenBLAS tens to hundreds. A busy machine can
    // also measure low, so the verdict needs both: slow, and no optimised BLAS mapped.
    const std::string blas = optimisedBlasLoaded();
    r.slow = r.gflops < 5.0 && blas.empty();
    if (r.slow)
        r.message = "matrix multiply runs at only " + std::to_string(r.gflops).substr(0, 5) +
                    " GFLOP/s and no optimised BLAS is loaded: LibTorch is probably using the "
                    "reference BLAS. On Debian/Ubuntu install libopenblas0-openmp (training is "
                    "~20x faster).";
    else if (r.gflops < 5.0)
        r.message = "matrix multiply measured only " + std::to_string(r.gflops).substr(0, 5) +
                    " GFLOP/s with " + blas + " loaded: is the machine busy?";
    return r;
}

}  // namespace qklab
