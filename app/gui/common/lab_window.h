// lab_window.h — the window as a lesson or a script drives it: show a view, open, compare or
// replay runs, load a preset and override its keys, train through the run controller, and
// intervene as a click on the intervention panel would.
//
// The lesson stage (lessons/) and the automation driver (shell/) ask the window for these and
// nothing else: the panels, docks and tabs that carry them out are the window's business
// (shell/main_window.h implements this). A feature folder never includes another feature;
// what they share goes through here and the rest of common/.
#pragma once

#include <QMainWindow>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <vector>

#include "common/run_data.h"
#include "qklab/events.h"
#include "qklab/run_config.h"

namespace qklab::gui {

class RunController;

class LabWindow : public QMainWindow {
    Q_OBJECT
  public:
    using QMainWindow::QMainWindow;

    // The training queue: start, pause, stop, a lesson's pause conditions.
    virtual RunController* controller() const = 0;
    // The run database the views and the run list show.
    virtual QString databasePath() const = 0;

    // A view by name: a tab (live, histograms, attention, spikes, compare, sweeps) or "config",
    // the set-up form beside them: the names of a lesson step's "view".
    virtual void showTab(const QString& name) = 0;
    // The layer and head (-1: all heads) the histogram and attention views show.
    virtual void selectLayerHead(int layer, int head) = 0;
    // The live plot that draws a metric (a probe column, loss, grad_norm, lr, …): the one a
    // callout frames.
    virtual QWidget* livePlotOf(const QString& metric) const = 0;
    // What the live views show now (a live run, a replay up to its position, a stored run).
    virtual const RunSnapshot& shownLiveRun() const = 0;
    // The live plots a lesson step names (metrics); presenter mode shows only those.
    virtual void setLessonPlots(const QStringList& metrics) = 0;

    // The set-up form: a preset (a file or a shipped preset's name), then `dotted.key=value`
    // overrides (false with *error at a bad one), and the config it holds, checked (problems
    // listed in *problems; none when it can train).
    virtual bool loadPreset(const QString& pathOrName) = 0;
    virtual bool applyOverrides(const QStringList& assignments, QString* error) = 0;
    virtual RunConfig formConfig(QStringList* problems) = 0;

    // Stored runs: into every view, side by side in the Compare tab, a saved comparison, or
    // played back through the live views (stepsPerSecond > 0 a fixed rate, else the recorded
    // wall time; false with *error when it cannot be read).
    virtual void openRun(int64_t runId) = 0;
    // No run in the live and spikes views (a lesson step before its lesson's first run).
    virtual void showNoRun() = 0;
    virtual void compareRuns(const std::vector<int64_t>& runIds) = 0;
    virtual void openComparison(const QString& savedName) = 0;
    virtual bool startReplay(int64_t runId, double stepsPerSecond, QString* error = nullptr) = 0;
    virtual void stopReplay() = 0;

    // Posts an intervention to the training run as its panel's button would (and says so in
    // the panel); false when nothing trains.
    virtual bool postIntervention(const Event& event) = 0;

  signals:
    void runOpened(qint64 runId, double seconds);  // a stored run is shown in every view
    void comparisonOpened(int runs, double seconds);
};

}  // namespace qklab::gui
