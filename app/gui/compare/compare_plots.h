// compare_plots.h — the comparison's curves: one plot per compared metric (compareMetrics()),
// every run in its own colour, a shared hover cursor reading each run's value, the x-axis
// choice of the live plots, EMA smoothing that keeps the raw points faint (spike markers come
// from the raw values), seed groups as a mean line in a min-max band, and per-run spike,
// divergence, QK-Clip and intervention markers.
//
// When a compared run logged custom scalars (a run trained outside qklab: "train/acc"), one
// more plot draws the scalar chosen in scalarChoice() for every run that logged it, as the
// metrics are drawn (smoothing, groups, x axis); runs without that name draw nothing there.
#pragma once

#include <QStringList>
#include <QWidget>
#include <optional>
#include <vector>

#include "common/x_axis.h"
#include "compare/compare_data.h"
#include "qklab/analysis/alignment.h"

class QComboBox;
class QCustomPlot;
class QCPGraph;
class QGridLayout;
class QStackedLayout;

namespace qklab::gui {

class HoverCursor;

class ComparePlots : public QWidget {
    Q_OBJECT
  public:
    explicit ComparePlots(QWidget* parent = nullptr);

    // Not owned; redraws once. layer: as setLayer(), set with the data so that a reload does
    // not draw twice (compare_bench: 49 ms instead of 25 for 10 x 20k-step runs).
    void setComparison(const Comparison* comparison, int layer);
    void setXAxis(XAxisKind kind);
    // Runs aligned at their own anchor (qklab/analysis/alignment.h): every plot's x becomes the
    // steps from it, whatever the x-axis choice, with a line at 0; a run without an anchor is not
    // drawn (anchors() says why). nullopt: not aligned.
    void setAlignment(const std::optional<AlignRule>& rule);
    const std::optional<AlignRule>& alignment() const { return m_align; }
    // Each run's anchor under the alignment, found again at each redraw (empty when none).
    const std::vector<Anchor>& anchors() const { return m_anchors; }
    void setLayer(int layer);          // -1 = the worst layer at each step
    void setSmoothing(double weight);  // 0 = raw; up to 0.99
    // "" draws every run alone; kGroupBySeed or a config key as curveGroups() says.
    void setGroupBy(const QString& groupBy);
    // The groups drawn now (empty when ungrouped) and a run's colour under them.
    const std::vector<CurveGroup>& groups() const { return m_groups; }
    QColor runColor(size_t run) const { return curveColor(m_groups, run); }
    // One plot per run for `metric`, linked axes, instead of the overlay.
    void setSmallMultiples(bool on, CompareMetric metric);
    void redraw();
    // The plots a lesson step names (record columns, as compareMetricFor() maps them). In
    // presenter mode only those are laid out, two to a row, as in the live view: twelve plots
    // of 60 px stacked their ticks into one block on a projector. Outside presenter mode, or
    // with none that maps, all are.
    void setLessonMetrics(const QStringList& metrics);
    // Lays the overlay out again (presenter mode on entering and leaving).
    void relayoutPlots();
    QList<QCustomPlot*> shownPlots() const;

    // The metrics' plots in compareMetrics() order, then the custom scalar plot (hidden when
    // no compared run logged any).
    QList<QCustomPlot*> plots() const { return m_plots; }
    QCustomPlot* plotOf(CompareMetric metric) const;
    QCustomPlot* customScalarPlot() const { return m_customPlot; }
    // The custom scalar names of the compared runs (customScalarNames); hidden when none. Its
    // owner lays it out.
    QComboBox* scalarChoice() const { return m_scalarChoice; }
    QString customScalar() const { return m_scalar; }
    // Draws `name` in the custom scalar plot; a name no compared run logged keeps the choice.
    void setCustomScalar(const QString& name);
    QList<QCustomPlot*> multiplePlots() const { return m_multiPlots; }
    bool smallMultiples() const { return m_multiples; }
    // The columns of the grid shown now (the overlay's, or the small multiples').
    int gridColumns() const;
    HoverCursor* hoverCursor() const { return m_hover; }
    double lastRedrawMs() const { return m_lastRedrawMs; }

  private:
    QCustomPlot* makePlot(const QString& title, bool logScale, QList<QCustomPlot*>* group);
    void drawMultiples();
    int overlayColumns() const;
    QString titleOf(const CompareMetricInfo& info) const;
    // `info` null: the custom scalar plot (m_scalar).
    Series curveOf(const CompareMetricInfo* info, size_t run) const;
    void drawMetric(QCustomPlot* plot, const CompareMetricInfo* info);
    void drawRun(QCustomPlot* plot, const CompareMetricInfo* info, size_t index, bool inGroup);
    void drawGroup(QCustomPlot* plot, const CompareMetricInfo* info, const CurveGroup& group);
    void drawMarkers(QCustomPlot* plot, const CompareMetricInfo* info, size_t index);
    void fillScalarChoice();
    void drawCustomScalar();
    QString readout(QCustomPlot* plot, double x) const;
    void fitBands(QCustomPlot* plot);
    QVector<double> xs(size_t run, const QVector<double>& steps) const;
    // A run's step on the x axis: its own x-axis value, or the steps from its anchor.
    double xOf(size_t run, double step) const;
    bool drawn(size_t run) const;  // aligned: only runs with an anchor
    QString xTitle() const;
    void findAnchors();
    void drawZeroLine(QCustomPlot* plot);

    // A seed band as drawn now: its full-resolution edges, thinned to the plot's pixel columns
    // over the visible x range at each layout (fitBands), i.e. again after a zoom or resize.
    struct DrawnBand {
        QCustomPlot* plot = nullptr;
        QCPGraph *low = nullptr, *high = nullptr;
        QVector<double> x, lowValues, highValues;
        double fittedLower = 0, fittedUpper = 0;  // the x range the graphs hold it for
        int fittedColumns = 0;
    };

    const Comparison* m_comparison = nullptr;
    std::vector<DrawnBand> m_bands;
    std::vector<StepToX> m_x;  // per run
    XAxisKind m_xKind = XAxisKind::Step;
    std::optional<AlignRule> m_align;
    std::vector<Anchor> m_anchors;  // per run, while aligned
    int m_layer = -1;
    double m_smoothing = 0;
    QString m_groupBy;
    std::vector<CurveGroup> m_groups;  // of m_groupBy, made again at each redraw
    QList<QCustomPlot*> m_plots;       // in compareMetrics() order, then m_customPlot
    QCustomPlot* m_customPlot = nullptr;
    QComboBox* m_scalarChoice = nullptr;
    QString m_scalar;                   // the custom scalar drawn ("" when there is none)
    QList<QCustomPlot*> m_lessonPlots;  // setLessonMetrics
    QGridLayout* m_overlayGrid = nullptr;
    QList<QCustomPlot*> m_multiPlots;  // small multiples: one per run, made on demand
    bool m_multiples = false;
    CompareMetric m_multiMetric = CompareMetric::MaxLogit;
    QStackedLayout* m_stack = nullptr;
    QGridLayout* m_multiGrid = nullptr;
    HoverCursor* m_hover = nullptr;
    bool m_syncing = false;
    double m_lastRedrawMs = 0;
};

}  // namespace qklab::gui
