// trainer.cpp — the training loop: schedules and events per step, forward/backward, clipping,
// AdamW, probes, spike detection and diagnosis, validation, checkpoints, and the controls
// (pause, resume, stop, interventions) that other threads use.
#include "qklab/engine/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Version.h>
#include <ATen/autocast_mode.h>
#include <fcntl.h>  // open/fsync/rename for checkpoint files
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "qklab/analysis/histogram_bins.h"
#include "qklab/analysis/run_monitor.h"
#include "qklab/analysis/spikes.h"
#include "qklab/config/corpus.h"
#include "qklab/config/resources.h"
#include "qklab/config/schedules.h"
#include "qklab/engine/environment.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"
#include "trainer_impl.h"

namespace qklab {

namespace {

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
    return torch::from_blob(const_cast<char*>(s.data()), {static_cast<int64_t>(s.size())},
                            torch::kUInt8)
        .clone();
}

std::string tensorString(const torch::Tensor& t) {
    auto c = t.contiguous();
    return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()),
                       static_cast<size_t>(c.numel()));
}

}  // namespace

namespace {

// Writes an archive to `path` through a temporary file, fsync and rename, so that the path
// holds either a whole checkpoint or nothing. A failed write is remembered rather than
// thrown inside LibTorch's zip writer: an exception there makes its destructor throw again
// while unwinding, which terminates the process (the SIGABRT a full disk used to cause).
void writeArchiveAtomically(torch::serialize::OutputArchive& archive, const std::string& path,
                            int64_t step) {
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0) {
        archive.save_to([&](const void* data, size_t n) -> size_t {
            for (size_t done = 0; err == 0 && done < n;) {
                const ssize_t w = ::write(fd, static_cast<const char*>(data) + done, n - done);
                if (w < 0 && errno != EINTR) err = errno;
                if (w > 0) done += static_cast<size_t>(w);
            }
            return n;  // even after a failure: the writer must finish without throwing
        });
        if (err == 0 && ::fsync(fd) != 0) err = errno;
        if (::close(fd) != 0 && err == 0) err = errno;
    }
    if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
    if (err == 0) return;
    ::unlink(tmp.c_str());
    const std::string at = "checkpoint at step " + std::to_string(step);
    throw Error(ErrorCode::Io,
                err == ENOSPC || err == EDQUOT
                    ? "disk full while saving " + at + " (" + path + ")"
                    : "could not save " + at + " to " + path + ": " + std::strerror(err));
}

}  // namespace

// Saves the model, optimizer and sampler state. Buffered rows are committed first, so a
// failing save (a full disk) cannot take the steps trained so far with it; the previous
// checkpoint file stays until the store has committed this one's row (RunWriter deletes it).
void Trainer::Impl::saveCheckpoint(int64_t nextStep, TrainingObserver& observer) {
    if (checkpointDir.empty()) return;
    observer.onFlushPoint();
    std::error_code ec;
    std::filesystem::create_directories(checkpointDir, ec);
    if (ec)
        throw Error(ErrorCode::Io, "could not create the checkpoint folder " + checkpointDir +
                                       ": " + ec.message());
    const std::string path = checkpointDir + "/step-" + std::to_string(nextStep) + ".pt";
    torch::serialize::OutputArchive archive;
    model->save(archive);
    torch::serialize::OutputArchive optArchive;
    optimizer->save(optArchive);
    archive.write("device_adamw", optArchive);
    archive.write("next_step", torch::tensor(nextStep));
    archive.write("sampler_state", stringTensor(data->rngState()));
    archive.write("config_json", stringTensor(configToJson(config).dump()));
    // By the config's kind, not by the merges: a text with no pair to join has none, and its
    // checkpoints must still say that they belong to a BPE run (generation looks for this).
    if (config.data.tokenizer == TokenizerKind::Bpe)
        archive.write("bpe_merges", mergesTensor(data->tokenizer()));
    if (config.optim.skipStep != SkipStepPolicy::Off)
        archive.write("policy_state", stringTensor(policyState()));
    writeArchiveAtomically(archive, path, nextStep);
    lastCheckpoint = path;
    lastCheckpointTime = Clock::now();
    observer.onCheckpoint(CheckpointInfo{nextStep, path, {}});
    observer.onFlushPoint();  // commit the row now: the store then drops older checkpoints
}

// A BPE is trained on the corpus when the run starts: a checkpoint resumed against a changed
// text would go on with other token ids under the same embedding rows.
void Trainer::Impl::checkSameTokenizer(torch::serialize::InputArchive& archive,
                                       const std::string& path) const {
    if (config.data.tokenizer == TokenizerKind::Bytes) return;
    torch::Tensor merges;
    if (!archive.try_read("bpe_merges", merges))
        throw Error(ErrorCode::BadCheckpoint, "checkpoint " + path + " has no BPE merges");
    if (tokenizerFromMerges(merges, "checkpoint " + path).merges() != data->tokenizer().merges())
        throw Error(ErrorCode::BadCheckpoint,
                    "checkpoint " + path +
                        " was trained with other BPE merges than data.source gives now (has the "
                        "text changed?)");
}

void Trainer::Impl::loadCheckpoint(const std::string& path) {
    if (!std::filesystem::exists(path))
        throw Error(ErrorCode::MissingFile, "checkpoint " + path + " does not exist");
    torch::serialize::InputArchive archive;
    try {
        archive.load_from(path, device);
        model->load(archive);
        torch::serialize::InputArchive optArchive;
        if (archive.try_read("device_adamw", optArchive)) {
            optimizer->load(optArchive);
        } else {  // written before DeviceAdamW: LibTorch's AdamW state
            archive.read("optimizer", optArchive);
            optimizer->importLibTorchAdamW(optArchive);
        }
        torch::Tensor next, sampler;
        archive.read("next_step", next);
        archive.read("sampler_state", sampler);
        startStep = next.item<int64_t>();
        data->setRngState(tensorString(sampler));
        checkSameTokenizer(archive, path);
        torch::Tensor policy;  // absent before issue 40, and in a run without a policy
        if (archive.try_read("policy_state", policy))
            restorePolicyState(tensorString(policy), "checkpoint " + path);
    } catch (const c10::Error& e) {
        throw Error(ErrorCode::BadCheckpoint,
                    "checkpoint " + path + " cannot be loaded: " + e.what_without_backtrace());
    }
    lastCheckpoint = path;
}

double Trainer::Impl::validationLoss(const StepPlan& plan) {
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> losses;  // summed on the host side of one transfer
    for (int64_t i = 0; i < config.eval.batches; ++i) {
        auto b =
            data->valBatch(i, config.eval.batches, config.data.batchSize, plan.settings.seqLen);
        losses.push_back(
            model->forward(b.x.to(device), b.y.to(device), plan.evalSwitches, nullptr).ceLoss);
    }
    const auto values = torch::stack(losses).to(torch::kFloat64).cpu();
    double total = 0;
    for (int64_t i = 0; i < values.numel(); ++i) total += values.data_ptr<double>()[i];
    return total / static_cast<double>(config.eval.batches);
}

// Apply pending interventions at `step`; returns them for reporting.
std::vector<Event> Trainer::Impl::takeInterventions(int64_t step) {
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
bool Trainer::Impl::waitWhilePaused() {
    std::unique_lock<std::mutex> lock(controlMutex);
    while (pauseRequested && !stopRequested) {
        paused = true;
        controlCv.wait_for(lock, std::chrono::milliseconds(100));
    }
    paused = false;
    return !stopRequested;
}

// The interventions applied at `step` (source "user") and the config events that take effect
// there (source "config").
std::vector<EventRecord> Trainer::Impl::eventsAt(int64_t step) {
    auto record = [](const Event& e) {
        return EventRecord{e.step, nameOf(e.kind), eventParamsJson(e).dump(), nameOf(e.source)};
    };
    std::vector<EventRecord> out;
    for (const auto& e : takeInterventions(step)) out.push_back(record(e));
    // Config and policy events when they take effect; user events already in the config came
    // from an earlier session of a resumed run, whose store already holds them.
    for (const auto& e : config.events)
        if (e.step == step && e.source != EventSource::User) out.push_back(record(e));
    return out;
}

// Forward, backward, clip, probes and the AdamW update of one step, with no host readback
// except where the configuration asks for one (probes, validation, every-step readback).
Batch Trainer::Impl::drawBatch(const StepSettings& s) {
    return s.dirtyBatch ? data->dirtyBatch(s.dirtyText, config.data.batchSize, s.seqLen)
                        : data->trainBatch(config.data.batchSize, s.seqLen);
}

// Everything one step reports, in the order the observer has always heard it: its events,
// its probes, then (for a finite step) spikes and the step's metrics.
void Trainer::Impl::reportStep(PendingStep& p, LoopState& st, TrainingObserver& observer) {
    for (const auto& e : p.events) observer.onEvent(e);
    if (p.probed) {
        const MonitorReport r = st.monitor.addProbes(p.metrics.step, p.probeStats, p.qkNormActive);
        for (const LogitAlarm& a : r.alarms) observer.onLogitAlarm(a);
        for (const Forecast& f : r.forecasts) observer.onForecast(f);
        actOnForecasts(p.metrics.step, r.forecasts);
        observer.onProbes(p.metrics.step, p.probeStats, p.histograms);
        if (!p.maps.empty()) observer.onAttentionMaps(p.maps);
        for (const Spike& s : r.spikes) observer.onSpike(s);  // the probe they waited for
    }
    if (!p.clips.empty()) observer.onQkClips(p.metrics.step, p.clips);
    const bool probeComing =
        probeComesAtOrAfter(p.metrics.step, config.probes.every, config.schedule.steps);
    if (std::isfinite(p.metrics.loss) && std::isfinite(p.metrics.gradNorm)) {
        const MonitorReport r = st.monitor.addStep(p.metrics, p.qkNormActive, probeComing);
        for (const Spike& s : r.spikes) observer.onSpike(s);
        for (const ChangeReport& c : r.changeReports) observer.onChangeReport(c);
    }
    observer.onStep(p.metrics);
}

// Reads the pending steps' losses and grad norms in one transfer and reports the steps in
// order. A non-finite step ends the run as diverged (returns false); later steps, computed
// from its weights, are dropped.
namespace {

// What the host reads of one pending step.
struct StepValues {
    double loss = 0, gradNorm = 0;
    double outputLogits[kOutputLogitStats] = {};
    double updateNorm = std::numeric_limits<double>::quiet_NaN();  // NaN: no update ran
};

constexpr int64_t kValuesPerStep = 2 + kOutputLogitStats + 1;

// The values of every pending step in one transfer (loss and grad norm of a step read
// already come from the host).
std::vector<StepValues> pendingValues(const std::vector<PendingStep>& pending) {
    std::vector<torch::Tensor> scalars;
    for (const auto& p : pending) {
        const auto options = p.loss.options().dtype(torch::kFloat64);
        const auto nan = std::numeric_limits<double>::quiet_NaN();
        scalars.push_back(p.loss.to(torch::kFloat64).reshape({1}));
        scalars.push_back(p.gradNorm.to(torch::kFloat64).reshape({1}));
        scalars.push_back(p.outputLogits.defined()
                              ? p.outputLogits.to(torch::kFloat64)
                              : torch::full({kOutputLogitStats}, nan, options));
        scalars.push_back(p.updateNorm.defined() ? p.updateNorm.to(torch::kFloat64).reshape({1})
                                                 : torch::full({1}, nan, options));
    }
    std::vector<StepValues> out;
    if (scalars.empty()) return out;
    const torch::Tensor read = torch::cat(scalars).cpu();
    const double* v = read.data_ptr<double>();
    for (const auto& p : pending) {
        StepValues s;
        std::tie(s.loss, s.gradNorm) = p.hostValues.value_or(std::make_pair(v[0], v[1]));
        std::copy(v + 2, v + 2 + kOutputLogitStats, s.outputLogits);
        s.updateNorm = v[2 + kOutputLogitStats];
        out.push_back(s);
        v += kValuesPerStep;
    }
    return out;
}

}  // namespace

// Reads the pending steps' losses and grad norms back and reports the steps in order. A
// non-finite step ends the run as diverged (returns false); later steps, computed from its
// weights, are dropped.
bool Trainer::Impl::readBack(LoopState& st, TrainingObserver& observer, RunOutcome& outcome) {
    if (st.pending.empty()) return true;
    const auto values = pendingValues(st.pending);
    // Deferred steps ran back to back on the device: they share the wall time since the last
    // readback (less validation, checkpoints and pauses) in proportion to their tokens. An
    // every-step readback times its one step on the host.
    double tokens = 0;
    for (const auto& p : st.pending)
        tokens += static_cast<double>(config.data.batchSize * p.metrics.seqLen);
    const double trainSeconds =
        std::max(seconds(st.lastReadback, Clock::now()) - st.untimedSeconds, 1e-9);
    bool ok = true;
    for (size_t i = 0; i < st.pending.size() && ok; ++i) {
        PendingStep& p = st.pending[i];
        StepMetrics& m = p.metrics;
        const StepValues& v = values[i];
        m.loss = v.loss;
        m.gradNorm = v.gradNorm;
        m.logZMean = v.outputLogits[kLogZMean];
        m.logZMax = v.outputLogits[kLogZMax];
        m.outLogitMax = v.outputLogits[kOutLogitMax];
        m.zLossTerm = v.outputLogits[kZLossTerm];
        m.muNorm = v.outputLogits[kMuNorm];
        m.updateNorm = v.updateNorm;
        m.tokensPerSec = deferredReadback ? tokens / trainSeconds
                                          : static_cast<double>(config.data.batchSize * m.seqLen) /
                                                std::max(p.hostSeconds, 1e-9);
        reportStep(p, st, observer);
        if (std::isfinite(m.loss) && std::isfinite(m.gradNorm)) {
            outcome.stepsDone = m.step + 1;
            outcome.finalLoss = m.loss;
            continue;
        }
        ok = false;
        outcome.status = RunStatus::Diverged;
        outcome.stepsDone = m.step + 1;
        const bool lossBad = !std::isfinite(m.loss);
        const double bad = lossBad ? m.loss : m.gradNorm;
        outcome.message = std::string(lossBad ? "loss" : "gradient norm") + " became " +
                          (std::isnan(bad) ? "nan" : "inf") + " at step " + std::to_string(m.step);
        observer.onFlushPoint();
    }
    st.pending.clear();
    st.lastReadback = Clock::now();
    st.untimedSeconds = 0;
    return ok;
}

Trainer::Trainer(const RunConfig& config, TrainerOptions options)
    : m_impl(std::make_unique<Impl>()) {
    validate(config);
    keepActivationMemoryInHeap();
    auto& d = *m_impl;
    d.config = config;
    std::stable_sort(d.config.events.begin(), d.config.events.end(),
                     [](const Event& a, const Event& b) { return a.step < b.step; });
    d.options = std::move(options);
    if (config.run.device == DeviceKind::Cuda) {
        if (!torch::cuda::is_available()) {
            const CudaBackend b = cudaBackend();
            throw Error(ErrorCode::Unsupported,
                        "run.device = cuda, but no GPU can be used: CUDA backend " + b.detail +
                            (b.loaded ? ", no GPU visible" : "") + " (use run.device = cpu)");
        }
        d.device = torch::Device(torch::kCUDA, 0);
    }
    d.bf16 = config.run.dtype == Precision::Bf16;
    d.deferredReadback = config.run.readback == Readback::Deferred ||
                         (config.run.readback == Readback::Auto && d.device.is_cuda());
    // Capped at the core count: a million threads used to hang in thread creation.
    torch::set_num_threads(static_cast<int>(cappedThreads(config.run.threads)));
    const std::string corpus = loadCorpus(config.data.source);
    d.data = std::make_unique<TokenDataLoader>(corpus, tokenizerFor(config.data, corpus),
                                               config.data.valFraction, config.maxSeqLen(),
                                               static_cast<uint64_t>(config.run.seed));
    // No torch::manual_seed: nothing in a run draws from LibTorch's global generator (shared
    // with the app's other threads). The model seeds its own from run.seed, the data loader
    // its own above.
    d.model = Transformer(config);
    d.model->to(d.device);
    d.paramCount = d.model->parameterCount();
    d.params = d.model->parameters();
    d.gains = d.model->qkGains();
    d.buildOptimizer();
    d.buildGraphs();
    d.buildPolicy();
    d.probeSettings.bins = histogramBinsOf(config.probes);  // the bins the views draw
    d.mapMoments = MapMoments(config.probes.every, config.probes.attnMapEvery);
    if (!d.options.resumeFrom.empty()) d.loadCheckpoint(d.options.resumeFrom);
}

Trainer::~Trainer() = default;

// One step of the run loop, as planStep planned it: train (or replay), update, clip, validate,
// read back when due, checkpoint, flush. Returns false when the run ended here (diverged).
bool Trainer::Impl::runStep(int64_t step, LoopState& st, TrainingObserver& observer,
                            RunOutcome& outcome) {
    const auto t0 = Clock::now();
    auto events = eventsAt(step);  // first: interventions join the config the plan reads
    const StepPlan plan = planStep(config, step, loopFacts(!events.empty()));
    const Batch batch = drawBatch(plan.settings);
    auto mapsBefore =
        plan.mapsBeforeEvents ? mapsBeforeEvents(plan, batch) : std::vector<AttentionMap>{};
    st.pending.push_back(trainOrReplay(plan, batch));
    PendingStep& current = st.pending.back();
    current.events = std::move(events);
    current.maps.insert(current.maps.begin(), std::make_move_iterator(mapsBefore.begin()),
                        std::make_move_iterator(mapsBefore.end()));
    if (plan.readBeforeUpdate && !readBeforeUpdate(current)) {
        current.hostSeconds = seconds(t0, Clock::now());
        return readBack(st, observer, outcome);
    }
    // A skip_step event, or the sigma policy's verdict on the values just read: no update.
    const bool skip = plan.settings.skipUpdate || policySkips(plan, current);
    if (!current.graphed && !skip) update(plan, current);
    // QK-Clip acts on the updated weights, measured on this step's batch.
    if (plan.qkClip)
        current.clips =
            model->qkClip(batch.x.to(device), plan.switches, plan.settings.qkClipTau, step);
    current.hostSeconds = seconds(t0, Clock::now());  // the training step, not validation
    if (plan.evaluate) st.untimed([&] { current.metrics.valLoss = validationLoss(plan); });
    return finishStep(plan, st, observer, outcome);
}

// Every-step readback: the loss and grad norm in one transfer, before the update, so that a
// diverged run keeps the weights of its last good step. False when either is not finite.
bool Trainer::Impl::readBeforeUpdate(PendingStep& p) {
    const auto both =
        torch::stack({p.loss.to(torch::kFloat64), p.gradNorm.to(torch::kFloat64)}).cpu();
    p.hostValues = {both[0].item<double>(), both[1].item<double>()};
    return std::isfinite(p.hostValues->first) && std::isfinite(p.hostValues->second);
}

// The eager step's AdamW update (a replayed graph ran its own), without the gradients of
// frozen QK gains.
void Trainer::Impl::update(const StepPlan& plan, PendingStep& p) {
    if (plan.freezeGains)
        for (auto& g : gains) g.mutable_grad() = torch::Tensor();
    stepOptimizer();
    p.updateNorm = optimizer->lastUpdateNorm();
}

// The update and what follows it on the device in the same step, eager or inside the CUDA
// graph: optim.output_centring = mu_centring takes the output embedding's mean row out after
// every update, as its authors do (update_norm stays the optimizer's own).
void Trainer::Impl::stepOptimizer() {
    optimizer->step();
    if (config.optim.outputCentring == OutputCentring::MuCentring) model->centreOutputEmbedding();
}

// The step's end (stepEnd: the plan and the clock): read back, checkpoint, flush.
bool Trainer::Impl::finishStep(const StepPlan& plan, LoopState& st, TrainingObserver& observer,
                               RunOutcome& outcome) {
    const auto now = Clock::now();
    const StepEnd end =
        stepEnd(config, plan, loopFacts(plan.events),
                StepClock{st.pending.size(), seconds(st.lastReadback, now),
                          seconds(st.lastFlush, now), seconds(lastCheckpointTime, now)});
    if (end.readBack && !readBack(st, observer, outcome)) return false;
    if (end.checkpoint) st.untimed([&] { saveCheckpoint(plan.step + 1, observer); });
    if (end.flush) {
        st.untimed([&] { observer.onFlushPoint(); });
        st.lastFlush = Clock::now();
    }
    return true;
}

void Trainer::Impl::runLoop(TrainingObserver& observer, RunOutcome& outcome) {
    LoopState st(config);
    st.monitor.restore(options.storedProbes, options.storedAlarms);
    trainSteps(st, observer, outcome);
    // A run that ended (stopped, diverged) before the probe a spike waited for: diagnose it with
    // the latest probe before it, which its text says. A change whose report window had not
    // closed is reported over the steps it had.
    const MonitorReport last = st.monitor.finish();
    for (const Spike& s : last.spikes) observer.onSpike(s);
    for (const ChangeReport& c : last.changeReports) observer.onChangeReport(c);
    if (!last.spikes.empty() || !last.changeReports.empty()) observer.onFlushPoint();
}

void Trainer::Impl::trainSteps(LoopState& st, TrainingObserver& observer, RunOutcome& outcome) {
    model->train();
    lastCheckpointTime = Clock::now();
    for (int64_t step = startStep; step < config.schedule.steps; ++step) {
        currentStep = step;
        if (pauseRequested || stopRequested) {
            // Report every pending step before waiting: a paused run shows its latest step.
            if (!readBack(st, observer, outcome)) return;
            observer.onFlushPoint();
        }
        bool go = true;
        st.untimed([&] { go = !stopRequested && waitWhilePaused(); });
        if (!go) {
            outcome.status = RunStatus::Stopped;
            outcome.message = "stopped at step " + std::to_string(step);
            saveCheckpoint(step, observer);
            observer.onFlushPoint();
            return;
        }
        if (!runStep(step, st, observer, outcome)) return;
    }
    if (!readBack(st, observer, outcome)) return;
    saveCheckpoint(config.schedule.steps, observer);
    observer.onFlushPoint();
    outcome.status = RunStatus::Finished;
}

RunOutcome Trainer::run(TrainingObserver& observer) {
    RunOutcome outcome;
    outcome.stepsDone = m_impl->startStep;
    try {
        m_impl->runLoop(observer, outcome);
    } catch (const Error& e) {
        // A checkpoint that cannot be written (a full disk) fails the run; every step trained
        // was committed before the save began, and the previous checkpoint is untouched.
        if (e.code() != ErrorCode::Io) throw;
        outcome.status = RunStatus::Failed;
        outcome.message = e.what();
    }
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
    e.source = EventSource::User;  // reported as a user event, not again as a config event
    try {                          // parameter ranges, as for an event read from a preset
        e = eventFromJson(eventToJson(e), nameOf(e.kind));
    } catch (const Error& err) {
        throw Error(ErrorCode::InvalidConfig, std::string("intervention: ") + err.what());
    }
    RunConfig probe = d.config;
    probe.events.push_back(e);
    const auto problems = validationProblems(probe);
    if (!problems.empty())
        throw Error(ErrorCode::InvalidConfig, "intervention: " + problems.front());
    if (e.kind == EventKind::ContextLength && e.args.seqLen > d.config.maxSeqLen())
        throw Error(ErrorCode::InvalidConfig,
                    "intervention: context_length seq_len " + std::to_string(e.args.seqLen) +
                        " exceeds the longest context this model was built for (" +
                        std::to_string(d.config.maxSeqLen()) +
                        "); add the context switch to the preset's events instead");
    std::lock_guard<std::mutex> lock(d.controlMutex);
    d.pendingInterventions.push_back(e);
}

void Trainer::setCheckpointDir(const std::string& dir) {
    m_impl->checkpointDir = dir;
}
const RunConfig& Trainer::config() const {
    return m_impl->config;
}
int64_t Trainer::parameterCount() const {
    return m_impl->paramCount;
}
int64_t Trainer::currentStep() const {
    return m_impl->currentStep;
}
int64_t Trainer::startStep() const {
    return m_impl->startStep;
}

int64_t Trainer::replayedSteps() const {
    return m_impl->graphs ? m_impl->graphs->replays() : 0;
}

bool Trainer::cudaGraphs() const {
    return m_impl->graphs != nullptr;
}

std::string Trainer::deviceDescription() const {
    const auto& d = *m_impl;
    std::string s = d.device.is_cuda()
                        ? "cuda:0"
                        : "cpu (" + std::to_string(torch::get_num_threads()) + " threads)";
    // A Muon run steps its hidden matrices by Muon and the rest by AdamW (engine/trainer_impl.h).
    const bool muon = d.config.optim.kind == OptimKind::Muon;
    return s + ", " + nameOf(d.config.run.dtype) + (muon ? ", Muon + " : ", ") +
           (d.optimizer->fused() ? "fused AdamW" : "per-parameter AdamW") +
           (d.graphs ? ", CUDA graphs" : "");
}

std::string Trainer::tokenizerDescription() const {
    const auto& d = *m_impl;
    const Tokenizer& t = d.data->tokenizer();
    if (d.config.data.tokenizer == TokenizerKind::Bytes) return {};
    const int64_t asked = d.config.data.vocabSize;
    std::string s = "BPE of " + std::to_string(t.merges().size()) + " merges";
    if (t.idCount() < asked)
        s += " (the text has no more pairs: ids " + std::to_string(t.idCount()) + "-" +
             std::to_string(asked - 1) + " of data.vocab_size " + std::to_string(asked) +
             " are never used)";
    return s + ", " + std::to_string(d.data->trainTokens()) + " training and " +
           std::to_string(d.data->valTokens()) + " validation tokens";
}

}  // namespace qklab
