// sweep_plots.cpp — drawing a sweep report's LR curves.
#include "sweeps/sweep_plots.h"

#include <qcustomplot.h>

#include <QHBoxLayout>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "common/plot_export.h"
#include "common/plot_style.h"
#include "qklab/analysis/spikes.h"

namespace qklab::gui {

namespace {

const char* const kConfigIndex = "sweepConfig";  // which configuration a graph draws

QString number3(double v) {
    return QString::number(v, 'g', 3);
}

}  // namespace

QString lrText(double lr) {
    if (!(lr > 0) || lr >= 0.01) return QString::number(lr, 'g', 2);
    const int exponent = int(std::floor(std::log10(lr)));
    const double mantissa = lr / std::pow(10.0, exponent);
    return QString::number(mantissa, 'g', 2) + QStringLiteral("e") + QString::number(exponent);
}

namespace {

QCPGraph* addGraph(QCustomPlot* plot, const QColor& color, QCPScatterStyle::ScatterShape shape,
                   double size, bool line) {
    QCPGraph* g = plot->addGraph();
    g->setPen(QPen(color, line ? 2.0 : 2.5));
    g->setLineStyle(line ? QCPGraph::lsLine : QCPGraph::lsNone);
    g->setScatterStyle(
        QCPScatterStyle(shape, QPen(color, 2.0), line ? QBrush(color) : QBrush(), size));
    return g;
}

// The nearest drawn point of a configuration's mean curve to `pos`, within 14 pixels.
QString pointTip(QCustomPlot* plot, const SweepReport& report, const QPoint& pos, bool logit) {
    double best = 14 * 14;
    QString tip;
    for (int i = 0; i < plot->graphCount(); ++i) {
        QCPGraph* g = plot->graph(i);
        const QVariant k = g->property(kConfigIndex);
        if (!k.isValid() || k.toULongLong() >= report.configurations.size()) continue;
        const SweepConfiguration& c = report.configurations[k.toULongLong()];
        for (const LrCurve::Point& p : c.curve.points) {
            const double y = logit ? p.peakRawLogit.value_or(std::nan("")) : p.mean;
            if (!std::isfinite(y) || y <= 0) continue;
            const double dx = g->keyAxis()->coordToPixel(p.lr) - pos.x();
            const double dy = g->valueAxis()->coordToPixel(y) - pos.y();
            if (dx * dx + dy * dy >= best) continue;
            best = dx * dx + dy * dy;
            tip = QObject::tr(
                      "<b>%1</b><br>LR %2: loss %3 [%4, %5] over %6 seed(s), %7 diverged, "
                      "%8 pending<br>peak raw max logit %9")
                      .arg(SweepPlots::shortLabel(c).toHtmlEscaped(), lrText(p.lr))
                      .arg(p.mean, 0, 'f', 4)
                      .arg(p.min, 0, 'f', 4)
                      .arg(p.max, 0, 'f', 4)
                      .arg(p.seeds)
                      .arg(p.diverged)
                      .arg(p.pending)
                      .arg(p.peakRawLogit ? number3(*p.peakRawLogit) : QStringLiteral("–"));
        }
    }
    return tip;
}

}  // namespace

SweepPlots::SweepPlots(QWidget* parent) : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    m_loss = makePlot(tr("LR sensitivity: final loss vs learning rate"), tr("final loss"), false);
    m_lossTitle = qobject_cast<QCPTextElement*>(m_loss->plotLayout()->element(0, 0));
    m_logit = makePlot(tr("Peak raw max logit vs learning rate"), tr("peak raw max logit"), true);
    layout->addWidget(m_loss, 3);
    layout->addWidget(m_logit, 2);
}

QCustomPlot* SweepPlots::makePlot(const QString& title, const QString& yLabel, bool logY) {
    auto* plot = new QCustomPlot(this);
    stylePlot(plot, yLabel, /*legend=*/true);
    plot->plotLayout()->insertRow(0);
    QFont f = font();
    f.setBold(true);
    f.setPointSizeF(std::max(7.0, f.pointSizeF() - 1));
    plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title, f));
    placeLegendOutside(plot, 2);
    setLogAxis(plot->xAxis, true);
    plot->xAxis->setLabel(tr("learning rate (log scale)"));
    if (logY) setLogAxis(plot->yAxis, true);
    installExportMenu(plot);
    // The user's own view: a wheel zoom or a drag (iRangeZoom, iRangeDrag) keeps it; a
    // double-click gives the fitted view back.
    connect(plot, &QCustomPlot::mouseWheel, this, [this, plot] { m_userView.insert(plot); });
    connect(plot, &QCustomPlot::mousePress, this,
            [this, plot](QMouseEvent* e) { m_pressAt = e->pos(); });
    connect(plot, &QCustomPlot::mouseRelease, this, [this, plot](QMouseEvent* e) {
        if ((e->pos() - m_pressAt).manhattanLength() > 4) m_userView.insert(plot);
    });
    connect(plot, &QCustomPlot::mouseDoubleClick, this, [this, plot] {
        m_userView.remove(plot);
        fitRanges(m_report);
        plot->replot();
    });
    connect(plot, &QCustomPlot::mouseMove, this, [this, plot](QMouseEvent* e) {
        if (m_graphs.empty()) return;
        const QString tip = pointTip(plot, m_report, e->pos(), plot == m_logit);
        if (tip.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(e->globalPosition().toPoint(), tip, plot);
    });
    return plot;
}

QString SweepPlots::shortLabel(const SweepConfiguration& c) {
    if (c.fixed.empty()) return QString::fromStdString(c.label);
    QStringList parts;
    for (const auto& item : c.fixed.items()) {
        const QString key = QString::fromStdString(item.key()).section(QLatin1Char('.'), -1);
        const nlohmann::json& v = item.value();
        parts << key + QLatin1Char('=') +
                     (v.is_string() ? QString::fromStdString(v.get<std::string>())
                                    : QString::fromStdString(v.dump()));
    }
    return parts.join(QLatin1Char(' '));
}

QString SweepPlots::legendText(const SweepConfiguration& c) {
    if (c.curve.points.empty()) return tr("%1 · no results yet").arg(shortLabel(c));
    return tr("%1 · sensitivity %2 · max stable LR %3")
        .arg(shortLabel(c), number3(c.curve.sensitivity),
             QString::fromStdString(maxStableLrText(c.curve, 3)));
}

void SweepPlots::clear() {
    m_report = SweepReport();
    for (QCustomPlot* plot : {m_loss, m_logit}) {
        plot->clearGraphs();
        plot->clearPlottables();
        clearItems(plot, QStringLiteral("threshold"));
        clearItems(plot, QStringLiteral("stable"));
        plot->replot();
    }
    m_graphs.clear();
}

void SweepPlots::setReport(const SweepReport& report, bool validation) {
    // The same sweep, refreshed while it runs, keeps the view the user zoomed to; another
    // sweep gets its own fitted view.
    if (report.sweep.id != m_report.sweep.id) m_userView.clear();
    clear();
    m_report = report;  // what the tooltips read
    m_loss->yAxis->setLabel(validation ? tr("final validation loss") : tr("final training loss"));
    m_graphs.resize(report.configurations.size());
    bool anyDiverged = false;
    for (size_t k = 0; k < report.configurations.size(); ++k) {
        drawConfiguration(k, report.configurations[k], report.initialLoss);
        anyDiverged = anyDiverged || m_graphs[k].diverged->dataCount() > 0;
    }
    if (anyDiverged) {  // one legend entry explains every curve's crosses
        QCPGraph* key =
            addGraph(m_loss, QColor(110, 110, 110), QCPScatterStyle::ssCross, 10, false);
        key->setName(tr("diverged seed(s): drawn at the loss at init"));
    }
    addThresholdLine(m_loss, report.initialLoss, QColor(120, 120, 120),
                     tr("loss at init %1").arg(report.initialLoss, 0, 'f', 3));
    addThresholdLine(m_logit, kHealthyMaxLogit, QColor(230, 150, 0),
                     tr("healthy max < %1").arg(kHealthyMaxLogit));
    addThresholdLine(m_logit, kInterveneMaxLogit, QColor(200, 0, 0),
                     tr("intervene > %1").arg(kInterveneMaxLogit));
    m_logit->legend->setVisible(!report.configurations.empty());
    fitRanges(report);
    for (QCustomPlot* plot : {m_loss, m_logit}) {
        fitLegendColumns(plot);
        plot->replot();
    }
}

void SweepPlots::drawConfiguration(size_t k, const SweepConfiguration& c, double initialLoss) {
    const QColor color = compareColor(k);
    QVector<double> x, y, minus, plus, dx, dy, lx, ly;
    for (const LrCurve::Point& p : c.curve.points) {
        x << p.lr;
        y << p.mean;
        minus << p.mean - p.min;
        plus << p.max - p.mean;
        if (p.diverged > 0) {
            dx << p.lr;
            dy << initialLoss;
        }
        if (p.peakRawLogit && *p.peakRawLogit > 0) {
            lx << p.lr;
            ly << *p.peakRawLogit;
        }
    }
    Graphs& g = m_graphs[k];
    g.mean = addGraph(m_loss, color, QCPScatterStyle::ssCircle, 6, true);
    g.mean->setName(legendText(c));
    g.mean->setData(x, y, true);
    g.range = new QCPErrorBars(m_loss->xAxis, m_loss->yAxis);
    g.range->removeFromLegend();
    g.range->setDataPlottable(g.mean);
    g.range->setData(minus, plus);
    g.range->setPen(QPen(color, 1.5));
    g.range->setWhiskerWidth(8);
    g.diverged = addGraph(m_loss, color, QCPScatterStyle::ssCross, 13, false);
    g.diverged->setData(dx, dy, true);
    g.diverged->removeFromLegend();
    g.logit = addGraph(m_logit, color, QCPScatterStyle::ssCircle, 6, true);
    g.logit->setName(shortLabel(c));
    g.logit->setData(lx, ly, true);
    for (QCPGraph* graph : {g.mean, g.logit}) graph->setProperty(kConfigIndex, qulonglong(k));
    if (c.curve.maxStableLr) {
        auto* line = new QCPItemStraightLine(m_loss);
        setItemRole(line, QStringLiteral("stable"));
        line->point1->setCoords(*c.curve.maxStableLr, 0);
        line->point2->setCoords(*c.curve.maxStableLr, 1);
        line->setPen(QPen(color, 1.2, Qt::DashLine));
        line->setSelectable(false);
    }
}

void SweepPlots::fitRanges(const SweepReport& report) {
    double lrLo = INFINITY, lrHi = 0, lossLo = report.initialLoss, lossHi = report.initialLoss;
    double logitLo = INFINITY, logitHi = kInterveneMaxLogit;
    for (const SweepConfiguration& c : report.configurations)
        for (const LrCurve::Point& p : c.curve.points) {
            lrLo = std::min(lrLo, p.lr);
            lrHi = std::max(lrHi, p.lr);
            lossLo = std::min(lossLo, p.min);
            lossHi = std::max(lossHi, p.max);
            if (p.peakRawLogit && *p.peakRawLogit > 0) {
                logitLo = std::min(logitLo, *p.peakRawLogit);
                logitHi = std::max(logitHi, *p.peakRawLogit);
            }
        }
    if (lrHi <= 0) {
        lrLo = 1e-4;
        lrHi = 1;
    }
    if (!std::isfinite(logitLo)) logitLo = 1;
    // The loss at init is the top when a point reaches it (a diverged seed is drawn there);
    // otherwise it would squash the curves into the bottom of the plot, and the title says it.
    bool anyDiverged = false;
    for (const Graphs& g : m_graphs) anyDiverged = anyDiverged || g.diverged->dataCount() > 0;
    if (!anyDiverged) {
        double top = lossLo;
        for (const SweepConfiguration& c : report.configurations)
            for (const LrCurve::Point& p : c.curve.points) top = std::max(top, p.max);
        lossHi = top > 0.6 * report.initialLoss ? std::max(top, report.initialLoss) : top;
    }
    m_lossTitle->setText(lossHi < report.initialLoss
                             ? tr("LR sensitivity: final loss vs LR (loss at init %1: above)")
                                   .arg(report.initialLoss, 0, 'f', 2)
                             : tr("LR sensitivity: final loss vs learning rate"));
    const double pad = std::max(0.05, 0.06 * (lossHi - lossLo));
    // A plot the user zoomed or dragged keeps its view while a running sweep refreshes it;
    // a double-click fits it again.
    if (!m_userView.contains(m_loss)) {
        m_loss->xAxis->setRange(lrLo / 1.6, lrHi * 1.6);
        m_loss->yAxis->setRange(lossLo - pad, lossHi + pad);
    }
    if (!m_userView.contains(m_logit)) {
        m_logit->xAxis->setRange(lrLo / 1.6, lrHi * 1.6);
        m_logit->yAxis->setRange(std::min(logitLo, kHealthyMaxLogit) / 1.6, logitHi * 1.6);
    }
}

void SweepPlots::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    for (QCustomPlot* plot : {m_loss, m_logit}) {
        fitLegendColumns(plot);
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

QCPGraph* SweepPlots::meanGraph(size_t k) const {
    return k < m_graphs.size() ? m_graphs[k].mean : nullptr;
}
QCPGraph* SweepPlots::divergedGraph(size_t k) const {
    return k < m_graphs.size() ? m_graphs[k].diverged : nullptr;
}
QCPGraph* SweepPlots::logitGraph(size_t k) const {
    return k < m_graphs.size() ? m_graphs[k].logit : nullptr;
}
QCPErrorBars* SweepPlots::rangeBars(size_t k) const {
    return k < m_graphs.size() ? m_graphs[k].range : nullptr;
}

}  // namespace qklab::gui
