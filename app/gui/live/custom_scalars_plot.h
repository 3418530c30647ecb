// custom_scalars_plot.h — the live view's "Custom scalars" plot: what a run trained outside
// qklab logged besides qklab's step metrics (run.log({"tokens_seen": ..., "train/acc": ...})),
// one series per name with a legend.
//
// The plot exists for every run but LivePlotsPanel lays it out only when the run has custom
// scalars, so qklab's own runs look as before. Names of very different scales share the plot:
// when every value is positive and they span more than two decades the value axis is
// logarithmic, and showOnly() (the choice box, shown beside the live view's other controls
// while there are custom scalars) narrows the plot to one name.
//
// The comparison view draws one name across runs from the same points and on the same value
// axis rule (common/custom_scalar_points.h).
#pragma once

#include <QList>
#include <QMap>
#include <QStringList>
#include <QVector>
#include <functional>
#include <vector>

#include "common/custom_scalar_points.h"
#include "qklab/store/records.h"

class QComboBox;
class QCPGraph;
class QCustomPlot;

namespace qklab::gui {

class CustomScalarsPlot {
  public:
    using StepToXFn = std::function<double(double step)>;

    // `replot` redraws the plot (the owner fits the axes) after the choice box changed it.
    CustomScalarsPlot(QCustomPlot* plot, std::function<void()> replot);

    // Replaces every series: one graph per name, points at xOfStep(step). A NaN value (a step
    // the name was not logged at) has no point; an infinite one is a gap in the line.
    void set(const std::vector<CustomScalar>& scalars, const StepToXFn& xOfStep);
    void clear();  // removes the graphs

    bool empty() const { return m_graphs.isEmpty(); }
    QStringList names() const { return m_graphs.keys(); }  // sorted, as the store orders them
    QCPGraph* graphOf(const QString& name) const { return m_graphs.value(name); }
    QCustomPlot* plot() const { return m_plot; }
    // "custom: all", then each name; hidden while there are none. Its owner lays it out.
    QComboBox* choice() const { return m_choice; }

    // Shows only the series `name`; "" (or a name the run did not log) shows every series.
    // The value axis is chosen again for what is shown.
    void showOnly(const QString& name);
    QString shownName() const { return m_only; }

  private:
    void fillChoice();

    QCustomPlot* m_plot;
    QComboBox* m_choice;
    QMap<QString, QCPGraph*> m_graphs;
    QString m_only;
};

}  // namespace qklab::gui
