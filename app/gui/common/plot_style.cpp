// plot_style.cpp — shared plot look and the items drawn over data (thresholds, markers, cursor).
#include "common/plot_style.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QEvent>
#include <algorithm>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>

#include "common/hist_bins.h"
#include "common/theme.h"

namespace qklab::gui {

namespace {
const char* kRole = "qklabRole";

void removeItemsWithRole(QCustomPlot* plot, const QString& role) {
    for (int i = plot->itemCount() - 1; i >= 0; --i) {
        QCPAbstractItem* item = plot->item(i);
        if (item->property(kRole).toString() == role) plot->removeItem(item);
    }
    QCPLegend* legend = plot->legend;  // null in a plot that removed its legend
    for (int i = legend ? legend->itemCount() - 1 : -1; i >= 0; --i)
        if (QCPAbstractLegendItem* entry = legend->item(i);
            entry && entry->property(kRole).toString() == role)
            legend->removeItem(i);  // and re-flows the rest: no empty cell
}

// A threshold's legend entry: a piece of its dashed line, then its name. Fonts and text colour
// are the legend's (presenter mode and the theme set them on every entry).
class ThresholdLegendItem : public QCPAbstractLegendItem {
  public:
    ThresholdLegendItem(QCPLegend* legend, const QPen& pen, const QString& text)
        : QCPAbstractLegendItem(legend), m_pen(pen), m_text(text) {
        setProperty(kRole, QStringLiteral("threshold"));
        setFont(legend->font());
        setTextColor(legend->textColor());
        setSelectable(false);
    }

  protected:
    void draw(QCPPainter* painter) override {
        const QSize icon = mParentLegend->iconSize();
        const double y = mRect.top() + mRect.height() / 2.0;
        QPen pen = m_pen;
        pen.setWidthF(std::max(1.5, pen.widthF()));
        painter->setPen(pen);
        painter->drawLine(QLineF(mRect.left(), y, mRect.left() + icon.width(), y));
        painter->setFont(mFont);
        painter->setPen(QPen(mTextColor));
        const int textLeft = mRect.left() + icon.width() + mParentLegend->iconTextPadding();
        painter->drawText(QRect(textLeft, mRect.top(), mRect.right() - textLeft, mRect.height()),
                          Qt::AlignLeft | Qt::AlignVCenter, m_text);
    }
    QSize minimumOuterSizeHint() const override {
        const QFontMetrics fm(mFont);
        const QSize icon = mParentLegend->iconSize();
        return QSize(icon.width() + mParentLegend->iconTextPadding() +
                         fm.horizontalAdvance(m_text) + mMargins.left() + mMargins.right(),
                     std::max(icon.height(), fm.height()) + mMargins.top() + mMargins.bottom());
    }

  private:
    QPen m_pen;
    QString m_text;
};

const char* kWrapTitle = "qklabWrapTitle";

// The title's words in as many lines as `width` (the plot's own when negative) needs; a word
// longer than the width keeps a line of its own.
void wrapTitle(QCustomPlot* plot, int width = -1) {
    if (plot->plotLayout()->rowCount() < 1) return;
    auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0));
    if (!title || !title->property(kWrapTitle).isValid()) return;
    const QFontMetrics fm(title->font());
    width = std::max(40, (width < 0 ? plot->width() : width) - 8);
    QStringList lines;
    for (const QString& paragraph :
         title->property(kWrapTitle).toString().split(QLatin1Char('\n'))) {
        QString line;
        for (const QString& word : paragraph.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
            if (!line.isEmpty() && fm.horizontalAdvance(longer) > width) {
                lines << line;
                line = word;
            } else {
                line = longer;
            }
        }
        lines << line;
    }
    const QString text = lines.join(QLatin1Char('\n'));
    if (title->text() != text) title->setText(text);
}
// As many x ticks as the axis has room for: QCPAxisTicker asks for about five whatever the
// width, and a narrow plot (compare's small multiples, a projector) ran them together
// ("0 25 5075100125"). Log and text tickers keep their own rules.
class TickFitter : public QObject {
  public:
    using QObject::QObject;
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == QEvent::Resize)
            if (auto* plot = qobject_cast<QCustomPlot*>(watched)) fit(plot);
        return false;
    }
    static void fit(QCustomPlot* plot) {
        const QSharedPointer<QCPAxisTicker> ticker = plot->xAxis->ticker();
        if (!ticker || ticker.dynamicCast<QCPAxisTickerLog>() ||
            ticker.dynamicCast<QCPAxisTickerText>())
            return;
        const int labelWidth =
            QFontMetrics(plot->xAxis->tickLabelFont()).horizontalAdvance(QStringLiteral("00000")) +
            12;
        ticker->setTickCount(std::clamp(plot->width() / std::max(1, labelWidth) - 1, 2, 8));
    }
};

}  // namespace

void setItemRole(QCPAbstractItem* item, const QString& role) {
    item->setProperty(kRole, role);
}

void clearItems(QCustomPlot* plot, const QString& role) {
    removeItemsWithRole(plot, role);
}

void stylePlot(QCustomPlot* plot, const QString& yLabel, bool legend, Qt::Alignment legendAt) {
    QFont small = plot->font();
    small.setPointSizeF(std::max(7.0, small.pointSizeF() - 1));
    plot->setNoAntialiasingOnDrag(true);
    plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot->axisRect()->setRangeDrag(Qt::Horizontal);
    plot->axisRect()->setRangeZoom(Qt::Horizontal);
    plot->yAxis->setLabel(yLabel);
    plot->yAxis->setLabelFont(small);
    plot->xAxis->setLabelFont(small);
    plot->xAxis->setTickLabelFont(small);
    plot->yAxis->setTickLabelFont(small);
    plot->axisRect()->setMinimumMargins(QMargins(60, 4, 8, 4));
    plot->legend->setVisible(legend);
    plot->legend->setFont(small);
    plot->legend->setBrush(QColor(255, 255, 255, 200));
    plot->legend->setRowSpacing(-3);
    plot->axisRect()->insetLayout()->setInsetAlignment(0, legendAt);
    // An explicit minimum: QCustomPlot's own hint is its widest title or legend row, and two
    // columns of those made the window wider than a 1280x720 screen. Titles clip instead;
    // legends re-flow to fewer entries per row (fitLegendColumns).
    plot->setMinimumSize(200, 120);
    static auto* fitter = new TickFitter(qApp);
    plot->installEventFilter(fitter);
    themePlot(plot);  // born in the current theme
}

namespace {

// Ticks a reader can name on a log axis: the decades (0.001, 0.01, 0.1), and 1-2-5 inside
// them when the range spans under 2.5 decades. QCPAxisTickerLog put ticks at 10^(k/2) on
// short ranges: an LR axis read 0.001, 0.0032, 0.01, 0.032.
class DecadeTicker : public QCPAxisTickerLog {
  protected:
    QVector<double> createTickVector(double, const QCPRange& range) override {
        QVector<double> ticks;
        if (!(range.lower > 0) || !(range.upper > range.lower)) return ticks;
        const int lo = int(std::floor(std::log10(range.lower)));
        const int hi = int(std::ceil(std::log10(range.upper)));
        m_fine = std::log10(range.upper / range.lower) < 2.5;
        // At most about eight decades labelled: a 1e-8..1e8 axis labels every other one.
        const int every = std::max(1, (hi - lo + 7) / 8);
        static const double kFine[] = {1, 2, 5};
        const int mantissas = m_fine ? 3 : 1;
        for (int e = lo; e <= hi; ++e) {
            if (!m_fine && (e - lo) % every != 0) continue;
            for (int i = 0; i < mantissas; ++i) ticks << kFine[i] * std::pow(10.0, e);
        }
        return ticks;
    }
    QVector<double> createSubTickVector(int, const QVector<double>& ticks) override {
        QVector<double> sub;
        if (m_fine) return sub;  // 1-2-5 is dense enough
        for (double t : ticks)
            for (int m = 2; m <= 9; ++m) sub << t * m;
        return sub;
    }

  private:
    bool m_fine = false;
};

}  // namespace

void setLogAxis(QCPAxis* axis, bool log) {
    if (log) {
        axis->setScaleType(QCPAxis::stLogarithmic);
        QSharedPointer<QCPAxisTickerLog> ticker(new DecadeTicker);
        ticker->setLogBase(10);
        axis->setTicker(ticker);
        ticker->setSubTickCount(8);
        // "gb": 0.1, 1, 10, 100, 1e+03 — readable without superscripts at small font sizes.
        axis->setNumberFormat(QStringLiteral("g"));
        axis->setNumberPrecision(3);
    } else {
        axis->setScaleType(QCPAxis::stLinear);
        axis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        axis->setNumberFormat(QStringLiteral("gb"));
        axis->setNumberPrecision(4);
    }
}

void addThresholdLine(QCustomPlot* plot, double y, const QColor& color, const QString& label) {
    auto* line = new QCPItemStraightLine(plot);
    line->setProperty(kRole, QStringLiteral("threshold"));
    line->point1->setCoords(0, y);
    line->point2->setCoords(1, y);
    const QPen pen(color, 1.2, Qt::DashLine);
    line->setPen(pen);
    line->setSelectable(false);
    if (label.isEmpty() || !plot->legend) return;
    // First in the legend, before the series: what the lines mean is read once, then the data.
    auto* entry = new ThresholdLegendItem(plot->legend, pen, label);
    plot->legend->addItem(entry);
    plot->legend->setVisible(true);
}

namespace {

// Each data point of a graph or curve within its axes' ranges, in the plot's pixels.
template <typename Visit>
void forEachShownPoint(QCPAbstractPlottable* p, Visit visit) {
    const QCPRange keys = p->keyAxis()->range(), values = p->valueAxis()->range();
    auto at = [&](double k, double v) {
        if (!std::isfinite(k) || !std::isfinite(v) || !keys.contains(k) || !values.contains(v))
            return;
        double x = 0, y = 0;
        p->coordsToPixels(k, v, x, y);
        visit(QPointF(x, y));
    };
    if (auto* g = qobject_cast<QCPGraph*>(p))
        for (const QCPGraphData& d : *g->data()) at(d.key, d.value);
    if (auto* c = qobject_cast<QCPCurve*>(p))
        for (const QCPCurveData& d : *c->data()) at(d.key, d.value);
}

}  // namespace

QList<QRectF> labelBoxesCoveringData(QCustomPlot* plot) {
    QList<QRectF> boxes;
    for (int i = 0; i < plot->itemCount(); ++i) {
        auto* text = qobject_cast<QCPItemText*>(plot->item(i));
        if (text && text->visible() && text->brush().style() != Qt::NoBrush &&
            text->brush().color().alpha() > 0)
            boxes << QRectF(text->topLeft->pixelPosition(), text->bottomRight->pixelPosition())
                         .normalized();
    }
    if (plot->legend && plot->legend->visible() &&
        plot->legend->layout() == plot->axisRect()->insetLayout())
        boxes << QRectF(plot->legend->outerRect());
    QList<QRectF> covering;
    for (const QRectF& box : boxes) {
        bool covers = false;
        for (int i = 0; i < plot->plottableCount() && !covers; ++i)
            if (plot->plottable(i)->visible())
                forEachShownPoint(plot->plottable(i),
                                  [&](const QPointF& pt) { covers = covers || box.contains(pt); });
        if (covers) covering << box;
    }
    return covering;
}

void wrapTitleTo(QCustomPlot* plot, int width) {
    wrapTitle(plot, width);
}

void setWrappedTitle(QCustomPlot* plot, const QString& title) {
    if (plot->plotLayout()->rowCount() < 1) return;
    auto* element = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0));
    if (!element) return;
    if (!element->property(kWrapTitle).isValid())  // once: before the layout of every replot
        QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot] { wrapTitle(plot); });
    element->setProperty(kWrapTitle, title);
    element->setText(title);
    wrapTitle(plot);
}

QString eventLabel(const EventRecord& e) {
    return QString::fromStdString(
        qklab::eventLabel(e.kind, e.paramsJson.empty() ? "{}" : e.paramsJson));
}

QString changeReportLabel(const ChangeReport& r) {
    // Against what the trend before led to expect: a falling loss falls after any change.
    const double shift = r.lossAfter - r.lossExpected;
    if (!std::isfinite(shift)) return {};
    return QStringLiteral("loss %1%2 vs trend").arg(shift >= 0 ? "+" : "").arg(shift, 0, 'g', 2);
}

namespace {

// The report of event e, if one was made.
const ChangeReport* reportOf(const std::vector<ChangeReport>& reports, const EventRecord& e) {
    for (const ChangeReport& r : reports)
        if (r.step == e.step && r.kind == e.kind) return &r;
    return nullptr;
}

const char* kTip = "qklabTip";

}  // namespace

QString eventTipAt(QCustomPlot* plot, const QPointF& pos) {
    for (int i = plot->itemCount() - 1; i >= 0; --i) {
        QCPAbstractItem* item = plot->item(i);
        const QString tip = item->property(kTip).toString();
        if (!tip.isEmpty() && item->selectTest(pos, false) >= 0 &&
            item->selectTest(pos, false) <= 4)
            return tip;
    }
    return {};
}

void setEventMarkers(QCustomPlot* plot, const std::vector<EventRecord>& events, int64_t totalSteps,
                     const std::function<double(double)>& toX,
                     const std::vector<ChangeReport>& reports) {
    removeItemsWithRole(plot, QStringLiteral("event"));
    QFont f = plot->font();
    f.setPointSizeF(std::max(6.5, f.pointSizeF() - 2));
    int lane = 0;
    for (const auto& e : events) {
        // The user's interventions in magenta, the run's skip-step policy in orange, the
        // config's own events in grey.
        const bool user = e.source == "user";
        const QColor color = user                   ? QColor(200, 40, 160)
                             : e.source == "policy" ? QColor(215, 110, 0)
                                                    : QColor(120, 120, 120);
        auto* line = new QCPItemStraightLine(plot);
        line->setProperty(kRole, QStringLiteral("event"));
        const double x = toX ? toX(double(e.step)) : double(e.step);
        line->point1->setCoords(x, 0);
        line->point2->setCoords(x, 1);
        line->point1->setTypeY(QCPItemPosition::ptAxisRectRatio);
        line->point2->setTypeY(QCPItemPosition::ptAxisRectRatio);
        line->setPen(QPen(color, user ? 1.5 : 1.0, Qt::DashDotLine));
        line->setSelectable(false);
        auto* text = new QCPItemText(plot);
        text->setProperty(kRole, QStringLiteral("event"));
        text->position->setTypeX(QCPItemPosition::ptPlotCoords);
        text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        const bool nearEnd = totalSteps > 0 && e.step > totalSteps * 0.8;
        text->setPositionAlignment((nearEnd ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignTop);
        QString label = eventLabel(e);
        if (const ChangeReport* r = reportOf(reports, e)) {
            const QString tip = QStringLiteral("<b>%1</b> (step %2)<br>%3")
                                    .arg(label.toHtmlEscaped())
                                    .arg(e.step)
                                    .arg(QString::fromStdString(r->text).toHtmlEscaped());
            line->setProperty(kTip, tip);
            text->setProperty(kTip, tip);
            label += QStringLiteral("\n") + changeReportLabel(*r);  // a second line: narrow
        }
        // Stagger labels vertically so markers a few steps apart stay readable; a label with
        // its change report takes two lanes (a skip right after a dirty batch overlapped it).
        text->position->setCoords(x, 0.02 + 0.12 * (lane % 3));
        lane += label.contains(QLatin1Char('\n')) ? 2 : 1;
        text->setText(nearEnd ? label + QStringLiteral(" ") : QStringLiteral(" ") + label);
        text->setColor(color);
        text->setFont(f);
        text->setSelectable(false);
    }
}

void setStepCursor(QCustomPlot* plot, double step) {
    removeItemsWithRole(plot, QStringLiteral("cursor"));
    if (step < 0) return;
    auto* line = new QCPItemStraightLine(plot);
    line->setProperty(kRole, QStringLiteral("cursor"));
    line->point1->setTypeY(QCPItemPosition::ptAxisRectRatio);
    line->point2->setTypeY(QCPItemPosition::ptAxisRectRatio);
    line->point1->setCoords(step, 0);
    line->point2->setCoords(step, 1);
    line->setPen(QPen(QColor(230, 120, 0), 1.5));
    line->setSelectable(false);
}

namespace {

// A text ticker that leaves out a tick whose label would touch a more important one's, as laid
// out on its axis now (at each replot, after a resize too). Ticks are given most important
// first. With `merge`, a tick left out adds its label to the nearest kept one's ("20/30").
class SpacedTextTicker : public QCPAxisTickerText {
  public:
    SpacedTextTicker(QCPAxis* axis, std::vector<std::pair<double, QString>> ticks, bool merge)
        : m_axis(axis), m_ranked(std::move(ticks)), m_merge(merge) {}

  protected:
    QVector<double> createTickVector(double, const QCPRange& range) override {
        // Labels stack on a vertical axis and stand side by side on a horizontal one.
        const QFontMetrics fm(m_axis->tickLabelFont());
        double gap = fm.height() + 2;
        if (m_axis->orientation() == Qt::Horizontal)
            for (const auto& [x, label] : m_ranked)
                gap = std::max(gap, fm.horizontalAdvance(label) + 8.0);
        QVector<double> ticks, pixels;  // kept so far, and where
        m_shown.clear();
        for (const auto& [x, label] : m_ranked) {
            if (!range.contains(x)) continue;
            const double px = m_axis->coordToPixel(x);
            int nearest = -1;
            for (int k = 0; k < pixels.size(); ++k)
                if (std::fabs(px - pixels[k]) < gap &&
                    (nearest < 0 || std::fabs(px - pixels[k]) < std::fabs(px - pixels[nearest])))
                    nearest = k;
            if (nearest >= 0) {
                if (m_merge) m_shown[ticks[nearest]] += QLatin1Char('/') + label;
                continue;
            }
            pixels << px;
            ticks << x;
            m_shown[x] = label;
        }
        std::sort(ticks.begin(), ticks.end());
        return ticks;
    }
    QVector<QString> createLabelVector(const QVector<double>& ticks, const QLocale&, QChar,
                                       int) override {
        QVector<QString> labels;
        for (double t : ticks) labels << m_shown.value(t);
        return labels;
    }

  private:
    QCPAxis* m_axis;  // owns this ticker (through its shared pointer)
    std::vector<std::pair<double, QString>> m_ranked;
    bool m_merge;
    QMap<double, QString> m_shown;  // the labels of the ticks kept at the last layout
};

}  // namespace

void setSpacedTicks(QCPAxis* axis, std::vector<std::pair<double, QString>> ranked, bool merge) {
    axis->setTicker(
        QSharedPointer<QCPAxisTickerText>(new SpacedTextTicker(axis, std::move(ranked), merge)));
}

void setHistogramTicker(QCPAxis* axis, const HistBins& bins) {
    if (!bins.symlog) {
        axis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        return;
    }
    // Most important first: 0, the decades outward, then 3 and 30.
    const double raws[] = {0, 10, -10, 100, -100, 1e3, -1e3, 1e4, -1e4, 1e6, -1e6, 30, -30, 3, -3};
    std::vector<std::pair<double, QString>> ticks;
    for (double r : raws) {
        const double x = bins.fromRaw(r);
        if (!bins.edges.empty() && (x < bins.edges.front() || x > bins.edges.back())) continue;
        ticks.emplace_back(x,
                           std::fabs(r) >= 1e3 ? QString::number(r, 'g', 2) : QString::number(r));
    }
    setSpacedTicks(axis, std::move(ticks), false);
}

QColor layerColor(int layer) {
    static const QColor colors[] = {
        QColor(31, 119, 180), QColor(214, 39, 40), QColor(44, 160, 44),   QColor(148, 103, 189),
        QColor(255, 127, 14), QColor(140, 86, 75), QColor(227, 119, 194), QColor(23, 190, 207)};
    return colors[layer % 8];
}

QColor compareColor(size_t index) {
    // Tableau 10 plus two: distinguishable, and none is the threshold red or grey.
    static const QColor colors[] = {
        QColor(31, 119, 180), QColor(255, 127, 14),  QColor(44, 160, 44),  QColor(148, 103, 189),
        QColor(140, 86, 75),  QColor(227, 119, 194), QColor(23, 190, 207), QColor(188, 189, 34),
        QColor(214, 39, 40),  QColor(127, 127, 127), QColor(0, 80, 60),    QColor(120, 60, 0)};
    return colors[index % std::size(colors)];
}

}  // namespace qklab::gui

namespace qklab::gui {

void placeLegendOutside(QCustomPlot* plot, int row) {
    QCPLayoutInset* inset = plot->axisRect()->insetLayout();
    if (inset->take(plot->legend)) inset->simplify();
    plot->plotLayout()->insertRow(row);
    plot->plotLayout()->addElement(row, 0, plot->legend);
    plot->plotLayout()->setRowStretchFactor(row, 0.001);
    plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
    plot->legend->setWrap(4);
    plot->legend->setBorderPen(Qt::NoPen);
    plot->legend->setBrush(Qt::NoBrush);
    plot->legend->setMargins(QMargins(4, 0, 4, 0));
    plot->legend->setColumnSpacing(12);
    // A 22 px swatch, not 32: with the threshold entries beside the series, the 10 px saved
    // per column let two columns fit a 1024x768 projector's logit plot instead of one.
    plot->legend->setIconSize(22, 12);
    // An empty legend (a per-layer plot before its first probe) is a grid without columns,
    // whose maximum width is its margins: it capped the whole layout column, and the axis
    // rect stayed at its minimum width in a wide cell. A width whose sum with the margins
    // stays below QWIDGETSIZE_MAX is taken as an explicit maximum instead of that hint.
    plot->legend->setMaximumSize(QWIDGETSIZE_MAX / 2, QWIDGETSIZE_MAX);
}

void fitLegendColumns(QCustomPlot* plot) {
    QCPLegend* legend = plot->legend;
    // itemCount() counts the grid's cells; a cell left empty by a removed entry has no item.
    std::vector<int> widths;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (QCPAbstractLegendItem* item = legend->item(i))
            widths.push_back(item->minimumOuterSizeHint().width());
    const int available = plot->width() - legend->margins().left() - legend->margins().right();
    // The most columns whose own widest entries fit side by side (filled row by row): the
    // widest entry of all ("healthy max < 20") no longer sets every column's width.
    int columns = 1;
    for (int k = int(widths.size()); k > 1 && columns == 1; --k) {
        std::vector<int> column(size_t(k), 0);
        for (size_t i = 0; i < widths.size(); ++i)
            column[i % size_t(k)] = std::max(column[i % size_t(k)], widths[i]);
        int total = legend->columnSpacing() * (k - 1);
        for (int w : column) total += w;
        if (total <= available) columns = k;
    }
    if (legend->wrap() == columns) return;
    legend->setWrap(columns);
    legend->setFillOrder(QCPLegend::foColumnsFirst, true);  // re-flow the existing entries
}

}  // namespace qklab::gui
