// compare_plots.cpp — drawing the compared runs' series.
#include "compare/compare_plots.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QElapsedTimer>
#include <QGridLayout>
#include <QSignalBlocker>
#include <QStackedLayout>
#include <cmath>

#include "common/custom_scalar_points.h"
#include "common/plot_cursor.h"
#include "common/plot_export.h"
#include "common/plot_style.h"
#include "common/qk_clip_marks.h"
#include "common/theme.h"

namespace qklab::gui {
namespace {

const char* const kRunIndex = "runIndex";  // which run a graph draws (readout, step labels)
constexpr int kOverlayColumns = 4;
// Fourteen metrics and a custom scalar: three rows of five rather than a fourth row, so that
// the plots keep their height above the tables at 1280x720.
constexpr int kMaxOverlayColumns = 5;

// Small multiples of n runs: one row up to 4, then 3 columns up to 9, then 4.
int multiplesColumns(size_t n) {
    return n <= 4 ? std::max<int>(1, int(n)) : (n <= 9 ? 3 : 4);
}

QCPGraph* addRunGraph(QCustomPlot* plot, size_t run, const QString& name, const QPen& pen) {
    QCPGraph* g = plot->addGraph();
    g->setName(name);
    g->setPen(pen);
    g->setProperty(kRunIndex, qulonglong(run));
    return g;
}

// As in the live plots: a series with more points than the plot has pixel columns is a dense
// band of near-vertical segments, and antialiasing them (or stroking pens wider than 1 px as
// polygons) costs far more than an aliased hairline nobody can tell apart at that density.
// compare_bench: replotting the 11 plots of 10 x 20k-step runs took 57 ms, 16 ms thin.
void thinIfDense(QCPGraph* g) {
    const int columns = std::max(200, g->parentPlot()->axisRect()->width());
    if (g->dataCount() <= columns) return;
    g->setAntialiased(false);
    g->setAntialiasedFill(false);  // a seed band's fill: 55 -> 39 ms for the grouped replot
    QPen pen = g->pen();
    pen.setWidthF(0);
    g->setPen(pen);
}

}  // namespace

ComparePlots::ComparePlots(QWidget* parent) : QWidget(parent) {
    m_hover = new HoverCursor(this);
    m_hover->setReadout([this](QCustomPlot* plot, double x) { return readout(plot, x); });
    m_stack = new QStackedLayout(this);
    auto* overlay = new QWidget;
    m_overlayGrid = new QGridLayout(overlay);
    m_overlayGrid->setContentsMargins(0, 0, 0, 0);
    m_overlayGrid->setSpacing(2);
    for (const CompareMetricInfo& info : compareMetrics())
        makePlot(info.title, info.logScale, &m_plots);
    m_customPlot = makePlot(tr("Custom scalar"), false, &m_plots);
    m_scalarChoice = new QComboBox;
    m_scalarChoice->setObjectName(QStringLiteral("compareCustomScalar"));
    m_scalarChoice->setToolTip(
        tr("Which scalar the runs logged besides qklab's step metrics the Custom scalar plot "
           "draws, for every run that logged it"));
    m_scalarChoice->hide();
    connect(m_scalarChoice, qOverload<int>(&QComboBox::currentIndexChanged), this,
            [this] { setCustomScalar(m_scalarChoice->currentData().toString()); });
    relayoutPlots();
    m_stack->addWidget(overlay);
    auto* multiples = new QWidget;
    m_multiGrid = new QGridLayout(multiples);
    m_multiGrid->setContentsMargins(0, 0, 0, 0);
    m_multiGrid->setSpacing(2);
    m_stack->addWidget(multiples);
}

// A titled plot in `group`, whose x-axes stay linked: zoom or drag one, the group follows.
QCustomPlot* ComparePlots::makePlot(const QString& title, bool logScale,
                                    QList<QCustomPlot*>* group) {
    auto* plot = new QCustomPlot(this);
    stylePlot(plot, QString(), /*legend=*/false);
    // Three rows of plots above the tables fit 1280x720; five columns of them (the fourteen
    // metrics, and a custom scalar) fit 1024 px beside the run list (160 made it 1133 px).
    plot->setMinimumSize(136, 75);
    plot->plotLayout()->insertRow(0);
    QFont f = font();
    f.setBold(true);
    f.setPointSizeF(std::max(7.0, f.pointSizeF() - 1));
    plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title, f));
    setWrappedTitle(plot, title);  // two lines rather than "rm p90 (raw projec"
    if (logScale) setLogAxis(plot->yAxis, true);
    plot->xAxis->setLabel(xTitle());
    installExportMenu(plot);
    m_hover->addPlot(plot);
    // After the layout and before the painting of every replot: the range and the width the
    // plot will be drawn at are known, and thinned bands set now are what gets drawn.
    connect(plot, &QCustomPlot::afterLayout, this, [this, plot] { fitBands(plot); });
    connect(plot, &QCustomPlot::mouseMove, this,
            [this, plot](QMouseEvent* e) { m_hover->hover(plot, e->pos()); });
    connect(plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            [this, plot, group](const QCPRange& range) {
                if (m_syncing) return;
                m_syncing = true;
                for (QCustomPlot* p : *group)
                    if (p != plot) {
                        p->xAxis->setRange(range);
                        p->replot(QCustomPlot::rpQueuedReplot);
                    }
                m_syncing = false;
            });
    *group << plot;
    return plot;
}

void ComparePlots::setSmallMultiples(bool on, CompareMetric metric) {
    m_multiples = on;
    m_multiMetric = metric;
    m_stack->setCurrentIndex(on ? 1 : 0);
    redraw();
}

// One plot per run for one metric, on the same x and y ranges so that shapes compare.
void ComparePlots::drawMultiples() {
    const CompareMetricInfo& info = compareMetricInfo(m_multiMetric);
    const size_t n = m_comparison ? m_comparison->runs.size() : 0;
    const int columns = multiplesColumns(n);
    QCPRange xs, ys;
    bool found = false;
    for (size_t r = 0; r < size_t(m_multiPlots.size()) || r < n; ++r) {
        if (r >= size_t(m_multiPlots.size())) makePlot(QString(), false, &m_multiPlots);
        QCustomPlot* plot = m_multiPlots[int(r)];
        plot->clearGraphs();
        clearItems(plot, QStringLiteral("event"));
        m_multiGrid->removeWidget(plot);
        plot->setVisible(r < n);
        if (r >= n) continue;
        m_multiGrid->addWidget(plot, int(r) / columns, int(r) % columns);
        setLogAxis(plot->yAxis, info.logScale);
        plot->xAxis->setLabel(xTitle());
        if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0))) {
            QString text = QStringLiteral("%1 · %2").arg(info.title, m_comparison->runs[r].label());
            if (info.metric == CompareMetric::Alpha && withoutQkNorm(m_comparison->runs[r]))
                text += tr(" · no QK-norm");
            setWrappedTitle(plot, text);
            title->setTextColor(runColor(r));
        }
        drawRun(plot, &info, r, false);
        drawMarkers(plot, &info, r);
        drawZeroLine(plot);
        plot->rescaleAxes();
        const QCPRange x = plot->xAxis->range(), y = plot->yAxis->range();
        xs = found ? QCPRange(std::min(xs.lower, x.lower), std::max(xs.upper, x.upper)) : x;
        ys = found ? QCPRange(std::min(ys.lower, y.lower), std::max(ys.upper, y.upper)) : y;
        found = true;
    }
    for (size_t r = 0; r < n; ++r) {
        m_multiPlots[int(r)]->xAxis->setRange(xs);
        m_multiPlots[int(r)]->yAxis->setRange(ys);
        m_multiPlots[int(r)]->replot(QCustomPlot::rpQueuedReplot);
    }
}

void ComparePlots::setLessonMetrics(const QStringList& metrics) {
    m_lessonPlots.clear();
    for (const QString& metric : metrics)
        if (const std::optional<CompareMetric> m = compareMetricFor(metric))
            if (QCustomPlot* plot = plotOf(*m); plot && !m_lessonPlots.contains(plot))
                m_lessonPlots << plot;
    relayoutPlots();
}

QList<QCustomPlot*> ComparePlots::shownPlots() const {
    QList<QCustomPlot*> all = m_plots;
    if (m_scalar.isEmpty()) all.removeOne(m_customPlot);  // no compared run logged any
    if (!presenterActive() || m_lessonPlots.isEmpty()) return all;
    QList<QCustomPlot*> shown;
    for (QCustomPlot* plot : m_plots)  // in compareMetrics() order, as the full grid
        if (m_lessonPlots.contains(plot)) shown << plot;
    return shown;
}

// Columns of the overlay now: twelve or fewer four to a row, more five to a row; a
// lesson's few two to a row (one alone takes the width), a last odd one spanning the row.
int ComparePlots::overlayColumns() const {
    const int n = int(shownPlots().size());
    return n == 1 ? 1 : n <= 6 ? 2 : n <= 12 ? kOverlayColumns : kMaxOverlayColumns;
}

void ComparePlots::relayoutPlots() {
    for (QCustomPlot* plot : m_plots) {
        m_overlayGrid->removeWidget(plot);
        plot->hide();
    }
    const QList<QCustomPlot*> shown = shownPlots();
    const int columns = overlayColumns();
    for (int i = 0; i < shown.size(); ++i) {
        const int span = i + 1 == shown.size() && columns == 2 && i % 2 == 0 ? 2 : 1;
        m_overlayGrid->addWidget(shown[i], i / columns, i % columns, 1, span);
        shown[i]->show();
    }
    const int rows = (int(shown.size()) + columns - 1) / columns;
    for (int r = 0; r < std::max(rows, m_overlayGrid->rowCount()); ++r)
        m_overlayGrid->setRowStretch(r, r < rows ? 1 : 0);
    for (int c = 0; c < kMaxOverlayColumns; ++c)
        m_overlayGrid->setColumnStretch(c, c < columns ? 1 : 0);
}

int ComparePlots::gridColumns() const {
    if (!m_multiples) return overlayColumns();
    return multiplesColumns(m_comparison ? m_comparison->runs.size() : 0);
}

QCustomPlot* ComparePlots::plotOf(CompareMetric metric) const {
    int i = 0;
    for (const CompareMetricInfo& info : compareMetrics()) {
        if (info.metric == metric) return m_plots.value(i);
        ++i;
    }
    return nullptr;
}

void ComparePlots::setComparison(const Comparison* comparison, int layer) {
    m_comparison = comparison;
    m_layer = layer;
    fillScalarChoice();
    redraw();
}

// The names of this comparison, the one chosen kept while a run still has it (a live reload),
// else the first; the plot and the choice are laid out only while there are any.
void ComparePlots::fillScalarChoice() {
    const QStringList names = m_comparison ? customScalarNames(*m_comparison) : QStringList();
    const bool had = !m_scalar.isEmpty();
    if (!names.contains(m_scalar)) m_scalar = names.value(0);
    {
        const QSignalBlocker block(m_scalarChoice);
        m_scalarChoice->clear();
        for (const QString& name : names) m_scalarChoice->addItem(tr("custom: %1").arg(name), name);
        m_scalarChoice->setCurrentIndex(std::max(0, m_scalarChoice->findData(m_scalar)));
    }
    m_scalarChoice->setVisible(!names.isEmpty());
    if (had != !m_scalar.isEmpty()) relayoutPlots();
}

void ComparePlots::setCustomScalar(const QString& name) {
    if (!m_comparison || !customScalarNames(*m_comparison).contains(name)) return;
    m_scalar = name;
    if (m_scalarChoice->currentData().toString() != name) {
        const QSignalBlocker block(m_scalarChoice);
        m_scalarChoice->setCurrentIndex(m_scalarChoice->findData(name));
    }
    redraw();
}

void ComparePlots::setXAxis(XAxisKind kind) {
    m_xKind = kind;
    redraw();
}

void ComparePlots::setLayer(int layer) {
    m_layer = layer;
    redraw();
}

void ComparePlots::setSmoothing(double weight) {
    m_smoothing = std::clamp(weight, 0.0, 0.99);
    redraw();
}

void ComparePlots::setGroupBy(const QString& groupBy) {
    m_groupBy = groupBy;
    redraw();
}

QVector<double> ComparePlots::xs(size_t run, const QVector<double>& steps) const {
    QVector<double> out;
    out.reserve(steps.size());
    for (double s : steps) out << xOf(run, s);
    return out;
}

double ComparePlots::xOf(size_t run, double step) const {
    if (m_align)
        return run < m_anchors.size() && m_anchors[run].step ? step - double(*m_anchors[run].step)
                                                             : std::nan("");
    return m_x[run](step);
}

bool ComparePlots::drawn(size_t run) const {
    return !m_align || (run < m_anchors.size() && m_anchors[run].step.has_value());
}

QString ComparePlots::xTitle() const {
    if (!m_align) return xAxisTitle(m_xKind);
    return tr("steps from %1").arg(QString::fromStdString(alignAnchorName(*m_align)));
}

void ComparePlots::setAlignment(const std::optional<AlignRule>& rule) {
    m_align = rule;
    redraw();
}

// Read from the rows each run's snapshot holds (the plots' own), at each redraw: a live run
// may reach its anchor between two reloads.
void ComparePlots::findAnchors() {
    m_anchors.clear();
    if (!m_align || !m_comparison) return;
    for (const CompareRun& run : m_comparison->runs) {
        const RunSnapshot& s = run.snap;
        m_anchors.push_back(
            findAnchor(AlignRows{&s.info, &s.steps, &s.probes, &s.spikes, &s.events}, *m_align));
    }
}

// The anchor of every aligned run: x = 0.
void ComparePlots::drawZeroLine(QCustomPlot* plot) {
    if (!m_align) return;
    auto* line = new QCPItemStraightLine(plot);
    setItemRole(line, QStringLiteral("event"));  // cleared with the event lines
    line->setObjectName(QStringLiteral("alignZero"));
    line->point1->setTypeY(QCPItemPosition::ptAxisRectRatio);
    line->point2->setTypeY(QCPItemPosition::ptAxisRectRatio);
    line->point1->setCoords(0, 0);
    line->point2->setCoords(0, 1);
    line->setPen(QPen(plot->xAxis->labelColor(), 1.0, Qt::DotLine));
    line->setSelectable(false);
}

void ComparePlots::redraw() {
    QElapsedTimer timer;
    timer.start();
    m_hover->hide();
    m_x.clear();
    m_bands.clear();  // their graphs go with clearGraphs() below
    // Again with the data: a reload may have lost a deleted run, and the indices with it.
    m_groups = m_comparison ? curveGroups(*m_comparison, m_groupBy) : std::vector<CurveGroup>();
    findAnchors();
    if (m_comparison)
        for (const CompareRun& run : m_comparison->runs) {
            StepToX map(m_xKind, run.snap.config.data.batchSize, run.snap.config.model.seqLen);
            map.add(run.snap.steps);
            m_x.push_back(std::move(map));
        }
    if (m_multiples) {
        drawMultiples();
        m_lastRedrawMs = timer.nsecsElapsed() / 1e6;
        return;
    }
    // Before the metrics: the linked x axes end at the range the last metric plot sets, as
    // without it, whatever steps the scalar was logged at.
    drawCustomScalar();
    int i = 0;
    for (const CompareMetricInfo& info : compareMetrics()) {
        QCustomPlot* plot = m_plots[i++];
        plot->clearGraphs();
        clearItems(plot, QStringLiteral("event"));
        plot->xAxis->setLabel(xTitle());
        setWrappedTitle(plot, titleOf(info));
        if (m_comparison) drawMetric(plot, &info);
        plot->rescaleAxes();
        // Alpha lives in [0, 1]: its band stays put, with no run drawn (all without QK-norm) too.
        if (info.metric == CompareMetric::Alpha) plot->yAxis->setRange(-0.05, 1.05);
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
    m_lastRedrawMs = timer.nsecsElapsed() / 1e6;
}

void ComparePlots::drawCustomScalar() {
    QCustomPlot* plot = m_customPlot;
    plot->clearGraphs();
    clearItems(plot, QStringLiteral("event"));
    plot->xAxis->setLabel(xTitle());
    setWrappedTitle(plot,
                    m_scalar.isEmpty() ? tr("Custom scalar") : tr("Custom: %1").arg(m_scalar));
    if (!m_comparison || m_scalar.isEmpty()) return;
    drawMetric(plot, nullptr);
    QList<QCPGraph*> graphs;
    for (int g = 0; g < plot->graphCount(); ++g) graphs << plot->graph(g);
    chooseCustomScalarScale(plot, graphs);  // as the live view's Custom scalars plot
    plot->yAxis->setLabel(QString());       // the title names it, as the metrics' plots do
    plot->rescaleAxes();
    plot->replot(QCustomPlot::rpQueuedReplot);
}

Series ComparePlots::curveOf(const CompareMetricInfo* info, size_t r) const {
    const CompareRun& run = m_comparison->runs[r];
    if (!info) return customScalarSeries(run, m_scalar);  // empty: the run never logged it
    // A run without QK-norm has no alpha (titleOf says so).
    if (info->metric == CompareMetric::Alpha && withoutQkNorm(run)) return {};
    return seriesOf(run, info->metric, m_layer);
}

// The alpha plot names the runs without QK-norm (their stored alpha 0 is not drawn: a flat
// line at 0 read as an anneal that had ended); every other title is the metric's.
QString ComparePlots::titleOf(const CompareMetricInfo& info) const {
    if (info.metric != CompareMetric::Alpha || !m_comparison) return info.title;
    QStringList none, ids;
    for (const CompareRun& run : m_comparison->runs)
        if (withoutQkNorm(run)) {
            none << run.label();
            ids << QString::number(run.snap.runId);
        }
    if (none.isEmpty()) return info.title;
    // One run by its label; more by their ids, as the legend numbers them, on one short line:
    // four labels took four lines at 1280x720 and the plot's title row holds two.
    if (none.size() == 1) return tr("%1\nno QK-norm (not drawn): %2").arg(info.title, none[0]);
    return tr("%1\nno QK-norm: %2").arg(info.title, ids.join(QStringLiteral(", ")));
}

void ComparePlots::drawMetric(QCustomPlot* plot, const CompareMetricInfo* info) {
    std::vector<bool> grouped(m_comparison->runs.size(), false);
    for (const CurveGroup& group : m_groups) {
        if (group.members.size() < 2) continue;
        drawGroup(plot, info, group);
        for (size_t m : group.members) grouped[m] = true;
    }
    for (size_t r = 0; r < m_comparison->runs.size(); ++r) {
        drawRun(plot, info, r, grouped[r]);
        drawMarkers(plot, info, r);
    }
    drawZeroLine(plot);
}

// Raw values always; with smoothing on they turn faint under the smoothed line. Grouped runs
// are drawn faint too: their group's mean and band carry the colour.
void ComparePlots::drawRun(QCustomPlot* plot, const CompareMetricInfo* info, size_t index,
                           bool inGroup) {
    const CompareRun& run = m_comparison->runs[index];
    const Series s = curveOf(info, index);
    if (s.steps.isEmpty() || !drawn(index)) return;
    const QColor color = runColor(index);
    const bool smooth = m_smoothing > 0;
    QColor faint = color;
    faint.setAlpha(smooth || inGroup ? 60 : 255);
    QCPGraph* raw = addRunGraph(plot, index, run.label(), QPen(faint, smooth ? 1.0 : 1.4));
    raw->setData(xs(index, s.steps), s.values, true);
    thinIfDense(raw);
    if (info && info->metric == CompareMetric::ValLoss)
        raw->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
    if (!smooth || inGroup) return;
    QCPGraph* line = addRunGraph(plot, index, run.label(), QPen(color, 1.6));
    excludeFromReadout(line);  // the readout shows the raw value under the cursor
    line->setData(xs(index, s.steps), smoothed(s.values, m_smoothing), true);
    thinIfDense(line);
}

void ComparePlots::drawGroup(QCustomPlot* plot, const CompareMetricInfo* info,
                             const CurveGroup& group) {
    std::vector<size_t> members;  // aligned: the members with an anchor
    for (size_t m : group.members)
        if (drawn(m)) members.push_back(m);
    if (members.empty()) return;
    std::vector<Series> series;
    for (size_t m : members) {  // a run without QK-norm has no alpha: no band where it is
        Series s = curveOf(info, m);
        // Aligned: the band is over the steps from each member's own anchor.
        if (m_align)
            for (double& step : s.steps) step = xOf(m, step);
        // A custom scalar: the band of the members that logged it.
        if (info || !s.steps.isEmpty()) series.push_back(std::move(s));
    }
    for (Series& s : series) s.values = smoothed(s.values, m_smoothing);
    const BandSeries band = groupBand(series);
    if (band.steps.isEmpty()) return;
    const size_t first = members.front();
    const QVector<double> x = m_align ? band.steps : xs(first, band.steps);
    QColor color = runColor(first);
    // Whole here (rescaleAxes sees every point); fitBands thins them for drawing.
    QCPGraph* low = addRunGraph(plot, first, QString(), QPen(Qt::NoPen));
    low->setData(x, band.low, true);
    QCPGraph* high = addRunGraph(plot, first, QString(), QPen(Qt::NoPen));
    high->setData(x, band.high, true);
    DrawnBand drawn;
    drawn.plot = plot;
    drawn.low = low;
    drawn.high = high;
    drawn.x = x;
    drawn.lowValues = band.low;
    drawn.highValues = band.high;
    m_bands.push_back(std::move(drawn));
    color.setAlpha(50);
    high->setBrush(color);
    high->setChannelFillGraph(low);
    const QString name = m_groupBy == QLatin1String(kGroupBySeed)
                             ? tr("mean of %n seed(s) like %1", nullptr, int(members.size()))
                                   .arg(m_comparison->runs[first].label())
                             : tr("mean of %1").arg(group.label);
    QCPGraph* mean = addRunGraph(plot, first, name, QPen(runColor(first), 2.0));
    mean->setData(x, band.mean, true);
    thinIfDense(mean);
    thinIfDense(low);
    thinIfDense(high);
}

// Spikes at their raw values; a diverged run's last finite point; QK-Clips on the raw max
// logit (the layer shown, or all); interventions as lines.
void ComparePlots::drawMarkers(QCustomPlot* plot, const CompareMetricInfo* info, size_t index) {
    if (!drawn(index)) return;
    const CompareRun& run = m_comparison->runs[index];
    const QColor color = runColor(index);
    if (info && info->metric == CompareMetric::MaxLogit && !run.snap.clips.empty()) {
        QCPGraph* clips = addRunGraph(plot, index, QString(), QPen(color));
        clips->setLineStyle(QCPGraph::lsNone);
        clips->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssTriangleInverted, color, color.lighter(150), 7));
        clips->setProperty("qkClips", true);
        for (const ClipStep& c : clipSteps(run.snap.clips, m_layer))
            if (std::isfinite(c.maxSMax)) clips->addData(xOf(index, double(c.step)), c.maxSMax);
    }
    const bool lossPlot = info && info->metric == CompareMetric::TrainLoss;
    if (lossPlot || (info && info->metric == CompareMetric::GradNorm)) {
        QCPGraph* marks = addRunGraph(plot, index, QString(), QPen(color));
        marks->setLineStyle(QCPGraph::lsNone);
        marks->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, color, color, 8));
        for (const Spike& sp : run.snap.spikes)
            if ((sp.metric.find("grad") != std::string::npos) == !lossPlot &&
                std::isfinite(sp.value))
                marks->addData(xOf(index, double(sp.step)), sp.value);
        if (run.summary.status == RunStatus::Diverged) {
            const Series s = seriesOf(run, info->metric, m_layer);
            for (int i = s.values.size() - 1; i >= 0; --i)
                if (std::isfinite(s.values[i])) {
                    QCPGraph* end = addRunGraph(plot, index, QString(), QPen(color, 2));
                    end->setLineStyle(QCPGraph::lsNone);
                    end->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCross, 12));
                    end->addData(xOf(index, s.steps[i]), s.values[i]);
                    break;
                }
        }
    }
    // Interventions and the skip-step policy's events in the run's colour (labels would pile
    // up across runs; the Events tab and the readout name them).
    for (const EventRecord& e : run.snap.events) {
        if (e.source != "user" && e.source != "policy") continue;
        auto* line = new QCPItemStraightLine(plot);
        setItemRole(line, QStringLiteral("event"));
        const double x = xOf(index, double(e.step));
        line->point1->setTypeY(QCPItemPosition::ptAxisRectRatio);
        line->point2->setTypeY(QCPItemPosition::ptAxisRectRatio);
        line->point1->setCoords(x, 0);
        line->point2->setCoords(x, 1);
        line->setPen(QPen(color, 1.2, Qt::DashLine));
        line->setSelectable(false);
    }
}

// The band fill was the slowest part of a replot with seed groups (a 20,000-point polygon
// per group and plot). Thinned to per-column min and max it draws the same envelope, spikes
// included; the mean line stays whole, as the cursor reads its exact values.
void ComparePlots::fitBands(QCustomPlot* plot) {
    const QCPRange range = plot->xAxis->range();
    const int columns = std::max(200, plot->axisRect()->width());  // as in thinIfDense
    for (DrawnBand& b : m_bands) {
        if (b.plot != plot || (b.fittedLower == range.lower && b.fittedUpper == range.upper &&
                               b.fittedColumns == columns))
            continue;
        const BandEdges e =
            decimateBand(b.x, b.lowValues, b.highValues, range.lower, range.upper, columns);
        b.low->setData(e.x, e.low, true);
        b.high->setData(e.x, e.high, true);
        b.fittedLower = range.lower;
        b.fittedUpper = range.upper;
        b.fittedColumns = columns;
    }
}

QString ComparePlots::readout(QCustomPlot* plot, double x) const {
    if (!m_comparison || m_comparison->runs.empty()) return {};
    const QStringList lines = curveValuesAt(plot, x, [this](const QCPGraph* g, double key) {
        const size_t run = g->property(kRunIndex).toULongLong();
        if (m_align && run < m_anchors.size() && m_anchors[run].step)
            return tr("step %1").arg(qint64(std::llround(key)) + *m_anchors[run].step);
        return run < m_x.size() ? tr("step %1").arg(m_x[run].stepAt(key)) : QString();
    });
    if (lines.isEmpty()) return {};
    const int index = int(m_plots.indexOf(plot));
    QString head = QStringLiteral("<b>%1</b>")
                       .arg(plot == m_customPlot ? m_scalar.toHtmlEscaped()
                            : index >= 0 && size_t(index) < compareMetrics().size()
                                ? compareMetrics()[size_t(index)].title
                                : QString());
    // Which x the cursor is at, named as the axis is (steps differ per run on the other axes;
    // each run's line names its own step).
    head +=
        QStringLiteral(" · ") + (m_align ? tr("%1 %2").arg(xTitle()).arg(qint64(std::llround(x)))
                                         : xAxisValueText(m_xKind, x));
    return head + QStringLiteral("<br>") + lines.join(QStringLiteral("<br>"));
}

}  // namespace qklab::gui
