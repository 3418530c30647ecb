// external_run.cpp — a run trained outside qklab, stored and watched by qklab's own store,
// probes and monitor (external_run.h).
#include "external_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "qklab/config/names.h"
#include "qklab/config/step_plan.h"  // kFlushSeconds: live views see rows as often as a qklab run's
#include "qklab/store/record_columns.h"
#include "qklab/store/run_export.h"
#include "qklab/store/run_store.h"
#include "qklab/util/error.h"
#include "qklab/util/version.h"

namespace qklab {
namespace {

// A step row with every real metric unknown (NaN: no point on its plot) until logged.
StepMetrics emptyStep(int64_t step) {
    StepMetrics m;
    for (const auto& c : stepMetricTable().columns)
        if (c.type == ColumnType::Real) c.set(m, ColumnValue(std::nan("")));
    m.step = step;
    return m;
}

// Continues a run the package stored before (qklab.init(resume=...)): claims it for this
// process (refused while another process writes it, or once it finished) and opens a writer
// that appends after its last stored step. Rows past that step (a probe committed before its
// step's row, when the process was killed in between) are dropped by the writer. The stored
// probes and alarms are the monitor's history (RunMonitor::restore): the alarms of a resumed run
// compare against the layer's first probe of the run, not of the resumed process.
std::unique_ptr<RunWriter> resumeWriter(const ExternalRunSpec& spec, RunMonitor& monitor,
                                        int64_t& lastStep, int64_t& lastProbe) {
    RunStore store(spec.dbPath);
    const RunInfo stored = store.run(spec.resumeRunId);
    if (!trainedOutsideQklab(stored))
        throw Error(ErrorCode::InvalidRequest,
                    "run " + std::to_string(stored.id) + " ('" + printableText(stored.name) +
                        "') was trained by qklab itself: continue it with qklab-cli resume");
    const RunInfo before = store.claimForResume(stored.id);
    try {
        lastStep = before.stepsDone - 1;
        auto writer = std::make_unique<RunWriter>(spec.dbPath, before.id, lastStep + 1);
        const std::vector<ProbeStats> probes = store.probeStats(before.id);
        for (const ProbeStats& p : probes) lastProbe = std::max(lastProbe, p.step);
        monitor.restore(probes, store.logitAlarms(before.id));
        return writer;
    } catch (...) {
        store.releaseResumeClaim(before);
        throw;
    }
}

}  // namespace

RunConfig externalRunConfig(const ExternalRunSpec& spec) {
    RunConfig c;
    if (spec.nLayers > 0) {
        c.model.nLayers = spec.nLayers;
        c.model.nHeads = spec.nHeads;
        c.model.dModel = spec.nHeads * spec.headDim;  // the attention's width
        c.model.seqLen = spec.seqLen;
    }
    if (spec.mlaDC > 0) {
        c.attention.kind = AttentionKind::Mla;
        c.attention.mla.dC = spec.mlaDC;
        c.attention.mla.dRope = spec.mlaDRope;
        c.attention.mla.qLora = spec.mlaQLora;
        c.model.dModel = spec.nHeads * (spec.headDim - spec.mlaDRope);  // content width d_head
    }
    const auto qkNorm = parseChoice<QkNormVariant>(spec.qkNorm);
    if (!qkNorm)
        throw Error(ErrorCode::InvalidRequest, "qk_norm = '" + printableText(spec.qkNorm) +
                                                   "': must be one of " +
                                                   choiceList<QkNormVariant>());
    c.attention.qkNorm = *qkNorm;
    if (spec.softcap > 0) {
        c.attention.softcap.kind = SoftcapKind::Tanh;
        c.attention.softcap.c = spec.softcap;
    }
    c.probes.every = spec.probeEvery;
    c.probes.attnMapEvery = spec.mapEvery;
    if (spec.steps > 0) {
        c.schedule.steps = spec.steps;
        // qklab's default warm-up is not the user's: a short run (steps < 30) must not be
        // refused for a setting it never made (issue 38, item 4).
        c.schedule.warmupSteps = std::min(c.schedule.warmupSteps, spec.steps);
    }
    c.eval.every = 0;
    c.run.seed = spec.seed;
    c.why = "a run trained outside qklab and logged through its Python package";
    validate(c);
    return c;
}

nlohmann::json storedExternalConfig(const ExternalRunSpec& spec, const RunConfig& config) {
    std::set<std::string> unknown;
    for (const FieldInfo& f : configFields()) {
        const bool model = f.key.rfind("model.", 0) == 0 || f.key.rfind("attention.", 0) == 0;
        const bool seen = observableOutsideQklab(f.key) && !(model && spec.nLayers == 0) &&
                          !(f.key.rfind("attention.mla.", 0) == 0 && spec.mlaDC == 0) &&
                          !(f.key == "attention.softcap.c" && spec.softcap <= 0) &&
                          !(f.key == "schedule.steps" && spec.steps <= 0) &&
                          !(f.key == "run.seed" && !spec.seedKnown);
        if (!seen) unknown.insert(f.key);
    }
    return withoutKeys(configToJson(config), unknown);
}

ExternalRun::ExternalRun(const ExternalRunSpec& spec)
    : m_config(externalRunConfig(spec)), m_monitor(m_config) {
    m_prober = std::make_unique<ExternalProber>(m_config.probes);
    if (spec.resumeRunId > 0) {
        m_writer = resumeWriter(spec, m_monitor, m_resumedAfter, m_lastProbeStep);
        return;
    }
    NewRun run;
    run.name = spec.name;
    run.configJson = storedExternalConfig(spec, m_config).dump();
    run.seed = spec.seed;
    run.device = spec.device;
    run.torchVersion = spec.torchVersion;
    run.source = spec.source;
    run.userConfigJson = spec.userConfigJson;
    m_writer = std::make_unique<RunWriter>(spec.dbPath, run);
}

ExternalRun::~ExternalRun() = default;

int64_t ExternalRun::runId() const {
    return m_writer->runId();
}

MonitorReport ExternalRun::log(int64_t step, const std::map<std::string, double>& values) {
    if (m_finished) throw Error(ErrorCode::InvalidRequest, "log: the run is finished");
    if (step <= m_resumedAfter)
        throw Error(ErrorCode::InvalidRequest,
                    "log: step " + std::to_string(step) + " is stored already: the run was " +
                        "resumed after step " + std::to_string(m_resumedAfter) +
                        ", its last stored step; log steps after it");
    if (step < 0 || (m_open && step < m_open->step))
        throw Error(ErrorCode::InvalidRequest,
                    "log: step " + std::to_string(step) + " comes before step " +
                        std::to_string(m_open ? m_open->step : 0) + ", which was logged already");
    // The one name rule (qklab/config/names.h) that import checks too: a name log takes never makes
    // the database unmergeable.
    for (const auto& [name, value] : values) checkScalarName(name);
    MonitorReport decided;
    if (m_open && step > m_open->step) decided = closeStep();
    if (!m_open) m_open = emptyStep(step);
    const auto& columns = stepMetricTable().columns;
    if (const auto loss = values.find("loss"); loss != values.end())
        m_lastLossFinite = std::isfinite(loss->second);
    for (const auto& [name, value] : values) {
        const auto* column = findColumn(columns, name);
        if (column && name != "step" && column->type != ColumnType::Text) {
            const bool integer = column->type == ColumnType::Integer;
            column->set(*m_open,
                        integer ? ColumnValue(static_cast<int64_t>(value)) : ColumnValue(value));
        } else {
            m_writer->addCustomScalar({step, name, value});
        }
    }
    flushSoon(false);
    return report(decided);
}

MonitorReport ExternalRun::closeStep() {
    MonitorReport decided;
    if (!m_open) return decided;
    const StepMetrics m = *m_open;
    m_open.reset();
    m_writer->addStep(m);
    if (std::isfinite(m.loss)) {
        // The next probe is at most probes.every steps away while the run goes on.
        const bool probeComing = m_config.probes.every > 0;
        decided =
            m_monitor.addStep(m, m_config.attention.qkNorm != QkNormVariant::None, probeComing);
    }
    return decided;
}

MonitorReport ExternalRun::probe(int64_t step, const std::vector<ExternalLayer>& layers) {
    if (m_finished) throw Error(ErrorCode::InvalidRequest, "probe: the run is finished");
    if (step <= m_lastProbeStep)
        throw Error(ErrorCode::InvalidRequest,
                    "probe: step " + std::to_string(step) + " was probed already");
    if (static_cast<int64_t>(layers.size()) != m_config.model.nLayers)
        throw Error(ErrorCode::InvalidRequest, "probe: " + std::to_string(layers.size()) +
                                                   " layers given, the run has " +
                                                   std::to_string(m_config.model.nLayers));
    ExternalProbes p = m_prober->probe(step, layers);
    m_lastProbeStep = step;
    for (const ProbeStats& s : p.stats) m_writer->addProbe(s);
    for (const LogitHistogram& h : p.histograms) m_writer->addHistogram(h);
    for (const AttentionMap& m : p.maps) m_writer->addAttentionMap(m);
    // A step logged already (closed) is before this probe; the open one is this step or later.
    const MonitorReport decided =
        m_monitor.addProbes(step, p.stats, m_config.attention.qkNorm != QkNormVariant::None);
    MonitorReport out = report(decided);
    flushSoon(true);  // probe steps are committed at once, as the trainer does
    return out;
}

MonitorReport ExternalRun::report(const MonitorReport& r) {
    for (const LogitAlarm& a : r.alarms) m_writer->addLogitAlarm(a);
    for (const Forecast& f : r.forecasts) m_writer->addForecast(f);
    for (const Spike& s : r.spikes) m_writer->addSpike(s);
    return r;
}

void ExternalRun::flushSoon(bool now) {
    const auto t = std::chrono::steady_clock::now();
    if (!now && std::chrono::duration<double>(t - m_lastFlush).count() < kFlushSeconds) return;
    m_writer->flush();
    m_lastFlush = t;
}

void ExternalRun::finish(const std::string& status, const std::string& message) {
    if (m_finished) return;
    report(closeStep());
    report(m_monitor.finish());
    RunStatus s = RunStatus::Finished;
    std::string why = message;
    if (!status.empty()) {
        s = runStatusFromString(status);
    } else if (!m_lastLossFinite) {
        s = RunStatus::Diverged;
        if (why.empty()) why = "the last logged loss was not finite";
    }
    m_writer->finish(s, why);
    m_finished = true;
}

}  // namespace qklab
