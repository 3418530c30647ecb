// histogram_panel.cpp — loading stored histograms off the GUI thread and drawing bars + heat map.
#include "live/histogram_panel.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

#include "common/async_store.h"
#include "common/plot_export.h"
#include "common/plot_style.h"
#include "common/run_data.h"
#include "qklab/analysis/spikes.h"

namespace qklab::gui {

HistogramPanel::HistogramPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    m_runLabel = new QLabel(tr("No run shown."));
    m_runLabel->setObjectName(QStringLiteral("viewRunLabel"));
    layout->addWidget(m_runLabel);
    layout->addLayout(buildControls());
    m_info = new QLabel;
    m_info->setWordWrap(true);
    m_info->setObjectName(QStringLiteral("histInfo"));
    layout->addWidget(m_info);
    auto* splitter = new QSplitter(Qt::Vertical);
    layout->addWidget(splitter, 1);
    splitter->addWidget(buildHistogramPlot());
    splitter->addWidget(buildHeatMap());
    m_reloadTimer = new QTimer(this);
    m_reloadTimer->setSingleShot(true);
    m_reloadTimer->setInterval(1000);
    connect(m_reloadTimer, &QTimer::timeout, this, &HistogramPanel::reload);

    connect(m_layer, &QComboBox::activated, this, &HistogramPanel::reload);
    connect(m_head, &QComboBox::activated, this, &HistogramPanel::reload);
    connect(m_step, &QSlider::valueChanged, this, &HistogramPanel::showStep);
    connect(m_step2, &QSlider::valueChanged, this, &HistogramPanel::showStep);
    connect(m_overlay, &QCheckBox::toggled, this, &HistogramPanel::showStep);
    connect(m_logCounts, &QCheckBox::toggled, this, &HistogramPanel::showStep);
    connect(m_heat, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        if (m_rows.empty()) return;
        const double step = m_heat->xAxis->pixelToCoord(e->pos().x());
        m_step->setValue(indexOfStep(int64_t(step + 0.5)));
        emit stepSelected(m_rows[m_step->value()].step);
    });
    clear();
}

QGridLayout* HistogramPanel::buildControls() {
    auto* controls = new QGridLayout;
    m_layer = new QComboBox;
    m_layer->setObjectName(QStringLiteral("histLayer"));
    m_head = new QComboBox;
    m_head->setObjectName(QStringLiteral("histHead"));
    m_step = new QSlider(Qt::Horizontal);
    m_step->setObjectName(QStringLiteral("histStep"));
    m_stepLabel = new QLabel;
    m_stepLabel->setMinimumWidth(150);
    m_overlay = new QCheckBox(tr("Overlay step"));
    m_step2 = new QSlider(Qt::Horizontal);
    m_step2Label = new QLabel;
    m_step2Label->setMinimumWidth(150);
    m_logCounts = new QCheckBox(tr("Log counts"));
    m_logCounts->setChecked(true);
    controls->addWidget(new QLabel(tr("Layer")), 0, 0);
    controls->addWidget(m_layer, 0, 1);
    controls->addWidget(new QLabel(tr("Head")), 0, 2);
    controls->addWidget(m_head, 0, 3);
    controls->addWidget(m_logCounts, 0, 4);
    controls->addWidget(new QLabel(tr("Step")), 1, 0);
    controls->addWidget(m_step, 1, 1, 1, 3);
    controls->addWidget(m_stepLabel, 1, 4);
    controls->addWidget(m_overlay, 2, 0);
    controls->addWidget(m_step2, 2, 1, 1, 3);
    controls->addWidget(m_step2Label, 2, 4);
    controls->setColumnStretch(3, 1);
    return controls;
}

QCustomPlot* HistogramPanel::buildHistogramPlot() {
    m_hist = new QCustomPlot;
    stylePlot(m_hist, tr("count"));
    placeLegendOutside(m_hist, 0);  // the tallest bars sit where an inset legend was
    m_hist->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    installExportMenu(m_hist);
    m_barsA = new QCPBars(m_hist->xAxis, m_hist->yAxis);
    m_barsA->setName(tr("step A"));
    m_barsA->setPen(Qt::NoPen);
    m_barsA->setBrush(QColor(31, 119, 180, 190));
    m_outside = new QCPBars(m_hist->xAxis, m_hist->yAxis);
    m_outside->setName(tr("under/overflow"));
    m_outside->setPen(Qt::NoPen);
    m_outside->setBrush(QColor(214, 39, 40, 200));
    m_lineB = m_hist->addGraph();
    m_lineB->setName(tr("step B"));
    m_lineB->setLineStyle(QCPGraph::lsStepCenter);
    m_lineB->setPen(QPen(QColor(255, 127, 14), 1.8));
    return m_hist;
}

// Step x bin, counts on a log colour scale.
QCustomPlot* HistogramPanel::buildHeatMap() {
    m_heat = new QCustomPlot;
    stylePlot(m_heat, tr("logit"), false);
    m_heat->xAxis->setLabel(tr("step (click to pick)"));
    // The right axis names the threshold lines (setRun), on the left axis's scale.
    m_heat->yAxis2->setVisible(true);
    m_heat->yAxis2->setSubTicks(false);
    m_heat->yAxis2->setTickLabelFont(m_heat->yAxis->tickLabelFont());
    connect(m_heat->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), m_heat->yAxis2,
            qOverload<const QCPRange&>(&QCPAxis::setRange));
    installExportMenu(m_heat);
    m_map = new QCPColorMap(m_heat->xAxis, m_heat->yAxis);
    m_scale = new QCPColorScale(m_heat);
    m_heat->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setLabel(tr("count (log)"));
    m_scale->setDataScaleType(QCPAxis::stLogarithmic);
    m_scale->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    m_map->setColorScale(m_scale);
    QCPColorGradient gradient(QCPColorGradient::gpThermal);
    // Empty bins are transparent rather than the lowest colour: a zero count is "nothing
    // here", which should look different from "a few logits here".
    gradient.setNanHandling(QCPColorGradient::nhTransparent);
    m_map->setGradient(gradient);
    m_map->setInterpolate(false);
    auto* group = new QCPMarginGroup(m_heat);
    m_heat->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    return m_heat;
}

HistogramPanel::~HistogramPanel() = default;

void HistogramPanel::clear() {
    m_runId = 0;
    m_rows.clear();
    ++m_generation;
    m_info->setText(tr("No run selected."));
    showStep();
    rebuildHeatMap();
}

void HistogramPanel::setRunLabel(int64_t runId, const QString& label) {
    if (runId == m_runId) m_runLabel->setText(label);
}

QString HistogramPanel::runLabel() const {
    return m_runLabel->text();
}

void HistogramPanel::setRun(int64_t runId, const RunConfig& config, const QString& dbPath,
                            const QString& runLabel) {
    m_runLabel->setText(runLabel.isEmpty() ? tr("Run %1").arg(runId) : runLabel);
    const bool same = runId == m_runId && dbPath == m_dbPath;
    m_stepLimit.reset();
    m_runId = runId;
    m_config = config;
    m_dbPath = dbPath;
    m_bins = histBinsOf(config.probes);
    setHistogramTicker(m_hist->xAxis, m_bins);
    setHistogramTicker(m_heat->yAxis, m_bins);
    m_hist->xAxis->setLabel(histogramAxisLabel(m_bins));
    // The domain's thresholds (|logit| 20 healthy, 30 intervene) drawn on the heat map in the
    // histogram's own scale, so a blow-up is seen crossing them.
    // Their numbers are tick labels of the right axis, between the map and the colour scale:
    // a label on the map hid counts, and one at the right edge sat under the scale.
    clearItems(m_heat, QStringLiteral("threshold"));
    // Close on a symlog axis, 20 and 30 share a label ("20/30") where the map is short.
    std::vector<std::pair<double, QString>> named;
    for (double t : {kHealthyMaxLogit, kInterveneMaxLogit}) {
        const QColor color = t == kHealthyMaxLogit ? QColor(230, 150, 0) : QColor(200, 0, 0);
        for (double sign : {1.0, -1.0}) {
            const double y = m_bins.fromRaw(sign * t);
            if (y <= m_bins.edges.front() || y >= m_bins.edges.back()) continue;
            addThresholdLine(m_heat, y, color, QString());
            named.emplace_back(y, QString::number(sign * t));
        }
    }
    setSpacedTicks(m_heat->yAxis2, std::move(named), /*merge=*/true);
    if (!same) {
        m_rows.clear();
        rebuildSelectors();
    }
    reload();
}

void HistogramPanel::rebuildSelectors() {
    m_layer->clear();
    for (int l = 0; l < std::max<int64_t>(1, m_config.model.nLayers); ++l)
        m_layer->addItem(tr("layer %1").arg(l), l);
    m_head->clear();
    m_head->addItem(tr("all heads"), -1);
    for (int h = 0; h < m_config.model.nHeads; ++h) m_head->addItem(tr("head %1").arg(h), h);
}

void HistogramPanel::selectLayerHead(int layer, int head) {
    const int l = m_layer->findData(layer), h = m_head->findData(head);
    if (l >= 0) m_layer->setCurrentIndex(l);
    if (h >= 0) m_head->setCurrentIndex(h);
    if (l >= 0 || h >= 0) reload();
}

void HistogramPanel::notifyNewData(int64_t runId) {
    if (runId == m_runId && !m_reloadTimer->isActive()) m_reloadTimer->start();
}

void HistogramPanel::setStepLimit(int64_t step) {
    if (m_stepLimit == step) return;
    m_stepLimit = step;
    reload();
}

void HistogramPanel::reload() {
    if (m_runId == 0) return;
    m_reloadTimer->stop();
    const int64_t runId = m_runId;
    const std::optional<int64_t> limit = m_stepLimit;
    const int32_t layer = m_layer->currentData().toInt();
    const int32_t head = m_head->currentData().isValid() ? m_head->currentData().toInt() : -1;
    const uint64_t generation = ++m_generation;
    const HistBins bins = m_bins;
    readStoreAsync<HistogramLoad>(
        this, m_dbPath,
        [runId, layer, head, bins, limit](RunStore& store) {
            HistogramLoad load;
            load.rows = store.histograms(runId, layer, head);
            if (limit)
                load.rows.erase(
                    std::remove_if(load.rows.begin(), load.rows.end(),
                                   [&](const LogitHistogram& h) { return h.step > *limit; }),
                    load.rows.end());
            std::sort(
                load.rows.begin(), load.rows.end(),
                [](const LogitHistogram& a, const LogitHistogram& b) { return a.step < b.step; });
            // The heat map's cells are filled here, on the pool thread: for a 100k-step run
            // that is 10k x 128 cells, too many to fill on the GUI thread inside 50 ms.
            load.heat = buildHeatData(load.rows, bins, &load.maxCount);
            return load;
        },
        [this, generation](HistogramLoad load) {
            if (generation != m_generation) return;  // a newer selection is on its way
            // Stay on the newest step while a live run grows, unless the user moved away.
            const bool atEnd = m_rows.empty() || m_step->value() >= int(m_rows.size()) - 1;
            const int64_t shownStep = m_rows.empty() ? -1 : m_rows[m_step->value()].step;
            m_rows = std::move(load.rows);
            m_pendingHeat = std::move(load.heat);
            m_heatMax = load.maxCount;
            const int last = std::max(0, int(m_rows.size()) - 1);
            QSignalBlocker b1(m_step), b2(m_step2);
            m_step->setRange(0, last);
            m_step2->setRange(0, last);
            m_step->setValue(atEnd ? last : indexOfStep(shownStep));
            if (m_step2->value() > last) m_step2->setValue(0);
            showStep();
            rebuildHeatMap();
        },
        [this](const QString& error) {
            m_info->setText(tr("Could not read histograms: %1").arg(error));
        });
}

int HistogramPanel::indexOfStep(int64_t step) const {
    if (m_rows.empty()) return 0;
    auto it = std::lower_bound(m_rows.begin(), m_rows.end(), step,
                               [](const LogitHistogram& h, int64_t s) { return h.step < s; });
    if (it == m_rows.end()) return int(m_rows.size()) - 1;
    if (it != m_rows.begin() && (it->step - step) > (step - std::prev(it)->step)) --it;
    return int(it - m_rows.begin());
}

void HistogramPanel::setOverlay(bool on) {
    m_overlay->setChecked(on);
}

void HistogramPanel::jumpToStep(qint64 step) {
    m_step->setValue(indexOfStep(step));
}

void HistogramPanel::showStep() {
    m_barsA->data()->clear();
    m_outside->data()->clear();
    m_lineB->data()->clear();
    const bool log = m_logCounts->isChecked();
    setLogAxis(m_hist->yAxis, log);
    // Bars grow from 0.5 on a log axis (log 0 does not exist); a count of 1 is still visible.
    m_barsA->setBaseValue(log ? 0.5 : 0);
    m_outside->setBaseValue(log ? 0.5 : 0);
    if (m_rows.empty()) return showNoHistograms();
    const LogitHistogram& a = m_rows[std::min<size_t>(m_step->value(), m_rows.size() - 1)];
    const int n = int(a.counts.size());
    HistBins bins = m_bins;
    const bool binsMatch = bins.count() == n;
    if (!binsMatch) {
        // The stored row disagrees with the config (should not happen): draw bin indices
        // rather than invent edges.
        bins.edges.resize(n + 1);
        for (int i = 0; i <= n; ++i) bins.edges[i] = i;
        bins.symlog = false;
    }
    drawBars(a, bins);
    m_stepLabel->setText(
        tr("step %1 (%2/%3)").arg(a.step).arg(m_step->value() + 1).arg(m_rows.size()));
    drawOverlay(bins);
    describeStep(a, bins, binsMatch);
    fitAxes(bins, log);
    setStepCursor(m_heat, double(a.step));
    m_heat->replot(QCustomPlot::rpQueuedReplot);
}

// No rows to draw: say why (probes off, per-head rows not stored, none yet).
void HistogramPanel::showNoHistograms() {
    m_stepLabel->setText(QString());
    m_step2Label->setText(QString());
    if (m_runId != 0)
        m_info->setText(m_config.probes.every <= 0
                            ? tr("This run has probes off (probes.every = 0): no histograms.")
                        : m_head->currentData().toInt() >= 0
                            ? tr("No histograms stored for this head: this run's probes store "
                                 "layer-level histograms (choose \"all heads\").")
                            : tr("No histograms stored for this layer yet."));
    m_hist->replot(QCustomPlot::rpQueuedReplot);
}

// Step A's bars, with the underflow and overflow counts as bars just outside the range.
void HistogramPanel::drawBars(const LogitHistogram& a, const HistBins& bins) {
    const double w = bins.width();
    m_barsA->setWidth(w);
    m_outside->setWidth(w);
    for (int i = 0; i < int(a.counts.size()); ++i)
        m_barsA->addData(bins.center(i), double(a.counts[i]));
    m_outside->addData(bins.edges.front() - w, double(a.underflow));
    m_outside->addData(bins.edges.back() + w, double(a.overflow));
    m_barsA->setName(tr("step %1").arg(a.step));
}

// Step B as a line over step A's bars, when the overlay is on.
void HistogramPanel::drawOverlay(const HistBins& bins) {
    const bool on = m_overlay->isChecked();
    if (on) {
        const LogitHistogram& b = m_rows[std::min<size_t>(m_step2->value(), m_rows.size() - 1)];
        for (int i = 0; i < int(b.counts.size()) && i < bins.count(); ++i)
            m_lineB->addData(bins.center(i), double(b.counts[i]));
        m_step2Label->setText(tr("step %1").arg(b.step));
        m_lineB->setName(tr("step %1 (overlay)").arg(b.step));
    } else {
        m_step2Label->setText(QString());
    }
    m_lineB->setVisible(on);
    // A hidden overlay has no legend entry ("step B" stayed listed with the overlay off).
    if (on)
        m_lineB->addToLegend();
    else
        m_lineB->removeFromLegend();
}

// The counts under the plot, and how far the largest non-empty bin reaches.
void HistogramPanel::describeStep(const LogitHistogram& a, const HistBins& bins, bool binsMatch) {
    const int n = int(a.counts.size());
    double total = 0;
    for (int i = 0; i < n; ++i) total += double(a.counts[i]);
    // Largest non-empty bin edge, in raw logit units: the number the thresholds talk about.
    double maxEdge = bins.edges.front();
    for (int i = n - 1; i >= 0; --i)
        if (a.counts[i] > 0) {
            maxEdge = bins.edges[i + 1];
            break;
        }
    // NaN logits are in no bin: say how many, so that a diverging step does not look empty.
    m_info->setText(tr("%1 logits counted · underflow %2 · overflow %3 · NaN %4 · largest "
                       "non-empty bin reaches %5%6")
                        .arg(total + a.underflow + a.overflow + a.nan)
                        .arg(a.underflow)
                        .arg(a.overflow)
                        .arg(a.nan)
                        .arg(formatNumber(binsMatch ? bins.toRaw(maxEdge) : maxEdge))
                        .arg(binsMatch ? QString() : tr(" (bin count differs from the config)")));
}

// Every bin and the two outside bars in view; counts from 0 (0.5 on a log axis) up.
void HistogramPanel::fitAxes(const HistBins& bins, bool log) {
    const double w = bins.width();
    m_hist->xAxis->setRange(bins.edges.front() - 2 * w, bins.edges.back() + 2 * w);
    m_hist->yAxis->rescale(true);
    const QCPRange r = m_hist->yAxis->range();
    if (log)
        m_hist->yAxis->setRange(0.5, std::max(10.0, r.upper * 2));
    else
        m_hist->yAxis->setRange(0, std::max(1.0, r.upper * 1.05));
    m_hist->replot(QCustomPlot::rpQueuedReplot);
}

std::unique_ptr<QCPColorMapData> HistogramPanel::buildHeatData(
    const std::vector<LogitHistogram>& rows, const HistBins& config, double* maxCount) {
    *maxCount = 1;
    if (rows.empty()) return nullptr;
    const int nx = int(rows.size());
    const int ny = int(rows.front().counts.size());
    if (ny == 0) return nullptr;
    HistBins bins = config;
    if (bins.count() != ny) {
        bins.edges.resize(ny + 1);
        for (int i = 0; i <= ny; ++i) bins.edges[i] = i;
    }
    const double first = double(rows.front().step);
    const double last = nx > 1 ? double(rows.back().step) : first + 1;
    // Bins (the value axis) are always the stored ones. Along steps, more columns than a
    // screen has pixels only make the colouring slow (10k columns cost ~50 ms of GUI thread),
    // so beyond kMaxColumns consecutive probes share a column showing their per-bin maximum:
    // a one-probe burst stays visible.
    constexpr int kMaxColumns = 3000;
    const int group = (nx + kMaxColumns - 1) / kMaxColumns;
    const int columns = (nx + group - 1) / group;
    const double lastKey =
        group == 1 ? last
                   : first + (last - first) * double((columns - 1) * group) / std::max(1, nx - 1);
    auto data = std::make_unique<QCPColorMapData>(
        columns, ny, QCPRange(first, columns > 1 ? lastKey : first + 1),
        QCPRange(bins.center(0), bins.center(std::max(0, ny - 1))));
    for (int col = 0; col < columns; ++col) {
        for (int y = 0; y < ny; ++y) {
            double c = 0;
            for (int x = col * group; x < std::min(nx, (col + 1) * group); ++x) {
                const auto& counts = rows[x].counts;
                if (y < int(counts.size())) c = std::max(c, double(counts[y]));
            }
            data->setCell(col, y, c > 0 ? c : qQNaN());
            *maxCount = std::max(*maxCount, c);
        }
    }
    return data;
}

void HistogramPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (m_pendingHeat) rebuildHeatMap();
}

void HistogramPanel::rebuildHeatMap() {
    if (m_rows.empty()) {
        m_pendingHeat.reset();
        m_map->data()->setSize(1, 1);
        m_map->data()->fill(qQNaN());
        m_heat->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    // Colouring a 10k x 128 image is the expensive part of a replot: only do it when the
    // view can be seen (showEvent applies what was loaded meanwhile).
    if (!isVisible() || !m_pendingHeat) return;
    const QCPRange keys = m_pendingHeat->keyRange();
    m_map->setData(m_pendingHeat.release(), /*copy=*/false);
    m_map->setDataRange(QCPRange(1, std::max(2.0, m_heatMax)));
    m_heat->xAxis->setRange(keys);
    if (!m_bins.edges.empty() && m_bins.count() == m_map->data()->valueSize())
        m_heat->yAxis->setRange(m_bins.edges.front(), m_bins.edges.back());
    else
        m_heat->yAxis->setRange(m_map->data()->valueRange());
    m_heat->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace qklab::gui
