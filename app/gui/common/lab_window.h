// lab_window.h — the window as a lesson or a script drives it: show a view, open, compare or
// replay runs, load a preset and override its keys, train through the run controller, and
// intervene as a click on the intervention panel would; for a script also the Train strip, the
// Sample box, the Sweeps tab, presenter mode and the comparison's figure.
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

#include "common/figure_size.h"
#include "common/run_data.h"
#include "qklab/config/events.h"
#include "qklab/config/run_config.h"

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
    // The Compare tab's "Align at" (qklab/analysis/alignment.h: "spike", "step:300", ...; "" none);
    // false with *error naming the rule when it does not parse.
    virtual bool alignComparison(const QString& rule, QString* error) = 0;
    virtual bool startReplay(int64_t runId, double stepsPerSecond, QString* error = nullptr) = 0;
    virtual void stopReplay() = 0;

    // Posts an intervention to the training run as its panel's button would (and says so in
    // the panel); false when nothing trains.
    virtual bool postIntervention(const Event& event) = 0;

    // ---- What a script asks beyond a lesson (the automation driver, shell/automation.cpp):
    // each is what a user does with one of the window's panels, menus or docks.

    // Without modal dialogs (automation, tests): errors go to stderr and the status bar.
    virtual void setQuiet(bool quiet) = 0;
    // The run list and every view on the database at `path` (false when it does not open).
    virtual bool openDatabase(const QString& path) = 0;
    // The tabs' names in the tab bar's order (the names showTab() takes), and the shown one's.
    virtual QStringList tabNames() const = 0;
    virtual QString currentTab() const = 0;
    // View > Presenter mode.
    virtual void setPresenterMode(bool on) = 0;
    // The Train strip: the next run's name, and its Start button.
    virtual void setNextRunName(const QString& name) = 0;
    virtual void startRun() = 0;
    // The histogram view's overlay of the first probed step.
    virtual void setHistogramOverlay(bool on) = 0;
    // The views that read the store (histograms, attention maps) read it again, and the live
    // plots redraw now instead of at their next tick.
    virtual void reloadStoreViews() = 0;
    virtual void replotLiveNow() = 0;
    // How many points the live loss plot draws (the smoke test's proof that training drew).
    virtual int lossPointCount() const = 0;
    // The Compare tab's figure saved as PNG or PDF (false with *error when it cannot be).
    virtual bool saveComparisonFigure(const QString& path, QString* error,
                                      const FigureSize& size) = 0;
    // The Sweeps tab on a sweep (name or id; selected once the store lists it), and the share
    // of the tab's height its point table takes.
    virtual void showSweep(const QString& nameOrId) = 0;
    virtual void setSweepTableShare(double share) = 0;
    // A lesson (an embedded lesson's id, "02-blowup", or a lesson file) in the lesson player at
    // step startIndex (0-based); false when it does not load, and lessonError() says why.
    // setLessonPreferReplay: a training step with a recorded run offers its replay first.
    virtual bool openLesson(const QString& nameOrFile, int startIndex = 0) = 0;
    virtual QString lessonError() const = 0;
    virtual void setLessonPreferReplay(bool replay) = 0;
    // The Sample box: shown, a stored run picked (sampleRunReady follows), generated from.
    virtual void showSampleBox() = 0;
    virtual void pickSampleRun(int64_t runId) = 0;
    virtual void generateSample() = 0;
    virtual QString sampleNotice() const = 0;  // why there is nothing to generate from, or ""

  signals:
    void runOpened(qint64 runId, double seconds);  // a stored run is shown in every view
    void comparisonOpened(int runs, double seconds);
    void lessonCalloutShown(const QString& text, const QString& plot);
    // The Sample box's run picked by pickSampleRun is ready to generate from (or not), and its
    // text is written.
    void sampleRunReady(qint64 runId, bool ready);
    void sampleFinished(qint64 runId, bool completed, const QString& message);
};

}  // namespace qklab::gui
