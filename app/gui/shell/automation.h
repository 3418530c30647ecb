// automation.h — command-line options and the driver that scripts the app for the smoke test,
// the screenshots in docs/ and the responsiveness benchmark.
//
//   qklab --preset FILE --set key=value --db FILE --autostart --quit-after-steps N
//         --screenshot OUT.png --tab histograms --run-name NAME --open-run ID --latency-report FILE
//         --compare 1,2 --compare-align spike --sweep NAME --lesson NAME|FILE --lesson-step N
//         --presenter --replay RUN --replay-speed N --shot-on-callout --sample 1,2
//
// The driver only uses what a user could do through the panels (load preset, start, open a
// run, switch tab) so a passing smoke test means the real path works. It asks the window for all
// of it through LabWindow (common/lab_window.h), as the lesson stage does, so it includes no
// feature's header: the window forwards each request to the panel a user would work.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include "common/figure_size.h"
#include "shell/latency_monitor.h"

namespace qklab::gui {

class LabWindow;

struct LaunchOptions {
    QString presetPath;
    QStringList overrides;  // --set key=value, applied after the preset
    QString dbPath;
    bool autostart = false;
    QString runName;
    qint64 quitAfterSteps = -1;  // stop the run and quit once this many steps trained
    int quitAfterMs = -1;        // quit after this long regardless (benchmarks)
    QString screenshotPath;      // window grab taken just before quitting
    QStringList plotShots;       // extra PNGs: "<dir>" gets one file per tab
    QString tab;                 // live, histograms, attention, spikes, compare, sweeps
    qint64 openRunId = 0;        // show this stored run (after autostart, if both)
    QList<qint64> compareIds;    // open the Compare tab on these stored runs
    QString compareFigure;       // then save its figure (PNG or PDF) here and quit
    QString compareAlign;   // with compareIds: "Align at" this rule (qklab/analysis/alignment.h)
    FigureSize figureSize;  // at this size (--figure-size; a slide by default)
    QString sweep;          // open the Sweeps tab on this sweep (name or id)
    double sweepTableShare = -1;  // with --sweep: the point table's share of the tab's height
    QString latencyReport;        // write LatencyMonitor stats here at quit
    QStringList
        interventions;     // "STEP:{\"kind\":...,\"params\":{...}}", posted once STEP is reached
    bool overlay = false;  // histogram view: overlay the first probed step
    bool quiet = false;    // no modal dialogs
    QString theme;         // light | dark; empty = the saved choice
    QString lesson;        // open this lesson (an embedded lesson's id, or a file)
    int lessonStep = 0;    // then go to this step (1-based; 0 = the first)
    bool lessonReplay = false;  // training steps with a recording offer its replay first
    bool presenter = false;
    QString replay;              // replay this stored run (id or name)
    double replaySpeed = 0;      // steps per second; 0 = the recorded wall time
    bool shotOnCallout = false;  // with --screenshot: take it once a lesson callout shows, quit
    QList<qint64> sampleIds;     // generate text from these stored runs in the Sample box
};

// Parses argv; on --help or a bad option prints and returns false with *exitCode set.
bool parseLaunchOptions(const QStringList& args, LaunchOptions* options, int* exitCode);

class AutomationDriver : public QObject {
    Q_OBJECT
  public:
    AutomationDriver(LabWindow* window, const LaunchOptions& options, QObject* parent = nullptr);

    // Loads preset/overrides/db and schedules the rest; false when setup failed (message printed).
    bool begin();
    int exitCode() const { return m_exitCode; }

  private:
    bool openDatabaseAndPreset();
    void watchRuns();
    void autostart();
    void beginComparison();
    void onProgress(qint64 runId, qint64 step);
    void onRunEnded();
    void finishAndQuit();
    void saveTabShots(const QString& dir);
    void writeLatencyReport();
    void openRequestedRun();
    bool beginLesson();
    void beginSamples();
    void sampleNext();

    LabWindow* m_window;
    LaunchOptions m_options;
    LatencyMonitor* m_latency = nullptr;
    bool m_stopping = false;
    bool m_quitting = false;
    bool m_openedRun = false;
    int m_nextIntervention = 0;
    int m_nextSample = 0;
    bool m_samplePending = false;  // a --sample run was picked; generate once it is ready
    bool m_sawProgress = false;
    QString m_latencySummary;
    LatencyStats m_latencyStats;
    int m_exitCode = 0;
};

}  // namespace qklab::gui
