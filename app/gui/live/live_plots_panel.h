// live_plots_panel.h — the training dashboard: loss, grad norm, LR/alpha/softcap lanes,
// max/p99 logits per layer against the 20/30 thresholds, q/k norms and attention entropy.
//
// Data arrives either as a whole RunSnapshot (a stored run) or as live batches from the
// worker. Appending never replots directly: a 50 ms single-shot timer coalesces all batches
// into one queued replot per plot (PlotJuggler's pattern), so a fast run cannot starve the
// event loop. Spike markers, and the max-logit plot's QK-Clip markers (qk_clip_marks.h),
// explain themselves on hover; clicking one emits stepSelected.
#pragma once

#include <QMap>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <utility>
#include <vector>

#include "common/gui_types.h"
#include "common/qk_clip_marks.h"
#include "common/run_data.h"
#include "common/x_axis.h"
#include "qklab/analysis/onsets.h"
#include "qklab/store/record_columns.h"

class QCheckBox;
class QComboBox;
class QGridLayout;
class QHBoxLayout;
class QCPAxis;
class QCPGraph;
class QCPRange;
class QCustomPlot;
class QLabel;
class QStackedWidget;
class QTimer;

namespace qklab::gui {

class CustomScalarsPlot;
class HoverCursor;

class LivePlotsPanel : public QWidget {
    Q_OBJECT
  public:
    // The least height of a plot: tick labels, title and legend stay apart (the plots scroll
    // when the window has less room).
    static constexpr int kReadableHeight = 150;

    explicit LivePlotsPanel(QWidget* parent = nullptr);
    ~LivePlotsPanel() override;

    void showRun(RunSnapshot snapshot);  // replaces everything shown
    void startLive(int64_t runId, const RunConfig& config, const QString& name);
    void appendBatch(const LiveBatch& batch);  // ignored unless batch.runId is shown
    void clear();
    void setRunStatus(int64_t runId, const QString& status);  // header text after the run ends

    int64_t runId() const { return m_run.runId; }
    QString forecastText() const;  // the forecast line ("" when hidden)
    // The shown run's onsets (qklab/analysis/onsets.h) through its latest step, as the forecast
    // line judged them; kept only while the run has forecasts.
    const std::vector<Onset>& onsets() const { return m_onsets; }
    int64_t latestStep() const { return m_run.steps.empty() ? 0 : m_run.steps.back().step; }
    const RunSnapshot& run() const { return m_run; }
    int lossPointCount() const;
    QList<QCustomPlot*> plots() const { return m_plots; }
    QCustomPlot* lossPlot() const { return m_loss; }
    QCustomPlot* logitPlot() const { return m_logits; }
    // The plot that shows a lesson metric (a probe column, or a step-metric column one of the
    // plots draws); the logit plot for anything else.
    QCustomPlot* plotForMetric(const QString& metric) const;
    // The plots a lesson step names (metric names, as plotForMetric takes them). In presenter
    // mode only those are laid out, two to a row, so that a projector's few pixels go to
    // them; outside it, or with none named, all seven are (eight with custom scalars).
    void setLessonMetrics(const QStringList& metrics);
    // Lays the plots out again for presenter mode or the everyday view (PresenterMode calls
    // it on entering and leaving).
    void relayoutPlots();
    QList<QCustomPlot*> shownPlots() const;
    HoverCursor* hoverCursor() const { return m_hover; }
    const QkClipMarks& clipMarks() const { return *m_clips; }  // on the logit plot
    // The scalars a run trained outside qklab logged besides the step metrics (laid out only
    // when the shown run has some).
    CustomScalarsPlot& customScalars() const { return *m_custom; }
    void setXAxis(XAxisKind kind);
    bool following() const;

  public slots:
    void jumpToStep(qint64 step);
    void replotNow();

    // No run shown: the first-run panel (one button) instead of empty plots.
    bool showsEmptyState() const;

  signals:
    void stepSelected(qint64 step);
    // The first-run panel's button: train the healthy example (the window loads and starts it).
    void firstRunRequested();

  private:
    QHBoxLayout* buildHeader();
    QWidget* buildEmptyState();
    void refreshEmptyState();
    void buildLossAndGradientPlots();
    void buildLanesPlot();
    void buildProbePlots();
    void buildOutputLogitPlot();
    void showCustomScalars();  // the shown run's, laid out or hidden as it has any
    QCustomPlot* makePlot(const QString& title, const QString& yLabel, const QString& shortTitle);
    QCPGraph* layerGraph(QCustomPlot* plot, const QString& metric, int layer);
    static QString layerKey(QCustomPlot* plot, const QString& metric, int layer);
    // A graph of `plot` (on `valueAxis`, else the left axis) that draws a step-metric column.
    QCPGraph* stepGraph(QCustomPlot* plot, const char* column, QCPAxis* valueAxis = nullptr);
    void addSteps(const std::vector<StepMetrics>& steps, size_t from);
    void addProbes(const std::vector<ProbeStats>& probes, size_t from);
    void refreshSpikes();
    void refreshHeader();
    void refreshMarkers();
    void setupThresholds();
    void scheduleReplot();
    void syncXRanges(QCustomPlot* source);
    static void fitValueAxis(QCPAxis* axis, const QCPRange& keys);
    bool showSpikeTip(QCustomPlot* plot, const QPoint& pos, bool click);
    void resetXMap();
    void redrawForXAxis();
    QString readout(QCustomPlot* plot, double x);  // the hover text: run, step, every curve
    // The forecast line above the plots: the run's latest forecast, counted down to the
    // latest step, or what came of it (forecast_view.h); hidden when the run has none.
    void refreshForecast();
    QkClipMarks::StepToXFn xOfStep() const {
        return [this](double step) { return m_x(step); };
    }

    RunSnapshot m_run;
    std::vector<Onset> m_onsets;  // refreshForecast
    QString m_title;
    QString m_status;  // "training", "finished", "replay", …
    QLabel* m_header = nullptr;
    QLabel* m_forecastLine = nullptr;
    QCheckBox* m_follow = nullptr;
    QPoint m_pressPos;                     // where the last mouse press on a plot was
    static constexpr int kDragPixels = 4;  // farther than this with the button down: a drag
    QCheckBox* m_logLogits = nullptr;
    QComboBox* m_xChoice = nullptr;  // step / tokens seen / training time
    StepToX m_x;                     // the shown run's step -> x
    HoverCursor* m_hover = nullptr;
    QTimer* m_replotTimer = nullptr;
    QList<QCustomPlot*> m_plots;
    QList<QCustomPlot*> m_lessonPlots;  // setLessonMetrics
    QGridLayout* m_grid = nullptr;
    QStackedWidget* m_pages = nullptr;  // the first-run panel, or the plots (scrolling)
    QWidget* m_emptyState = nullptr;
    QCustomPlot* m_loss = nullptr;
    QCustomPlot* m_grad = nullptr;
    QCustomPlot* m_lanes = nullptr;
    QCustomPlot* m_logits = nullptr;
    QCustomPlot* m_norms = nullptr;
    QCustomPlot* m_entropy = nullptr;
    QCustomPlot* m_outLogits = nullptr;  // log Z of the LM head (step metrics)
    QCPGraph* m_trainLoss = nullptr;
    QCPGraph* m_lossSpikes = nullptr;
    QCPGraph* m_gradSpikes = nullptr;
    // The step-metric columns drawn (qklab/store/record_columns.h), each by its graph.
    std::vector<std::pair<const RecordColumn<StepMetrics>*, QCPGraph*>> m_stepGraphs;
    QMap<QString, QCPGraph*> m_layerGraphs;  // "<plot>/<metric>/<layer>"
    std::unique_ptr<QkClipMarks> m_clips;
    std::unique_ptr<CustomScalarsPlot> m_custom;
    // When a stored snapshot of the training run is shown, live rows up to these steps are
    // already in it and must not be drawn twice.
    int64_t m_stepLimit = -1;
    int64_t m_probeLimit = -1;
    int64_t m_clipLimit = -1;  // one step's clips arrive together: a step is in or out
    bool m_syncing = false;
    bool m_markersDirty = false;
    double m_cursorStep = -1;
};

}  // namespace qklab::gui
