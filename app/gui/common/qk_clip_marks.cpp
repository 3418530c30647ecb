// qk_clip_marks.cpp — grouping QK-Clip records by step and marking them on a logit plot.
#include "common/qk_clip_marks.h"

#include <qcustomplot.h>

#include <QObject>
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/plot_cursor.h"
#include "common/run_data.h"

namespace qklab::gui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

void QkClipMarks::set(const std::vector<QkClip>& clips, const StepToXFn& x) {
    m_steps = clipSteps(clips);
    if (m_graph) m_graph->data()->clear();
    for (const ClipStep& c : m_steps) draw(c, x);
}

void QkClipMarks::add(const std::vector<QkClip>& clips, const StepToXFn& x) {
    for (const QkClip& c : clips) draw(accumulate(m_steps, c), x);
}

void QkClipMarks::clear() {
    if (m_graph) m_plot->removeGraph(m_graph);
    m_graph = nullptr;
    m_steps.clear();
}

const ClipStep* QkClipMarks::atStep(int64_t step) const {
    auto it = std::lower_bound(m_steps.begin(), m_steps.end(), step,
                               [](const ClipStep& s, int64_t v) { return s.step < v; });
    return it != m_steps.end() && it->step == step ? &*it : nullptr;
}

const ClipStep* QkClipMarks::hit(const QPoint& pos, const StepToXFn& x, double pixels) const {
    if (!m_graph || !m_graph->visible() || m_steps.empty()) return nullptr;
    // Only the marks within `pixels` of the mouse in x: the steps are in x order.
    QCPAxis* keys = m_graph->keyAxis();
    const double a = keys->pixelToCoord(pos.x() - pixels), b = keys->pixelToCoord(pos.x() + pixels);
    const double lo = std::min(a, b), hi = std::max(a, b);
    auto it = std::lower_bound(m_steps.begin(), m_steps.end(), lo,
                               [&](const ClipStep& s, double v) { return x(double(s.step)) < v; });
    for (; it != m_steps.end() && x(double(it->step)) <= hi; ++it) {
        if (!std::isfinite(it->maxSMax)) continue;
        const QPointF px = m_graph->coordsToPixels(x(double(it->step)), it->maxSMax);
        if (QLineF(px, QPointF(pos)).length() <= pixels) return &*it;
    }
    return nullptr;
}

void QkClipMarks::draw(const ClipStep& c, const StepToXFn& x) {
    if (!m_graph) {
        m_graph = m_plot->addGraph();
        m_graph->setName(QObject::tr("QK-Clip (hover)"));
        m_graph->setLineStyle(QCPGraph::lsNone);
        const QColor color(200, 0, 160);
        m_graph->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssTriangleInverted, color, color.lighter(150), 8));
        excludeFromReadout(m_graph);  // the readout says it in words (clipText)
    }
    const double key = x(double(c.step));
    m_graph->data()->remove(key);  // a step marked before: its largest S_max may have grown
    // An infinite S_max has no place on the axis; the readout still names the step.
    if (std::isfinite(c.maxSMax)) m_graph->addData(key, c.maxSMax);
}

}  // namespace qklab::gui
