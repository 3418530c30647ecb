// gui_types.h — the engine's plain records as Qt metatypes, and the batch the training worker
// sends to the GUI thread.
//
// Engine callbacks arrive once per step on the training thread; sending each as its own
// queued signal would flood the GUI event loop (a small model runs hundreds of steps per
// second). The worker therefore collects them into a LiveBatch and emits at most one batch
// every ~50 ms.
#pragma once

#include <QMetaType>
#include <QString>
#include <QVector>
#include <cstdint>
#include <vector>

#include "qklab/analysis/lesson.h"
#include "qklab/config/run_config.h"
#include "qklab/store/records.h"

namespace qklab::gui {

struct LiveBatch {
    int64_t runId = 0;
    QVector<StepMetrics> steps;
    QVector<ProbeStats> probes;  // every row the probes produced (layer and head level)
    QVector<Spike> spikes;
    QVector<LogitAlarm> alarms;
    QVector<QkClip> clips;  // the heads QK-Clip scaled, by step
    QVector<EventRecord> events;
    QVector<ChangeReport> changeReports;  // what a change did, once its window closed
    QVector<Forecast> forecasts;          // qklab/analysis/forecast.h, as they are made
    bool newHistograms = false;           // the store will hold new histogram rows after flush
    bool newAttentionMaps = false;

    bool empty() const {
        return steps.isEmpty() && probes.isEmpty() && spikes.isEmpty() && alarms.isEmpty() &&
               clips.isEmpty() && events.isEmpty() && changeReports.isEmpty() &&
               forecasts.isEmpty() && !newHistograms && !newAttentionMaps;
    }
};

// Everything one queued run needs: the worker runs RunSession(config, {dbPath, name}).
struct RunRequest {
    RunConfig config;
    QString dbPath;
    QString name;
    // A lesson's pause conditions for this run, watched on the training thread from its first
    // step (see TrainingWorker::setPauseConditions).
    std::vector<PauseCondition> pauses;
};

}  // namespace qklab::gui

Q_DECLARE_METATYPE(qklab::StepMetrics)
Q_DECLARE_METATYPE(qklab::ProbeStats)
Q_DECLARE_METATYPE(qklab::Spike)
Q_DECLARE_METATYPE(qklab::EventRecord)
Q_DECLARE_METATYPE(qklab::Event)
Q_DECLARE_METATYPE(qklab::RunConfig)
Q_DECLARE_METATYPE(qklab::gui::LiveBatch)
Q_DECLARE_METATYPE(qklab::gui::RunRequest)
Q_DECLARE_METATYPE(qklab::Callout)

namespace qklab::gui {
// Call once before any queued connection carries the types above (main() and the tests do).
void registerGuiMetaTypes();
}  // namespace qklab::gui
