// run_monitor.cpp — spike detection, the wait for a spike's probe, diagnosis and logit alarms
// for one run (qklab/analysis/run_monitor.h).
#include "qklab/analysis/run_monitor.h"

#include <algorithm>

#include "qklab/analysis/spike_causes.h"
#include "qklab/config/schedules.h"

namespace qklab {
namespace {

// The attention logit cap in force at `step` (events and anneals included), 0 = none.
double softcapAt(const RunConfig& config, int64_t step) {
    const StepSettings s = settingsAt(config, step);
    return s.softcap == SoftcapKind::None ? 0.0 : s.softcapC;
}

}  // namespace

RunMonitor::RunMonitor(const RunConfig& config)
    : m_config(config),
      m_lossZ(config.spikes.window, config.spikes.minHistory),
      m_gradZ(config.spikes.window, config.spikes.minHistory) {}

void RunMonitor::keepProbe(int64_t step, const std::vector<ProbeStats>& rows) {
    m_probeHistory.push_back(summarizeProbes(step, rows));
    // Keep the run's first probe (the diagnosis compares against it) and the latest ones.
    if (m_probeHistory.size() > kProbeHistoryKept) m_probeHistory.erase(m_probeHistory.begin() + 1);
}

void RunMonitor::keepLayerRow(const ProbeStats& row) {
    m_firstLayerRow.emplace(row.layer, row);
    m_lastLayerRow[row.layer] = row;
    auto& recent = m_recentLayerRows[row.layer];
    recent.push_back(row);
    if (recent.size() > static_cast<size_t>(kBaselineProbes)) recent.pop_front();
}

void RunMonitor::restore(const std::vector<ProbeStats>& storedProbes,
                         const std::vector<LogitAlarm>& storedAlarms) {
    std::vector<ProbeStats> rows;
    for (size_t i = 0; i < storedProbes.size(); ++i) {
        rows.push_back(storedProbes[i]);
        const bool last = i + 1 == storedProbes.size() || storedProbes[i + 1].step != rows[0].step;
        if (!last) continue;
        keepProbe(rows[0].step, rows);
        m_forecaster.addProbes(rows[0].step, rows);  // made before: stored already
        for (const ProbeStats& row : rows)
            if (row.head == -1) keepLayerRow(row);
        rows.clear();
    }
    for (const LogitAlarm& a : storedAlarms) m_alarmsRaised.emplace(a.layer, a.metric);
}

MonitorReport RunMonitor::addProbes(int64_t step, const std::vector<ProbeStats>& rows,
                                    bool qkNormActive) {
    keepProbe(step, rows);
    MonitorReport report;
    report.alarms = raiseAlarms(rows, qkNormActive);
    report.forecasts = m_forecaster.addProbes(step, rows);
    report.spikes = diagnoseWaiting();  // this is the probe they waited for
    return report;
}

// The first probe at which a layer's raw logits pass an intervention line: once per layer and
// rule (a resumed run may raise one again; the store keeps the first).
std::vector<LogitAlarm> RunMonitor::raiseAlarms(const std::vector<ProbeStats>& rows,
                                                bool qkNormActive) {
    std::vector<LogitAlarm> alarms;
    for (const ProbeStats& row : rows) {
        if (row.head != -1) continue;
        AlarmContext ctx;
        ctx.firstRow = m_firstLayerRow.emplace(row.layer, row).first->second;
        if (auto last = m_lastLayerRow.find(row.layer); last != m_lastLayerRow.end())
            ctx.previousRow = last->second;
        for (const ProbeStats& r : m_recentLayerRows[row.layer])
            ctx.recentQkNorms.push_back(alarmQkNorm(r, qkNormActive));
        ctx.qkNormActive = qkNormActive;
        ctx.softcapC = softcapAt(m_config, row.step);
        for (const LogitAlarmRule& rule : logitAlarmRules()) {
            if (!(row.*rule.field > rule.threshold)) continue;
            if (!m_alarmsRaised.emplace(row.layer, rule.column).second) continue;
            if (ctx.changes.empty()) ctx.changes = changesBefore(m_config, row.step);
            alarms.push_back(makeLogitAlarm(rule, row, ctx));
        }
        keepLayerRow(row);
    }
    return alarms;
}

bool probeComesAtOrAfter(int64_t step, int64_t every, int64_t steps) {
    if (every <= 0 || step >= steps) return false;
    // The next multiple of `every` is `every - rem` steps on, compared as a distance:
    // `step + every - 1` overflowed for probes.every = 2^63 - 1 (scripts/sanitize.sh).
    const int64_t rem = step % every;
    return rem == 0 || every - rem < steps - step;
}

MonitorReport RunMonitor::addStep(const StepMetrics& m, bool qkNormActive, bool probeComing) {
    const auto& c = m_config.spikes;
    const auto zl = m_lossZ.push(m.loss), zg = m_gradZ.push(m.gradNorm);
    const bool lossSpike = zl && *zl > c.zThreshold;
    const bool gradSpike = zg && *zg > c.zThreshold;
    const bool spikeHere =
        (lossSpike || gradSpike) && m.step - m_lastSpikeStep > kSpikeRefractorySteps;
    OutputLogitReading output;
    if (spikeHere)
        output =
            readOutputLogits(m.logZMean, m.outLogitMax, {m_recentLogZ.begin(), m_recentLogZ.end()},
                             {m_recentOutMax.begin(), m_recentOutMax.end()});
    m_recentLogZ.push_back(m.logZMean);
    m_recentOutMax.push_back(m.outLogitMax);
    if (m_recentLogZ.size() > static_cast<size_t>(kOutputBaselineSteps)) {
        m_recentLogZ.pop_front();
        m_recentOutMax.pop_front();
    }
    m_recentLosses.emplace_back(m.step, m.loss);
    if (m_recentLosses.size() > static_cast<size_t>(2 * kChangeReportSteps))
        m_recentLosses.pop_front();
    m_lastStep = m.step;
    MonitorReport report;
    report.changeReports = reportChanges(m.step, false);
    if (!spikeHere) return report;
    m_lastSpikeStep = m.step;
    ++m_spikesSoFar;
    Spike spike;
    spike.step = m.step;
    spike.metric = lossSpike && gradSpike ? "loss,grad_norm" : lossSpike ? "loss" : "grad_norm";
    spike.value = lossSpike ? m.loss : m.gradNorm;
    spike.zScore = std::max(zl.value_or(0.0), zg.value_or(0.0));
    DiagnosisContext ctx;
    ctx.qkNormActive = qkNormActive;
    ctx.spikesSoFar = m_spikesSoFar;
    ctx.stepsSoFar = m.step + 1;
    ctx.changes = changesBefore(m_config, m.step);  // events, interventions, anneals
    ctx.outputLogits = output;
    ctx.changesInForce = changesInForce(m.step);
    ctx.softcapC = softcapAt(m_config, m.step);
    m_undiagnosed.emplace_back(spike, ctx);
    // The diagnosis reads the probe at or after the spike: this step's own, or a later one.
    const bool probedHere = !m_probeHistory.empty() && m_probeHistory.back().step == m.step;
    if (probedHere || !probeComing) report.spikes = diagnoseWaiting();
    return report;
}

MonitorReport RunMonitor::finish() {
    MonitorReport report;
    report.spikes = diagnoseWaiting();
    report.changeReports = reportChanges(m_lastStep, true);
    return report;
}

RunSeries RunMonitor::series() const {
    return {{m_recentLosses.begin(), m_recentLosses.end()}, m_probeHistory};
}

std::vector<ChangeReport> RunMonitor::reportChanges(int64_t step, bool final) {
    std::vector<ChangeReport> out;
    std::optional<RunSeries> s;  // read once, when a change is due
    for (const Event& e : m_config.events) {
        const bool due = final ? e.step <= step : e.step + kChangeReportSteps - 1 <= step;
        if (e.step <= 0 || !due) continue;
        // Tried once: a change before a resumed run's first step has no steps to report on.
        if (!m_changesTried.emplace(e.step, nameOf(e.kind)).second) continue;
        if (!s) s = series();
        if (auto r = reportChange(m_config, e, *s, step)) {
            m_changeReports.emplace(std::make_pair(e.step, r->kind), *r);
            out.push_back(*r);
        }
    }
    return out;
}

std::vector<std::string> RunMonitor::changesInForce(int64_t step) const {
    std::vector<std::string> out;
    for (const Event& e : m_config.events) {
        if (e.step <= 0 || e.step >= step - kCauseWindowSteps) continue;
        if (!changeInForce(m_config, e, step)) continue;
        const auto done = m_changeReports.find({e.step, nameOf(e.kind)});
        // A change still being measured: its report so far, without the spike's own step.
        const auto r = done != m_changeReports.end()
                           ? std::optional<ChangeReport>(done->second)
                           : reportChange(m_config, e, series(), step - 1);
        if (r && r->moved) out.push_back(r->text);
    }
    return out;
}

// Diagnoses the spikes waiting for a probe, with the probe history as it is now.
std::vector<Spike> RunMonitor::diagnoseWaiting() {
    std::vector<Spike> done;
    for (auto& [spike, ctx] : m_undiagnosed) {
        diagnoseSpike(spike, m_probeHistory, ctx);
        done.push_back(spike);
    }
    m_undiagnosed.clear();
    return done;
}

}  // namespace qklab
