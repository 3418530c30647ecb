// plot_style.h — what every qklab plot shares: look, interactions, log axes, the domain's
// threshold lines, intervention/event markers and the "jump to step" cursor.
//
// Kept as free functions over QCustomPlot so each panel stays a thin owner of its plots, and
// markers look the same on every plot (a user learns one visual language).
#pragma once

#include <QColor>
#include <QList>
#include <QPointF>
#include <QRectF>
#include <QString>
#include <functional>
#include <utility>
#include <vector>

#include "common/hist_bins.h"
#include "qklab/store/records.h"

class QCustomPlot;
class QCPAxis;
class QCPAxisRect;
class QCPAbstractItem;

namespace qklab::gui {

// Fonts, margins, x-drag/zoom (y stays auto-scaled), legend in the top-left.
void stylePlot(QCustomPlot* plot, const QString& yLabel, bool legend = true,
               Qt::Alignment legendAt = Qt::AlignTop | Qt::AlignRight);

// Moves the plot's legend out of the axis rect into a strip of the plot layout at `row`,
// entries side by side: a legend inside the axis rect covered curves, spike markers and event
// labels, worst at 1280x720.
void placeLegendOutside(QCustomPlot* plot, int row);
// As many legend entries per row as the plot's width holds without cutting a name.
void fitLegendColumns(QCustomPlot* plot);
void setLogAxis(QCPAxis* axis, bool log);

// Horizontal dashed reference line (thresholds 20 and 30, the QK-norm bound). Its label is an
// entry of the plot's legend, drawn as a piece of the dashed line and the text: a boxed label
// at the right edge of the data hid the curves it was about (issue 37). The legend shows even
// before the plot has series. An empty label draws the line alone (the caller names it
// elsewhere, e.g. on an axis).
void addThresholdLine(QCustomPlot* plot, double y, const QColor& color, const QString& label);

// The label boxes of `plot` that cover a data point: every QCPItemText with a visible brush
// (a box) and the legend when it sits inside the axis rect, whose rectangle (in the plot's
// pixels) contains the pixel of a point of a visible graph or curve within the axes' ranges.
// Empty when no label hides data; the invariant tests hold every plot to.
QList<QRectF> labelBoxesCoveringData(QCustomPlot* plot);

// Replace the event markers (vertical dashed lines with the event kind as a label); user
// interventions are drawn in a stronger colour than config events.
// totalSteps: labels of events in the last fifth of the run go left of their line so they are
// not cut off at the right edge.
// toX maps a step to the plot's x (tokens seen, time); identity when empty.
// reports: what each change did (qklab/analysis/change_reports.h), matched by step and kind: its
// label adds the loss shift, and the mark (line and label) carries the whole report as its tip
// (eventTipAt).
void setEventMarkers(QCustomPlot* plot, const std::vector<EventRecord>& events,
                     int64_t totalSteps = 0, const std::function<double(double)>& toX = {},
                     const std::vector<ChangeReport>& reports = {});
// The report of the event mark under `pos` (within a few pixels of its line or on its label),
// as tooltip HTML; empty when there is none.
QString eventTipAt(QCustomPlot* plot, const QPointF& pos);
// A change report's few words for its event's label (a second line under the event's own):
// "loss +0.32 vs trend", the loss after against what the trend before led to expect.
QString changeReportLabel(const ChangeReport& r);

// A title (a QCPTextElement at the plot layout's row 0) that wraps at spaces into as many
// lines as the plot's width needs instead of being cut at both ends ("rm p90 (raw projec"):
// set once; re-wrapped at each resize of the plot. A plot styled by stylePlot().
void setWrappedTitle(QCustomPlot* plot, const QString& title);
// Wraps such a title for `width` pixels now (a figure paints the plot at its own width; the
// next replot wraps it for the widget again).
void wrapTitleTo(QCustomPlot* plot, int width);

// A vertical cursor at `step` (negative hides it).
void setStepCursor(QCustomPlot* plot, double step);

// Text ticks on `axis`, most important first; at each layout a tick whose label would touch a
// kept one's is left out, or with `merge` joins its label to the nearest kept one ("20/30").
void setSpacedTicks(QCPAxis* axis, std::vector<std::pair<double, QString>> ranked, bool merge);
// Tick labels in raw logit units on a symlog histogram axis; ticks closer than a label's
// height to a more important one (0, then the decades, then 3 and 30) are left out, so a
// short heat map does not stack its labels into one block.
void setHistogramTicker(QCPAxis* axis, const HistBins& bins);

// Remove the items a function above added ("threshold", "event", "cursor"), and the legend
// entries addThresholdLine added with them.
void clearItems(QCustomPlot* plot, const QString& role);
// Tags an item drawn elsewhere with a role, so that clearItems() removes it.
void setItemRole(QCPAbstractItem* item, const QString& role);

// Palette for per-layer series.
QColor layerColor(int layer);
// One colour per compared thing (a run in Compare, a configuration of a sweep), the same in
// every plot, legend and table (12 distinct ones).
QColor compareColor(size_t index);

// Short label for an event ("lr x0.5", "qk_norm rms").
QString eventLabel(const EventRecord& e);

}  // namespace qklab::gui
