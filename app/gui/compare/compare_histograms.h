// compare_histograms.h — the compared runs' raw-logit histograms at the same step and layer,
// on the exact bins each run counted with (never rebinned): side by side on one x range and
// one count scale, overlaid as outlines, or as the difference from the first run.
//
// TensorBoard, W&B and Aim users ask for cross-run histogram overlays and cannot have them;
// here they work because the bins are stored. When the runs' bins differ, overlay and
// difference would need rebinning: the view says so and shows them side by side only.
#pragma once

#include <QWidget>
#include <vector>

#include "common/hist_bins.h"
#include "compare/compare_data.h"

class QComboBox;
class QCustomPlot;
class QGridLayout;
class QLabel;
class QSlider;

namespace qklab::gui {

class CompareHistograms : public QWidget {
    Q_OBJECT
  public:
    enum class Mode { SideBySide, Overlay, Difference };

    explicit CompareHistograms(QWidget* parent = nullptr);

    void setComparison(const QString& dbPath, const Comparison* comparison);
    void setMode(Mode mode);
    void setStep(int64_t step);  // the nearest shared step at or before it
    void setLayer(int layer);

    // The runs' histograms of the shown layer, by run (loaded asynchronously).
    const std::vector<std::vector<LogitHistogram>>& loaded() const { return m_hists; }
    bool binsAgree() const { return m_binsAgree; }
    QList<QCustomPlot*> plots() const { return m_plotList; }
    QString noteText() const;
    int64_t shownStep() const;

  signals:
    void loadedLayer(int layer);

  private:
    void load();
    void redraw();
    void drawSideBySide();
    void drawOverlay(bool difference);
    QCustomPlot* plotAt(int index);
    // Run r's histogram at the shown step: the latest one at or before it.
    const LogitHistogram* histogramOf(size_t run) const;
    double countTop(size_t run) const;

    QString m_dbPath;
    const Comparison* m_comparison = nullptr;
    std::vector<HistBins> m_bins;  // per run
    std::vector<std::vector<LogitHistogram>> m_hists;
    std::vector<int64_t> m_steps;  // every step any run has a histogram at
    bool m_binsAgree = true;
    uint64_t m_generation = 0;

    QComboBox* m_mode = nullptr;
    QComboBox* m_layer = nullptr;
    QSlider* m_step = nullptr;
    QLabel* m_stepLabel = nullptr;
    QLabel* m_note = nullptr;
    QGridLayout* m_grid = nullptr;
    QList<QCustomPlot*> m_plotList;
};

}  // namespace qklab::gui
