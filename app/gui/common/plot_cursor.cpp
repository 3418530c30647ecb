// plot_cursor.cpp — the shared hover line and the values under it.
#include "common/plot_cursor.h"

#include <qcustomplot.h>

#include <QEvent>
#include <QToolTip>
#include <cmath>
#include <limits>

namespace qklab::gui {
namespace {

const char* const kHoverRole = "hoverLine";
const char* const kNoReadout = "noReadout";

QString valueText(double v) {
    const double a = std::fabs(v);
    if (a != 0 && (a < 1e-3 || a >= 1e5)) return QString::number(v, 'e', 3);
    return QString::number(v, 'g', 5);
}

}  // namespace

HoverCursor::HoverCursor(QObject* parent)
    : QObject(parent), m_x(std::numeric_limits<double>::quiet_NaN()) {}

void HoverCursor::addPlot(QCustomPlot* plot) {
    m_plots << plot;
    plot->setMouseTracking(true);
    plot->installEventFilter(this);
    // The line exists (hidden) from the start: making it on the first hover of 11 plots took
    // 19 ms, over a frame (compare_bench).
    // No layer replot here: a plot never replotted has no paint buffer yet (QCustomPlot warns).
    drawLine(plot, std::numeric_limits<double>::quiet_NaN(), /*repaint=*/false);
}

void HoverCursor::drawLine(QCustomPlot* plot, double x, bool repaint) {
    QCPItemStraightLine* line = nullptr;
    for (int i = 0; i < plot->itemCount(); ++i)
        if (plot->item(i)->property(kHoverRole).toBool())
            line = static_cast<QCPItemStraightLine*>(plot->item(i));
    if (!line) {
        line = new QCPItemStraightLine(plot);
        line->setProperty(kHoverRole, true);
        line->setLayer(QStringLiteral("overlay"));
        line->setSelectable(false);
        line->point1->setTypeY(QCPItemPosition::ptAxisRectRatio);
        line->point2->setTypeY(QCPItemPosition::ptAxisRectRatio);
        line->setPen(QPen(QColor(120, 120, 120, 170), 1.0));
    }
    line->setVisible(std::isfinite(x));
    if (std::isfinite(x)) {
        line->point1->setCoords(x, 0);
        line->point2->setCoords(x, 1);
    }
    if (repaint) plot->layer(QStringLiteral("overlay"))->replot();
}

void HoverCursor::hover(QCustomPlot* plot, const QPoint& pos) {
    if (!plot->axisRect()->rect().contains(pos)) {
        hide();
        return;
    }
    m_x = plot->xAxis->pixelToCoord(pos.x());
    for (QCustomPlot* p : m_plots) drawLine(p, m_x);
    m_text = m_readout ? m_readout(plot, m_x) : QString();
    if (m_text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(plot->mapToGlobal(pos + QPoint(14, 10)), m_text, plot);
}

void HoverCursor::hide() {
    if (!std::isfinite(m_x)) return;
    m_x = std::numeric_limits<double>::quiet_NaN();
    m_text.clear();
    for (QCustomPlot* p : m_plots) drawLine(p, m_x);
    QToolTip::hideText();
}

bool HoverCursor::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::Leave && m_plots.contains(static_cast<QCustomPlot*>(watched)))
        hide();
    return QObject::eventFilter(watched, event);
}

void excludeFromReadout(QCPGraph* graph) {
    graph->setProperty(kNoReadout, true);
}

QStringList curveValuesAt(QCustomPlot* plot, double x, const KeyLabel& keyLabel) {
    QStringList lines;
    for (int i = 0; i < plot->graphCount(); ++i) {
        QCPGraph* g = plot->graph(i);
        if (!g->visible() || g->name().isEmpty() || g->property(kNoReadout).toBool() ||
            g->data()->isEmpty())
            continue;
        // The nearest point on either side of x.
        auto it = g->data()->findBegin(x, false);
        if (it == g->data()->constEnd()) --it;
        if (it != g->data()->constBegin()) {
            auto before = it - 1;
            if (std::fabs(before->key - x) < std::fabs(it->key - x)) it = before;
        }
        if (!std::isfinite(it->value)) continue;
        QString line =
            QStringLiteral("<span style='color:%1'>■</span> %2: <b>%3</b>")
                .arg(g->pen().color().name(), g->name().toHtmlEscaped(), valueText(it->value));
        const QString at = keyLabel ? keyLabel(g, it->key) : QString();
        const QString here = keyLabel ? keyLabel(g, x) : QString();
        if (!at.isEmpty() && at != here) line += QStringLiteral(" (%1)").arg(at);
        lines << line;
    }
    return lines;
}

}  // namespace qklab::gui
