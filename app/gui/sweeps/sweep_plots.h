// sweep_plots.h — the two plots of a learning-rate sweep (Wortsman et al. 2023):
//  * LR sensitivity: final loss (train or validation) against LR on a log axis, one curve per
//    configuration; over seeds, the mean with a min–max error bar; an LR where a seed diverged
//    gets a cross at the loss at initialisation (what the sensitivity counts it as); each
//    curve's legend entry carries its sensitivity and max stable LR, which is also marked by a
//    dashed vertical line in the curve's colour.
//  * Peak raw max logit against LR, log-log, per configuration.
// A configuration has the same colour in both plots (compareColor(index)).
#pragma once

#include <QPoint>
#include <QSet>
#include <QWidget>
#include <vector>

#include "qklab/analysis/sweep_report.h"

class QCustomPlot;
class QCPGraph;
class QCPErrorBars;
class QCPTextElement;

namespace qklab::gui {

// An LR as a tick label: 3e-4, 9.5e-4, 0.03, 0.3 (two significant digits, short).
QString lrText(double lr);

class SweepPlots : public QWidget {
    Q_OBJECT
  public:
    explicit SweepPlots(QWidget* parent = nullptr);

    // Draws the report's configurations; `validation` only names the y axis (the report was
    // computed with the matching SweepReportOptions).
    void setReport(const SweepReport& report, bool validation);
    void clear();

    QCustomPlot* lossPlot() const { return m_loss; }
    QCustomPlot* logitPlot() const { return m_logit; }
    // Configuration k's graphs (null when k is out of range or the curve has no points).
    QCPGraph* meanGraph(size_t k) const;
    QCPGraph* divergedGraph(size_t k) const;
    QCPGraph* logitGraph(size_t k) const;
    QCPErrorBars* rangeBars(size_t k) const;

    // "qk_norm=none · sensitivity 0.352 · max stable LR 0.03" (short keys).
    static QString legendText(const SweepConfiguration& c);
    static QString shortLabel(const SweepConfiguration& c);

  protected:
    void resizeEvent(QResizeEvent* event) override;

  private:
    QCustomPlot* makePlot(const QString& title, const QString& yLabel, bool logY);
    void drawConfiguration(size_t k, const SweepConfiguration& c, double initialLoss);
    void fitRanges(const SweepReport& report);

    struct Graphs {
        QCPGraph* mean = nullptr;
        QCPGraph* diverged = nullptr;
        QCPGraph* logit = nullptr;
        QCPErrorBars* range = nullptr;
    };
    QCustomPlot* m_loss = nullptr;
    QCustomPlot* m_logit = nullptr;
    QCPTextElement* m_lossTitle = nullptr;
    std::vector<Graphs> m_graphs;
    SweepReport m_report;           // the one drawn
    QSet<QCustomPlot*> m_userView;  // plots the user zoomed or dragged
    QPoint m_pressAt;
};

}  // namespace qklab::gui
