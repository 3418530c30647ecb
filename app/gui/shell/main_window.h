// main_window.h — assembles the panels into docks and tabs and wires their signals.
//
// Deliberately thin (PlotJuggler's 3,700-line mainwindow.cpp is the thing not to copy): every
// behaviour lives in a panel; this class decides where panels sit, which panel hears which
// signal, and which run the views show.
#pragma once

#include <QMainWindow>
#include <vector>

#include "common/gui_types.h"
#include "common/run_data.h"

class QDockWidget;
class QMenu;
class QTabWidget;

namespace qklab::gui {

class AttentionMapPanel;
class ComparePanel;
class ConfigForm;
class HistogramPanel;
class InterventionPanel;
class LessonPlayer;
class LessonStage;
class LivePlotsPanel;
class PresenterMode;
class ReplayBar;
class ReplayPlayer;
class SamplePanel;
class PresetPicker;
class RunBrowserPanel;
class RunControlsPanel;
class RunController;
class SchedulePreview;
class SpikesPanel;
class StoreAlertBanner;
class SweepPanel;

class MainWindow : public QMainWindow {
    Q_OBJECT
  public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Without modal dialogs (automation, tests): errors go to stderr and the status bar.
    void setQuiet(bool quiet) { m_quiet = quiet; }
    bool openDatabase(const QString& path);
    void togglePause();  // Run > Pause / resume (Space)
    bool loadPreset(const QString& path);
    // Applies `dotted.key=value` overrides to the form; false (and a message) on a bad one.
    bool applyOverrides(const QStringList& assignments, QString* error);
    void showTab(const QString& name);  // live | histograms | attention | spikes | compare | sweeps
    void openRun(int64_t runId);        // loads a stored run into every view (async)
    // Opens the Compare tab on these stored runs (async).
    void compareRuns(const std::vector<int64_t>& runIds);
    // Opens the Sweeps tab on this sweep (name or id; selected once the store lists it).
    void showSweep(const QString& nameOrId);
    // Run > New sweep from form…: the sweep dialog over the form's config; starts the sweep.
    void newSweepFromForm();

    // Lessons (main_window_lessons.cpp). Opens an embedded lesson (its id, "02-blowup") or a
    // lesson file in the lesson player, at step startIndex (0-based); false (the parser's
    // message in the player) when it does not load.
    bool openLesson(const QString& nameOrFile, int startIndex = 0);
    void chooseLesson();  // File > Open lesson…
    // Plays a stored run back through the live views (read-only): stepsPerSecond > 0 is a
    // fixed rate, else the recorded wall time. False with *error when it cannot be read.
    bool startReplay(int64_t runId, double stepsPerSecond = 0, QString* error = nullptr);
    void stopReplay();
    void chooseReplay();  // Run > Replay run…

    RunController* controller() const { return m_controller; }
    ConfigForm* configForm() const { return m_form; }
    RunControlsPanel* runControls() const { return m_controls; }
    LivePlotsPanel* livePlots() const { return m_live; }
    HistogramPanel* histograms() const { return m_histograms; }
    AttentionMapPanel* attentionMaps() const { return m_attention; }
    SpikesPanel* spikes() const { return m_spikes; }
    SamplePanel* samplePanel() const { return m_sample; }
    ComparePanel* comparePanel() const { return m_compare; }
    SweepPanel* sweepPanel() const { return m_sweeps; }
    RunBrowserPanel* runBrowser() const { return m_browser; }
    InterventionPanel* interventions() const { return m_interventions; }
    LessonPlayer* lessonPlayer() const { return m_lessonPlayer; }
    LessonStage* lessonStage() const { return m_lessonStage; }
    ReplayPlayer* replayPlayer() const { return m_replay; }
    ReplayBar* replayBar() const { return m_replayBar; }
    PresenterMode* presenter() const { return m_presenter; }
    StoreAlertBanner* storeAlert() const { return m_storeAlert; }

    // A dialog (or, with --quiet, a line on stderr) plus the status bar.
    void showError(const QString& title, const QString& message);

  signals:
    void runOpened(qint64 runId, double seconds);  // a stored run is shown in every view
    void comparisonOpened(int runs, double seconds);

  protected:
    void closeEvent(QCloseEvent* event) override;

  private:
    void buildMenus();
    void connectPanels();
    void connectSweeps();
    void onRunStarted(qint64 runId, const QString& name);
    void onBatch(const LiveBatch& batch);
    void onRunEnded(qint64 runId, const QString& status, const QString& message, bool failed);
    // A run stopped because its database could not be written: the banner, until dismissed.
    void onStoreFailure(qint64 runId, const QString& message);
    void jumpAll(qint64 step);
    void restoreLayout();
    void buildLessonParts();
    void addLessonActions(QMenu* file, QMenu* run, QMenu* view);
    void connectReplay();

    RunController* m_controller = nullptr;
    PresetPicker* m_presets = nullptr;
    ConfigForm* m_form = nullptr;
    SchedulePreview* m_preview = nullptr;
    RunControlsPanel* m_controls = nullptr;
    InterventionPanel* m_interventions = nullptr;
    LivePlotsPanel* m_live = nullptr;
    HistogramPanel* m_histograms = nullptr;
    AttentionMapPanel* m_attention = nullptr;
    SpikesPanel* m_spikes = nullptr;
    ComparePanel* m_compare = nullptr;
    SweepPanel* m_sweeps = nullptr;
    SamplePanel* m_sample = nullptr;
    QDockWidget* m_sampleDock = nullptr;
    RunBrowserPanel* m_browser = nullptr;
    QTabWidget* m_tabs = nullptr;
    StoreAlertBanner* m_storeAlert = nullptr;
    QDockWidget* m_setupDock = nullptr;
    QDockWidget* m_interventionDock = nullptr;
    LessonPlayer* m_lessonPlayer = nullptr;
    LessonStage* m_lessonStage = nullptr;
    QDockWidget* m_lessonDock = nullptr;
    ReplayPlayer* m_replay = nullptr;
    ReplayBar* m_replayBar = nullptr;
    QDockWidget* m_replayDock = nullptr;
    PresenterMode* m_presenter = nullptr;
    uint64_t m_openGeneration = 0;
    bool m_quiet = false;
};

}  // namespace qklab::gui
