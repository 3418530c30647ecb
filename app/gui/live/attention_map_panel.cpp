// attention_map_panel.cpp — loading stored maps off the GUI thread and drawing one as a colour map.
#include "live/attention_map_panel.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QLabel>
#include <QSlider>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "common/async_store.h"
#include "common/plot_export.h"
#include "common/plot_style.h"
#include "common/run_data.h"
#include "qklab/analysis/attention_stats.h"

namespace qklab::gui {

AttentionMapPanel::AttentionMapPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    m_runLabel = new QLabel(tr("No run shown."));
    m_runLabel->setObjectName(QStringLiteral("viewRunLabel"));
    layout->addWidget(m_runLabel);
    auto* controls = new QGridLayout;
    m_layer = new QComboBox;
    m_head = new QComboBox;
    m_step = new QSlider(Qt::Horizontal);
    m_step->setObjectName(QStringLiteral("attnStep"));
    m_stepLabel = new QLabel;
    m_stepLabel->setMinimumWidth(120);
    m_logColour = new QCheckBox(tr("Log colour"));
    m_logColour->setToolTip(tr("Log scale shows the small weights a collapsed head has left"));
    controls->addWidget(new QLabel(tr("Layer")), 0, 0);
    controls->addWidget(m_layer, 0, 1);
    controls->addWidget(new QLabel(tr("Head")), 0, 2);
    controls->addWidget(m_head, 0, 3);
    controls->addWidget(m_logColour, 0, 4);
    controls->addWidget(new QLabel(tr("Step")), 1, 0);
    controls->addWidget(m_step, 1, 1, 1, 3);
    controls->addWidget(m_stepLabel, 1, 4);
    controls->setColumnStretch(3, 1);
    layout->addLayout(controls);
    m_info = new QLabel;
    m_info->setWordWrap(true);
    m_info->setObjectName(QStringLiteral("attnInfo"));
    layout->addWidget(m_info);

    m_plot = new QCustomPlot;
    stylePlot(m_plot, tr("query position"), false);
    m_plot->xAxis->setLabel(tr("key position"));
    m_plot->yAxis->setRangeReversed(true);  // row 0 at the top, like a matrix
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal | Qt::Vertical);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal | Qt::Vertical);
    installExportMenu(m_plot);
    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setLabel(tr("attention weight"));
    m_map->setColorScale(m_scale);
    m_map->setGradient(QCPColorGradient::gpHot);
    m_map->setInterpolate(false);
    auto* group = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    layout->addWidget(m_plot, 1);

    m_reloadTimer = new QTimer(this);
    m_reloadTimer->setSingleShot(true);
    m_reloadTimer->setInterval(1500);
    connect(m_reloadTimer, &QTimer::timeout, this, &AttentionMapPanel::reloadSteps);
    connect(m_step, &QSlider::valueChanged, this, &AttentionMapPanel::loadStep);
    connect(m_layer, &QComboBox::activated, this, &AttentionMapPanel::showMap);
    connect(m_head, &QComboBox::activated, this, &AttentionMapPanel::showMap);
    connect(m_logColour, &QCheckBox::toggled, this, &AttentionMapPanel::showMap);
    connect(m_plot, &QCustomPlot::mouseMove, this,
            [this](QMouseEvent* e) { showCellAt(e->pos(), e->globalPosition().toPoint()); });
    clear();
}

QString AttentionMapPanel::byteLabel(unsigned char b) {
    switch (b) {
        case '\n':
            return QStringLiteral("'\\n'");
        case '\t':
            return QStringLiteral("'\\t'");
        case ' ':
            return QStringLiteral("' '");
        default:
            break;
    }
    if (b >= 0x21 && b < 0x7f) return QStringLiteral("'%1'").arg(QChar(b));
    return QStringLiteral("0x%1").arg(int(b), 2, 16, QLatin1Char('0'));
}

QString AttentionMapPanel::cellText(const AttentionMap& m, int query, int key) {
    auto position = [&m](int i) {
        return i < int(m.tokens.size())
                   ? tr("%1 %2").arg(i).arg(byteLabel(static_cast<unsigned char>(m.tokens[i])))
                   : QString::number(i);
    };
    const double w = m.weights[size_t(query) * m.size + key];
    return tr("query %1 → key %2\nweight %3").arg(position(query), position(key)).arg(w, 0, 'f', 4);
}

// Positions are bytes of the sample: the tooltip names them, so a student sees which
// character a collapsed head stares at.
void AttentionMapPanel::showCellAt(const QPoint& pos, const QPoint& globalPos) {
    const AttentionMap* m = shownMap();
    if (!m || !m_plot->axisRect()->rect().contains(pos)) {
        QToolTip::hideText();
        return;
    }
    const int key = int(std::lround(m_plot->xAxis->pixelToCoord(pos.x())));
    const int query = int(std::lround(m_plot->yAxis->pixelToCoord(pos.y())));
    if (key < 0 || query < 0 || key >= m->size || query >= m->size) {
        QToolTip::hideText();
        return;
    }
    QToolTip::showText(globalPos, cellText(*m, query, key), m_plot);
}

const AttentionMap* AttentionMapPanel::shownMap() const {
    const int layer = m_layer->currentData().toInt();
    const int head = m_head->currentData().toInt();
    for (const AttentionMap& m : m_maps)
        if (m.layer == layer && m.head == head && m.size > 0 &&
            m.weights.size() >= size_t(m.size) * m.size)
            return &m;
    return nullptr;
}

void AttentionMapPanel::clear() {
    m_runId = 0;
    m_steps.clear();
    m_maps.clear();
    ++m_generation;
    m_info->setText(tr("No run selected."));
    showMap();
}

void AttentionMapPanel::setRunLabel(int64_t runId, const QString& label) {
    if (runId == m_runId) m_runLabel->setText(label);
}

QString AttentionMapPanel::runLabel() const {
    return m_runLabel->text();
}

void AttentionMapPanel::setRun(int64_t runId, const RunConfig& config, const QString& dbPath,
                               const QString& runLabel) {
    m_runLabel->setText(runLabel.isEmpty() ? tr("Run %1").arg(runId) : runLabel);
    m_runId = runId;
    m_config = config;
    m_dbPath = dbPath;
    m_stepLimit.reset();
    m_steps.clear();
    m_maps.clear();
    m_layer->clear();
    for (int l = 0; l < std::max<int64_t>(1, config.model.nLayers); ++l)
        m_layer->addItem(tr("layer %1").arg(l), l);
    m_head->clear();
    for (int h = 0; h < std::max<int64_t>(1, config.model.nHeads); ++h)
        m_head->addItem(tr("head %1").arg(h), h);
    reloadSteps();
}

void AttentionMapPanel::selectLayerHead(int layer, int head) {
    const int l = m_layer->findData(layer), h = m_head->findData(head);
    if (l >= 0) m_layer->setCurrentIndex(l);
    if (h >= 0) m_head->setCurrentIndex(h);
    if (l >= 0 || h >= 0) showMap();
}

void AttentionMapPanel::notifyNewData(int64_t runId) {
    if (runId == m_runId && !m_reloadTimer->isActive()) m_reloadTimer->start();
}

void AttentionMapPanel::setStepLimit(int64_t step) {
    if (m_stepLimit == step) return;
    m_stepLimit = step;
    reloadSteps();
}

int64_t AttentionMapPanel::shownStep() const {
    return m_steps.empty() ? -1 : m_steps[std::min<size_t>(m_step->value(), m_steps.size() - 1)];
}

void AttentionMapPanel::reloadSteps() {
    if (m_runId == 0) return;
    m_reloadTimer->stop();
    const int64_t runId = m_runId;
    const std::optional<int64_t> limit = m_stepLimit;
    const uint64_t generation = ++m_generation;
    readStoreAsync<std::vector<int64_t>>(
        this, m_dbPath,
        [runId, limit](RunStore& store) {
            std::vector<int64_t> steps = store.attentionMapSteps(runId);
            if (limit)
                steps.erase(std::remove_if(steps.begin(), steps.end(),
                                           [&](int64_t s) { return s > *limit; }),
                            steps.end());
            return steps;
        },
        [this, generation](std::vector<int64_t> steps) {
            if (generation != m_generation) return;
            const bool atEnd = m_steps.empty() || m_step->value() >= int(m_steps.size()) - 1;
            m_steps = std::move(steps);
            std::sort(m_steps.begin(), m_steps.end());
            QSignalBlocker block(m_step);
            m_step->setRange(0, std::max(0, int(m_steps.size()) - 1));
            if (atEnd) m_step->setValue(m_step->maximum());
            loadStep();
        },
        [this](const QString& e) {
            m_info->setText(tr("Could not read attention maps: %1").arg(e));
        });
}

void AttentionMapPanel::jumpToStep(qint64 step) {
    if (m_steps.empty()) return;
    auto it = std::lower_bound(m_steps.begin(), m_steps.end(), int64_t(step));
    if (it == m_steps.end()) --it;
    m_step->setValue(int(it - m_steps.begin()));
}

void AttentionMapPanel::loadStep() {
    if (m_steps.empty()) {
        m_maps.clear();
        showMap();
        return;
    }
    const int64_t runId = m_runId;
    const int64_t step = m_steps[std::min<size_t>(m_step->value(), m_steps.size() - 1)];
    m_stepLabel->setText(
        tr("step %1 (%2/%3)").arg(step).arg(m_step->value() + 1).arg(m_steps.size()));
    const uint64_t generation = ++m_generation;
    readStoreAsync<std::vector<AttentionMap>>(
        this, m_dbPath, [runId, step](RunStore& store) { return store.attentionMaps(runId, step); },
        [this, generation](std::vector<AttentionMap> maps) {
            if (generation != m_generation) return;
            m_maps = std::move(maps);
            showMap();
        },
        [this](const QString& e) {
            m_info->setText(tr("Could not read attention maps: %1").arg(e));
        });
}

void AttentionMapPanel::showMap() {
    const AttentionMap* found = shownMap();
    if (!found) {
        m_map->data()->setSize(1, 1);
        m_map->data()->fill(qQNaN());
        if (m_runId != 0) {
            m_info->setText(
                m_config.probes.attnMapEvery > 0 || !m_steps.empty()
                    ? tr("No attention map stored for this layer/head at this step yet.")
                    : tr("This run stored no attention maps: set probes.attn_map_every "
                         "> 0 before starting a run to see them."));
        }
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const AttentionMap& m = *found;
    const int n = m.size;
    m_map->data()->setSize(n, n);
    m_map->data()->setRange(QCPRange(0, n - 1), QCPRange(0, n - 1));
    const bool log = m_logColour->isChecked();
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c) {
            const double w = m.weights[size_t(r) * n + c];
            // Causal masking leaves exact zeros above the diagonal: transparent, not "small".
            m_map->data()->setCell(c, r, (log && w <= 0) ? qQNaN() : w);
        }
    QCPColorGradient gradient(QCPColorGradient::gpHot);
    gradient.setNanHandling(QCPColorGradient::nhTransparent);
    m_map->setGradient(gradient.inverted());
    m_scale->setDataScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    m_scale->axis()->setTicker(log ? QSharedPointer<QCPAxisTicker>(new QCPAxisTickerLog)
                                   : QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    m_map->setDataRange(log ? QCPRange(1e-4, 1) : QCPRange(0, 1));
    m_plot->xAxis->setRange(-0.5, n - 0.5);
    m_plot->yAxis->setRange(-0.5, n - 0.5);
    const double rowMax = meanRowMax(m);
    m_info->setText(tr("Step %1 (%9), layer %2, head %3 (T = %4): mean row max %5, mean row "
                       "entropy %6 nats (log T = %7). %8 Hover a cell for its bytes.")
                        .arg(m.step)
                        .arg(m.layer)
                        .arg(m.head)
                        .arg(n)
                        .arg(rowMax, 0, 'f', 3)
                        .arg(meanRowEntropy(m), 0, 'f', 3)
                        .arg(std::log(double(n)), 0, 'f', 2)
                        .arg(rowMax > 0.9   ? tr("Collapsed: attention is nearly one-hot.")
                             : rowMax > 0.6 ? tr("Sharp attention.")
                                            : tr("Spread attention."))
                        .arg(QString::fromUtf8(mapReasonTitle(m.reason))));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace qklab::gui
