// qklab/analysis/run_monitor.h — what watches a run as it trains: spike detection, the wait for the
// probe a spike is diagnosed from, the diagnosis, and the logit alarms.
//
// One definition for every run: qklab's trainer feeds it, and so does the Python package for a
// run the user trains in their own loop (app/python). Torch-free: it reads step metrics and
// probe rows, never tensors.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "qklab/analysis/change_reports.h"
#include "qklab/analysis/forecast.h"
#include "qklab/analysis/spikes.h"
#include "qklab/config/run_config.h"
#include "qklab/store/records.h"

namespace qklab {

constexpr int64_t kSpikeRefractorySteps = 10;  // one report per spike episode
constexpr size_t kProbeHistoryKept = 64;       // the run's first probe and the latest 63

// What one call decided: alarms raised by a probe, forecasts it made, spikes diagnosed (in
// step order).
struct MonitorReport {
    std::vector<LogitAlarm> alarms;
    std::vector<Forecast> forecasts;  // qklab/analysis/forecast.h
    std::vector<Spike> spikes;
    std::vector<ChangeReport> changeReports;  // changes whose report window just closed
};

// True when a regular probe (at every multiple of `every`; 0 = probes off) at or after `step`
// is still to come in a run of `steps` steps: what RunMonitor::addStep's `probeComing` asks.
// Exact for every `every` (probes.every has no upper bound).
bool probeComesAtOrAfter(int64_t step, int64_t every, int64_t steps);

class RunMonitor {
  public:
    // `config` gives the spike detector's settings and the run's timeline (its events and
    // anneals, read at each spike by changesBefore): it is read, not copied, so the trainer's
    // interventions count; it must outlive the monitor.
    explicit RunMonitor(const RunConfig& config);

    // A probed step's layer and head rows, before that step's metrics: the logit alarms it
    // raises (once per layer and rule), the forecasts it makes (once per layer and episode),
    // and the spikes that waited for it, diagnosed.
    MonitorReport addProbes(int64_t step, const std::vector<ProbeStats>& rows, bool qkNormActive);

    // A step's metrics (finite loss and grad norm). A spike is held for the probe at or after
    // it, unless this step was probed or `probeComing` says no probe will come (the run ends
    // first, or probes are off): then it is diagnosed now.
    MonitorReport addStep(const StepMetrics& m, bool qkNormActive, bool probeComing);

    // The run ended: spikes still waiting are diagnosed from the latest probe before them, and
    // changes whose report window had not closed are reported over the steps it had.
    MonitorReport finish();

    bool waiting() const { return !m_undiagnosed.empty(); }

    // A resumed run: the probe rows (by step) and the alarms stored before it rebuild what the
    // alarms compare against (each layer's first probe and its latest ones, the probe history
    // a diagnosis reads) and which alarms were raised, so that the resumed run neither raises
    // them again nor takes its first probe after the resume for the layer's first. The stored
    // probes replay through the forecaster, so that its fits and episodes are as they were. Spike
    // detection starts afresh: its rolling window is of steps, which are not replayed.
    void restore(const std::vector<ProbeStats>& storedProbes,
                 const std::vector<LogitAlarm>& storedAlarms);

  private:
    std::vector<LogitAlarm> raiseAlarms(const std::vector<ProbeStats>& rows, bool qkNormActive);
    // One probe's rows into the probe history (the first probe and the latest ones).
    void keepProbe(int64_t step, const std::vector<ProbeStats>& rows);
    // A layer row into what the next alarm of its layer compares against.
    void keepLayerRow(const ProbeStats& row);
    std::vector<Spike> diagnoseWaiting();
    // The reports of changes whose window closes at `step` (every one left when `final`).
    std::vector<ChangeReport> reportChanges(int64_t step, bool final);
    // The reports of earlier changes (before the spike's cause window) still in force at
    // `step` that moved the run: what a spike's diagnosis quotes.
    std::vector<std::string> changesInForce(int64_t step) const;
    RunSeries series() const;

    const RunConfig& m_config;
    Forecaster m_forecaster;
    RollingZScore m_lossZ, m_gradZ;
    std::vector<ProbeSummary> m_probeHistory;       // the first probe and the latest 63
    std::map<int32_t, ProbeStats> m_firstLayerRow;  // per layer, for the alarms
    std::map<int32_t, ProbeStats> m_lastLayerRow;   // per layer, the latest probe's row
    // Per layer, the rows of the latest kBaselineProbes probes (the alarms' q/k norm baseline,
    // read as the alarm reads its own row: alarmQkNorm).
    std::map<int32_t, std::deque<ProbeStats>> m_recentLayerRows;
    // The LM head's log Z mean and max output logit of the latest kOutputBaselineSteps steps.
    std::deque<double> m_recentLogZ, m_recentOutMax;
    std::vector<std::pair<Spike, DiagnosisContext>> m_undiagnosed;
    std::set<std::pair<int32_t, std::string>> m_alarmsRaised;  // (layer, probe column)
    // The latest 2 x kChangeReportSteps (step, loss), and the changes reported, by step and kind.
    std::deque<std::pair<int64_t, double>> m_recentLosses;
    std::map<std::pair<int64_t, std::string>, ChangeReport> m_changeReports;
    std::set<std::pair<int64_t, std::string>> m_changesTried;
    int64_t m_lastStep = -1;
    int64_t m_spikesSoFar = 0, m_lastSpikeStep = -1000000;
};

}  // namespace qklab
