// main_window.h — assembles the panels into docks and tabs and wires their signals.
//
// Deliberately thin (PlotJuggler's 3,700-line mainwindow.cpp is the thing not to copy): every
// behaviour lives in a panel; this class decides where panels sit, which panel hears which
// signal, and which run the views show. Lessons and scripts drive it through LabWindow
// (common/lab_window.h); nothing outside shell/ sees its panels.
#pragma once

#include <QList>
#include <QStringList>
#include <vector>

#include "common/gui_types.h"
#include "common/lab_window.h"

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
class SchedulePreview;
class SpikesPanel;
class StoreAlertBanner;
class SweepPanel;

class MainWindow : public LabWindow {
    Q_OBJECT
  public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // LabWindow: what lessons and scripts ask of the window.
    RunController* controller() const override { return m_controller; }
    QString databasePath() const override;
    void showTab(const QString& name) override;
    void selectLayerHead(int layer, int head) override;
    QWidget* livePlotOf(const QString& metric) const override;
    void setLessonPlots(const QStringList& metrics) override;
    const RunSnapshot& shownLiveRun() const override;
    bool loadPreset(const QString& pathOrName) override;
    bool applyOverrides(const QStringList& assignments, QString* error) override;
    RunConfig formConfig(QStringList* problems) override;
    void openRun(int64_t runId) override;  // loads a stored run into every view (async)
    void showNoRun() override;
    void compareRuns(const std::vector<int64_t>& runIds) override;
    void openComparison(const QString& savedName) override;
    bool alignComparison(const QString& rule, QString* error) override;
    bool startReplay(int64_t runId, double stepsPerSecond, QString* error = nullptr) override;
    void stopReplay() override;
    bool postIntervention(const Event& event) override;

    // LabWindow: what scripts ask beyond a lesson (most in main_window_scripts.cpp).
    void setQuiet(bool quiet) override { m_quiet = quiet; }
    bool openDatabase(const QString& path) override;
    QStringList tabNames() const override;
    QString currentTab() const override;
    void setPresenterMode(bool on) override;
    void setNextRunName(const QString& name) override;
    void startRun() override;
    void setHistogramOverlay(bool on) override;
    void reloadStoreViews() override;
    void replotLiveNow() override;
    int lossPointCount() const override;
    bool saveComparisonFigure(const QString& path, QString* error, const FigureSize& size) override;
    void showSweep(const QString& nameOrId) override;
    void setSweepTableShare(double share) override;
    void showSampleBox() override;
    void pickSampleRun(int64_t runId) override;
    void generateSample() override;
    QString sampleNotice() const override;
    // Lessons (main_window_lessons.cpp).
    bool openLesson(const QString& nameOrFile, int startIndex = 0) override;
    QString lessonError() const override;
    void setLessonPreferReplay(bool replay) override;

    // File > Fresh class database: a new empty database beside the open one, opened.
    bool openFreshClassDatabase();
    void togglePause();  // Run > Pause / resume (Space)
    // Run > New sweep from form…: the sweep dialog over the form's config; starts the sweep.
    void newSweepFromForm();
    void chooseLesson();  // File > Open lesson…
    void chooseReplay();  // Run > Replay run…

    // A dialog (or, with --quiet, a line on stderr) plus the status bar.
    void showError(const QString& title, const QString& message);

    // The window's one part of kind T (a panel, the presenter, the replay player, the lesson
    // stage), for the tests, which work the parts as a user would. The features and the
    // automation driver never ask: they go through LabWindow.
    template <class T>
    T* part() const {
        const QList<T*> found = findChildren<T*>();
        if (found.size() != 1)
            qFatal("MainWindow::part: %d parts of kind %s", int(found.size()),
                   T::staticMetaObject.className());
        return found.first();
    }

  protected:
    void closeEvent(QCloseEvent* event) override;

  private:
    // One row per tab of the centre: drives the tab bar and the names showTab() knows.
    struct Tab {
        QString name;  // as lessons and --tab name it
        QString title;
        QWidget* widget;
    };

    void buildSetupDocks();
    void buildCentre();
    void buildMenus();
    void connectPanels();
    void connectRuns();
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
    void connectScriptSignals();  // the parts' signals a script hears, as LabWindow's

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
    std::vector<Tab> m_tabList;
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
    // Reopens the shown stored run when another process (a Python training loop, qklab-cli)
    // has committed more of it since it was loaded: the live view follows it as the run list
    // does.
    void followStoredRun();
    void cutStoreViewsAtReplay();  // the store-read views end at the replayed step
    bool m_quiet = false;
};

}  // namespace qklab::gui
