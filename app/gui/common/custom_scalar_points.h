// custom_scalar_points.h — a run's custom scalars as plot points, and the value axis they
// are drawn on: shared by the live view's Custom scalars plot (live/custom_scalars_plot.h) and
// the comparison view, which draws one name across runs.
#pragma once

#include <QList>
#include <QMap>
#include <QString>
#include <QVector>
#include <vector>

#include "qklab/store/records.h"

class QCPGraph;
class QCustomPlot;

namespace qklab::gui {

// One custom scalar's points, by step. A NaN value (a step the name was not logged at) has no
// point; an infinite one is NaN, a gap in the line.
struct ScalarPoints {
    QVector<double> steps, values;
};
// Every name's points, by name (sorted); `scalars` as the store orders them (name, then step).
QMap<QString, ScalarPoints> customScalarPoints(const std::vector<CustomScalar>& scalars);

// The value axis for `graphs` (the visible ones): logarithmic when every value is positive
// and they span more than two decades, else linear.
void chooseCustomScalarScale(QCustomPlot* plot, const QList<QCPGraph*>& graphs);

}  // namespace qklab::gui
