// qk_clip_marks.cpp — grouping QK-Clip records by step and marking them on a logit plot.
#include "common/qk_clip_marks.h"

#include <qcustomplot.h>

#include <QObject>
#include <QVector>
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/plot_cursor.h"
#include "common/run_data.h"

namespace qklab::gui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const QColor kClipColor(200, 0, 160);

// A NaN never hides a finite value: the largest S_max and smallest factor are the finite ones.
void merge(ClipStep& into, const QkClip& c) {
    ++into.heads;
    if (std::isnan(into.maxSMax) || c.sMax > into.maxSMax) into.maxSMax = c.sMax;
    if (std::isnan(into.minFactor) || c.factor < into.minFactor) into.minFactor = c.factor;
}

// Into `steps` (by step): the trainer reports steps in order, so this is almost always an
// append or a merge into the last one.
ClipStep& accumulate(std::vector<ClipStep>& steps, const QkClip& c) {
    auto it = steps.end();
    if (!steps.empty() && steps.back().step >= c.step)
        it = std::lower_bound(steps.begin(), steps.end(), c.step,
                              [](const ClipStep& s, int64_t step) { return s.step < step; });
    if (it == steps.end() || it->step != c.step) it = steps.insert(it, {c.step, 0, kNaN, kNaN});
    merge(*it, c);
    return *it;
}

}  // namespace

std::vector<ClipStep> clipSteps(const std::vector<QkClip>& clips, int layer) {
    std::vector<ClipStep> out;
    for (const QkClip& c : clips)
        if (layer < 0 || c.layer == layer) accumulate(out, c);
    return out;
}

QString clipText(const ClipStep& c) {
    const QString heads =
        c.heads == 1 ? QObject::tr("1 head") : QObject::tr("%1 heads").arg(c.heads);
    return QObject::tr("QK-Clip: %1, S_max up to %2, factor %3")
        .arg(heads, formatNumber(c.maxSMax), formatNumber(c.minFactor));
}

QString clipHtml(const ClipStep& c) {
    return QObject::tr(
               "<b>QK-Clip after the update of step %1</b><br>%2<br>"
               "Each clipped head's W_q and W_k were scaled by sqrt(tau / S_max), "
               "its logits by tau / S_max (the factor shown is the largest S_max's).")
        .arg(c.step)
        .arg(clipText(c).toHtmlEscaped());
}

QString clipMarkHtml(const ClipMark& m) {
    if (m.steps == 1) return clipHtml(m.summary);
    return QObject::tr(
               "<b>QK-Clip at %1 steps, %2–%3</b><br>%4 head clips (a layer's head scaled after "
               "a step's update), S_max up to %5 at step %6, factor down to %7.<br>"
               "Click to go to step %6; zoom in for one marker per step.")
        .arg(m.steps)
        .arg(m.firstStep)
        .arg(m.lastStep)
        .arg(m.summary.heads)
        .arg(formatNumber(m.summary.maxSMax))
        .arg(m.summary.step)
        .arg(formatNumber(m.summary.minFactor));
}

QkClipMarks::QkClipMarks(QCustomPlot* plot) : m_plot(plot) {
    // Every replot lays the plot out before drawing it: a new x range or size re-buckets the
    // marks in time for that replot.
    m_onLayout = QObject::connect(plot, &QCustomPlot::afterLayout, plot, [this] { relayout(); });
}

QkClipMarks::~QkClipMarks() {
    QObject::disconnect(m_onLayout);
}

void QkClipMarks::set(const std::vector<QkClip>& clips, const StepToXFn& x) {
    m_steps = clipSteps(clips);
    m_x = x;
    if (!m_steps.empty()) ensureGraph();
    m_drawnFor.reset();
    relayout();
}

void QkClipMarks::add(const std::vector<QkClip>& clips, const StepToXFn& x) {
    for (const QkClip& c : clips) accumulate(m_steps, c);
    m_x = x;
    if (!m_steps.empty()) ensureGraph();
    m_drawnFor.reset();
    relayout();
}

void QkClipMarks::clear() {
    if (m_graph) m_plot->removeGraph(m_graph);
    for (QCPItemRect* cell : m_cells) m_plot->removeItem(cell);
    m_graph = nullptr;
    m_cells.clear();
    m_steps.clear();
    m_marks.clear();
    m_aggregated = false;
    m_drawnFor.reset();
}

const ClipStep* QkClipMarks::atStep(int64_t step) const {
    auto it = std::lower_bound(m_steps.begin(), m_steps.end(), step,
                               [](const ClipStep& s, int64_t v) { return s.step < v; });
    return it != m_steps.end() && it->step == step ? &*it : nullptr;
}

const ClipMark* QkClipMarks::hit(const QPoint& pos, double pixels) const {
    if (!m_graph || !m_graph->visible() || m_marks.empty()) return nullptr;
    QCPAxis* keys = m_graph->keyAxis();
    if (m_aggregated) {
        // The strip cell under the mouse, or the nearest within half of `pixels` (a gap).
        const QRect r = keys->axisRect()->rect();
        if (pos.y() < r.bottom() - kClipStripPixels - 3 || pos.y() > r.bottom() + 3) return nullptr;
        const ClipMark* best = nullptr;
        double bestDistance = pixels / 2;
        for (const ClipMark& m : m_marks) {
            const double a = keys->coordToPixel(m.xLo), b = keys->coordToPixel(m.xHi);
            const double d = std::max({0.0, std::min(a, b) - pos.x(), pos.x() - std::max(a, b)});
            if (d <= bestDistance) best = &m, bestDistance = d;
        }
        return best;
    }
    // Only the markers within `pixels` of the mouse in x: the marks are in x order.
    const double a = keys->pixelToCoord(pos.x() - pixels), b = keys->pixelToCoord(pos.x() + pixels);
    const double lo = std::min(a, b), hi = std::max(a, b);
    auto it = std::lower_bound(m_marks.begin(), m_marks.end(), lo,
                               [](const ClipMark& m, double v) { return m.xLo < v; });
    for (; it != m_marks.end() && it->xLo <= hi; ++it) {
        if (!std::isfinite(it->summary.maxSMax)) continue;
        const QPointF px = m_graph->coordsToPixels(it->xLo, it->summary.maxSMax);
        if (QLineF(px, QPointF(pos)).length() <= pixels) return &*it;
    }
    return nullptr;
}

void QkClipMarks::ensureGraph() {
    if (m_graph) return;
    m_graph = m_plot->addGraph();
    m_graph->setLineStyle(QCPGraph::lsNone);
    excludeFromReadout(m_graph);  // the readout says it in words (clipText)
    showModeInLegend();
}

// The legend shows what is drawn: a marker, or a cell of the strip.
void QkClipMarks::showModeInLegend() {
    if (m_aggregated) {
        m_graph->setName(QObject::tr("QK-Clip (strip, hover)"));
        m_graph->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssSquare, kClipColor, kClipColor, 7));
    } else {
        m_graph->setName(QObject::tr("QK-Clip (hover)"));
        m_graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted, kClipColor,
                                                 kClipColor.lighter(150), 8));
    }
}

void QkClipMarks::relayout() {
    if (!m_graph) return;
    QCPAxis* keys = m_graph->keyAxis();
    const Geometry g{keys->range().lower, keys->range().upper, keys->axisRect()->rect(),
                     m_graph->visible()};
    if (m_drawnFor && *m_drawnFor == g) return;
    const bool stepsChanged = !m_drawnFor;
    m_drawnFor = g;
    // The clipped steps in view (x grows with the step), against the buckets that fit.
    const auto first =
        std::lower_bound(m_steps.begin(), m_steps.end(), g.lower,
                         [this](const ClipStep& s, double v) { return m_x(double(s.step)) < v; });
    const auto last =
        std::upper_bound(first, m_steps.end(), g.upper,
                         [this](double v, const ClipStep& s) { return v < m_x(double(s.step)); });
    const bool wasAggregated = m_aggregated;
    m_aggregated = g.rect.width() > 0 && (last - first) * kClipBucketPixels > g.rect.width();
    if (m_aggregated != wasAggregated) showModeInLegend();
    if (m_aggregated)
        markBuckets(g);
    else if (wasAggregated || stepsChanged)
        markEachStep();  // markers do not depend on the range: only when they change
    drawStrip(g);
}

void QkClipMarks::markEachStep() {
    m_marks.clear();
    QVector<QCPGraphData> data;
    for (const ClipStep& c : m_steps) {
        const double key = m_x(double(c.step));
        m_marks.push_back({c, c.step, c.step, 1, key, key});
        // An infinite S_max has no place on the axis; the readout still names the step.
        if (std::isfinite(c.maxSMax)) data.push_back({key, c.maxSMax});
    }
    m_graph->data()->set(data, /*alreadySorted=*/true);
}

// The steps in view, gathered into buckets of kClipBucketPixels (aligned to x = 0, so that
// panning does not move them).
void QkClipMarks::markBuckets(const Geometry& g) {
    m_marks.clear();
    m_graph->data()->clear();
    const double width = (g.upper - g.lower) * kClipBucketPixels / g.rect.width();
    double bucket = kNaN;
    for (const ClipStep& c : m_steps) {
        const double key = m_x(double(c.step));
        if (key < g.lower || key > g.upper) continue;
        if (const double b = std::floor(key / width); b != bucket) {
            bucket = b;
            m_marks.push_back(
                {{c.step, 0, kNaN, kNaN}, c.step, c.step, 0, b * width, (b + 1) * width});
        }
        ClipMark& m = m_marks.back();
        m.lastStep = c.step;
        ++m.steps;
        m.summary.heads += c.heads;
        if (std::isfinite(c.maxSMax) && !(c.maxSMax <= m.summary.maxSMax)) {
            m.summary.maxSMax = c.maxSMax;
            m.summary.step = c.step;  // the step a click selects
        }
        if (std::isnan(m.summary.minFactor) || c.minFactor < m.summary.minFactor)
            m.summary.minFactor = c.minFactor;
    }
}

// One cell per bucket along the bottom of the axis rect, more opaque for more clipped steps;
// cells left over from a denser view are hidden.
void QkClipMarks::drawStrip(const Geometry& g) {
    size_t used = 0;
    if (m_aggregated) {
        int most = 1;
        for (const ClipMark& m : m_marks) most = std::max(most, m.steps);
        const double top = 1.0 - double(kClipStripPixels) / std::max(1, g.rect.height());
        for (const ClipMark& m : m_marks) {
            QCPItemRect* cell = stripCell(used++);
            cell->topLeft->setCoords(m.xLo, top);
            cell->bottomRight->setCoords(m.xHi, 1.0);
            QColor color = kClipColor;
            color.setAlpha(70 + 185 * m.steps / most);
            cell->setBrush(color);
            cell->setVisible(g.visible);
        }
    }
    for (size_t i = used; i < m_cells.size(); ++i) m_cells[i]->setVisible(false);
}

QCPItemRect* QkClipMarks::stripCell(size_t i) {
    if (i < m_cells.size()) return m_cells[i];
    auto* cell = new QCPItemRect(m_plot);
    QCPAxis* keys = m_graph->keyAxis();
    for (QCPItemPosition* p : {cell->topLeft, cell->bottomRight}) {
        p->setAxes(keys, m_graph->valueAxis());
        p->setAxisRect(keys->axisRect());
        p->setTypeX(QCPItemPosition::ptPlotCoords);
        p->setTypeY(QCPItemPosition::ptAxisRectRatio);
    }
    cell->setClipAxisRect(keys->axisRect());
    cell->setPen(Qt::NoPen);
    cell->setSelectable(false);
    m_cells.push_back(cell);
    return cell;
}

}  // namespace qklab::gui
