// external_run.h — one run the user trains in their own loop, logged into a qklab database:
// the Python package's run object (qklab.init) on the C++ side.
//
// Everything it records goes through the engine's own pieces: the store's RunWriter, the
// step-metric column table (which keys are qklab metrics), ExternalProber (the probes,
// histograms and maps of qklab's own runs) and RunMonitor (spikes, their diagnosis, alarms).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "qklab/analysis/run_monitor.h"
#include "qklab/config/run_config.h"
#include "qklab/engine/external_probes.h"
#include "qklab/store/run_writer.h"

namespace qklab {

// What the Python side found out about the model (qklab/finders.py) and the run.
struct ExternalRunSpec {
    std::string dbPath, name;
    std::string source = "python";  // "python: <finder kind>"
    std::string userConfigJson;     // the user's config, already JSON text
    int64_t seed = 0;
    bool seedKnown = false;  // the user gave the seed (qklab.init(seed=...))
    std::string device, torchVersion;
    // The model as the probes see it (0 = not watched: no probes, no model in the config).
    int64_t nLayers = 0, nHeads = 0, headDim = 0, seqLen = 0;
    // The model's QK-norm, a Choices<QkNormVariant> name ("none", "rms", "rms_affine", ...):
    // declared by attention_fn, else "rms" where q and k change length on their way to the
    // softmax (Qwen3, OLMo 2). Not "none": the diagnosis's tier 4, its alarms read normalised q/k.
    std::string qkNorm = "none";
    double softcap = 0;  // attention logit cap (Gemma 2), 0 = none
    // Multi-head latent attention (DeepSeek-V2/V3): the latent width, the decoupled RoPE width
    // per head (part of headDim) and the query low-rank width; mlaDC = 0: not MLA.
    int64_t mlaDC = 0, mlaDRope = 0, mlaQLora = 0;
    int64_t probeEvery = 0, mapEvery = 0, steps = 0;
    // > 0: continue this run (qklab.init(resume=...)) instead of creating one. Its steps up to
    // the last stored one stay; later steps are appended.
    int64_t resumeRunId = 0;
};

// The qklab config an external run is watched with: the model's shape, its QK-norm, cap and
// MLA, the probe schedule and the step count as far as they are known; qklab's defaults
// elsewhere. Validated as any config is.
RunConfig externalRunConfig(const ExternalRunSpec& spec);
// The same as stored: only the keys qklab observed (externalRunConfig's defaults are not what
// the run trained with; its own settings are its user config), so that show, export and
// compare leave the rest out as unknown (issue 38, item 2).
nlohmann::json storedExternalConfig(const ExternalRunSpec& spec, const RunConfig& config);

class ExternalRun {
  public:
    explicit ExternalRun(const ExternalRunSpec& spec);
    ~ExternalRun();  // an unfinished run is left "running" for readers to see as interrupted

    int64_t runId() const;
    // The last step whose row was stored before this writer started (-1 for a new run) and the
    // last probed step at or before it: a resumed run logs after the first and probes after the
    // second.
    int64_t resumedAfter() const { return m_resumedAfter; }
    int64_t lastProbeStep() const { return m_lastProbeStep; }

    // One step's scalars by name: qklab's step metrics (stepMetricTable() names: loss,
    // grad_norm, lr, val_loss, ...) go into the step row, any other name is a custom scalar.
    // Throws Error{InvalidRequest} for a step before the last one logged or a bad name.
    MonitorReport log(int64_t step, const std::map<std::string, double>& values);

    // The probes of one step from the model's queries and keys (qklab/engine/external_probes.h).
    MonitorReport probe(int64_t step, const std::vector<ExternalLayer>& layers);

    // Ends the run: "finished", or "diverged" when its last loss was not finite, or the
    // status named (stopped, failed). Flushes; throws Error when the store cannot commit.
    void finish(const std::string& status = {}, const std::string& message = {});
    bool finished() const { return m_finished; }

  private:
    // Stores what the monitor decided and hands it back, for the Python side to show.
    MonitorReport report(const MonitorReport& r);
    MonitorReport closeStep();  // the buffered step's row goes to the store and the monitor
    void flushSoon(bool now);

    RunConfig m_config;
    std::unique_ptr<RunWriter> m_writer;
    std::unique_ptr<ExternalProber> m_prober;
    RunMonitor m_monitor;
    // A step's row is buffered until a later step comes: trackers let a loop log one step's
    // values in several calls (loss, then val_loss).
    std::optional<StepMetrics> m_open;
    int64_t m_lastProbeStep = -1;
    int64_t m_resumedAfter = -1;
    bool m_lastLossFinite = true, m_finished = false;
    std::chrono::steady_clock::time_point m_lastFlush = std::chrono::steady_clock::now();
};

}  // namespace qklab
