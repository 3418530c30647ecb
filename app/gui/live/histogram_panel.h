// histogram_panel.h — raw attention-logit histograms of one layer (and head) at any probed
// step, an overlay of a second step, and the heat map over time (step x bin, log colour).
//
// Bins are the stored ones, drawn one bar per bin with edges computed from the run's own
// probes config (hist_bins/min/max/scale): no rebinning, unlike TensorBoard/W&B, so what a
// teacher points at is exactly what the probe counted. Under/overflow are shown as separate
// bars past the ends because in a blow-up they hold the interesting part.
#pragma once

#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include "common/hist_bins.h"
#include "qklab/config/run_config.h"
#include "qklab/store/records.h"

class QCheckBox;
class QGridLayout;
class QComboBox;
class QCPBars;
class QCPColorMap;
class QCPColorMapData;
class QCPColorScale;
class QCPGraph;
class QCustomPlot;
class QLabel;
class QSlider;
class QTimer;

namespace qklab::gui {

class HistogramPanel : public QWidget {
    Q_OBJECT
  public:
    explicit HistogramPanel(QWidget* parent = nullptr);
    ~HistogramPanel() override;

    // runLabel names the run in the view's header ("Run 3 “blowup”"), so that a tab never
    // shows data without saying whose.
    void setRun(int64_t runId, const RunConfig& config, const QString& dbPath,
                const QString& runLabel = QString());
    QString runLabel() const;
    // The header alone (the run ended: "(training)" no longer true).
    void setRunLabel(int64_t runId, const QString& label);
    void clear();
    // New rows were written for this run (live training): reload soon, at most once a second.
    void notifyNewData(int64_t runId);
    // A replay: only rows up to `step` exist yet (-1: none), as the live run had them then;
    // reloads at once. setRun() lifts the limit.
    void setStepLimit(int64_t step);
    std::optional<int64_t> stepLimit() const { return m_stepLimit; }
    // The newest step the view holds (-1: none).
    int64_t lastLoadedStep() const { return m_rows.empty() ? -1 : m_rows.back().step; }

    // Rows currently loaded (tests and the smoke screenshots check them).
    int loadedSteps() const { return int(m_rows.size()); }
    QCustomPlot* histogramPlot() const { return m_hist; }
    QCustomPlot* heatMapPlot() const { return m_heat; }

  public slots:
    void jumpToStep(qint64 step);
    // Overlays the first probed step on the selected one (how far the distribution moved).
    void setOverlay(bool on);
    void reload();
    // Shows this layer and head (-1: all heads) when the run has them (a lesson step's view).
    void selectLayerHead(int layer, int head);

  signals:
    void stepSelected(qint64 step);

  protected:
    void showEvent(QShowEvent* event) override;

  private:
    QLabel* m_runLabel = nullptr;
    QGridLayout* buildControls();
    QCustomPlot* buildHistogramPlot();
    QCustomPlot* buildHeatMap();
    struct HistogramLoad {
        std::vector<LogitHistogram> rows;
        std::unique_ptr<QCPColorMapData> heat;
        double maxCount = 1;
    };
    static std::unique_ptr<QCPColorMapData> buildHeatData(const std::vector<LogitHistogram>& rows,
                                                          const HistBins& bins, double* maxCount);
    void rebuildSelectors();
    void showStep();
    void showNoHistograms();
    void drawBars(const LogitHistogram& a, const HistBins& bins);
    void drawOverlay(const HistBins& bins);
    void describeStep(const LogitHistogram& a, const HistBins& bins, bool binsMatch);
    void fitAxes(const HistBins& bins, bool log);
    void rebuildHeatMap();
    int indexOfStep(int64_t step) const;

    int64_t m_runId = 0;
    RunConfig m_config;
    QString m_dbPath;
    HistBins m_bins;
    std::vector<LogitHistogram> m_rows;  // one layer/head, sorted by step
    uint64_t m_generation = 0;
    std::optional<int64_t> m_stepLimit;  // a replay's position; none: every stored row

    QComboBox* m_layer = nullptr;
    QComboBox* m_head = nullptr;
    QSlider* m_step = nullptr;
    QLabel* m_stepLabel = nullptr;
    QCheckBox* m_overlay = nullptr;
    QSlider* m_step2 = nullptr;
    QLabel* m_step2Label = nullptr;
    QCheckBox* m_logCounts = nullptr;
    QLabel* m_info = nullptr;
    QCustomPlot* m_hist = nullptr;
    QCPBars* m_barsA = nullptr;
    QCPBars* m_outside = nullptr;
    QCPGraph* m_lineB = nullptr;
    QCustomPlot* m_heat = nullptr;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QTimer* m_reloadTimer = nullptr;
    std::unique_ptr<QCPColorMapData> m_pendingHeat;  // loaded, not yet given to the map
    double m_heatMax = 1;
};

}  // namespace qklab::gui
