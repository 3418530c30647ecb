// plot_cursor.h — a hover cursor shared by a group of plots: a vertical line at the mouse's x
// on every plot of the group, and a readout of the curves' values there (TensorBoard and W&B
// users expect step, value and run under the mouse on every curve; the comparison view's
// shared cursor is the same object).
//
// The line lives on QCustomPlot's buffered "overlay" layer, so moving it redraws that layer
// alone, not the curves: a full replot of a 100k-step plot takes ~250 ms, far too slow for
// every mouse move.
#pragma once

#include <QList>
#include <QObject>
#include <QPoint>
#include <QStringList>
#include <functional>

class QCustomPlot;
class QCPGraph;

namespace qklab::gui {

class HoverCursor : public QObject {
    Q_OBJECT
  public:
    // The tooltip text for the mouse at plot x (rich text); empty shows none.
    using Readout = std::function<QString(QCustomPlot* plot, double x)>;

    explicit HoverCursor(QObject* parent = nullptr);
    void addPlot(QCustomPlot* plot);
    void setReadout(Readout readout) { m_readout = std::move(readout); }
    // The mouse is at `pos` over `plot`: line on every plot, readout beside the mouse.
    void hover(QCustomPlot* plot, const QPoint& pos);
    void hide();
    double x() const { return m_x; }  // NaN while hidden
    QString lastText() const { return m_text; }

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override;  // leaving a plot hides

  private:
    void drawLine(QCustomPlot* plot, double x, bool repaint = true);

    QList<QCustomPlot*> m_plots;
    Readout m_readout;
    double m_x;
    QString m_text;
};

// Graphs the readout skips (spike markers: they explain themselves on hover).
void excludeFromReadout(QCPGraph* graph);

// "name: value" for every visible, named graph of `plot` at its data point nearest to x.
// keyLabel(graph, key) names the step of a point ("step 120"; graphs of several runs map x to
// steps differently); it is added in brackets when it differs from keyLabel(graph, x).
using KeyLabel = std::function<QString(const QCPGraph* graph, double key)>;
QStringList curveValuesAt(QCustomPlot* plot, double x, const KeyLabel& keyLabel);

}  // namespace qklab::gui
