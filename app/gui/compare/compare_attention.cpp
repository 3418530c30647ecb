// compare_attention.cpp — two runs' attention maps, side by side.
#include "compare/compare_attention.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QVBoxLayout>
#include <algorithm>
#include <utility>

#include "common/async_store.h"
#include "common/plot_export.h"
#include "common/plot_style.h"
#include "qklab/analysis/attention_stats.h"

namespace qklab::gui {

CompareAttention::CompareAttention(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    auto* row = new QHBoxLayout;
    for (auto& combo : m_run) {
        combo = new QComboBox;
        row->addWidget(combo);
    }
    row->insertWidget(1, new QLabel(tr("vs")));
    m_layer = new QComboBox;
    m_head = new QComboBox;
    m_step = new QSlider(Qt::Horizontal);
    m_stepLabel = new QLabel;
    m_stepLabel->setMinimumWidth(90);
    row->addWidget(m_layer);
    row->addWidget(m_head);
    row->addWidget(new QLabel(tr("step")));
    row->addWidget(m_step, 1);
    row->addWidget(m_stepLabel);
    layout->addLayout(row);
    m_info = new QLabel;
    m_info->setWordWrap(true);
    layout->addWidget(m_info);
    auto* maps = new QHBoxLayout;
    for (int side = 0; side < 2; ++side) {
        m_plot[side] = new QCustomPlot(this);
        stylePlot(m_plot[side], tr("query position"), false);
        m_plot[side]->setMinimumSize(160, 120);
        m_plot[side]->xAxis->setLabel(tr("key position"));
        m_plot[side]->yAxis->setRangeReversed(true);  // row 0 at the top, like a matrix
        installExportMenu(m_plot[side]);
        m_map[side] = new QCPColorMap(m_plot[side]->xAxis, m_plot[side]->yAxis);
        QCPColorGradient gradient(QCPColorGradient::gpHot);
        gradient.setNanHandling(QCPColorGradient::nhTransparent);
        m_map[side]->setGradient(gradient.inverted());
        m_map[side]->setDataRange(QCPRange(0, 1));  // one scale for both: weights are 0..1
        m_map[side]->setInterpolate(false);
        maps->addWidget(m_plot[side], 1);
    }
    layout->addLayout(maps, 1);
    for (auto* combo : m_run)
        connect(combo, qOverload<int>(&QComboBox::currentIndexChanged), this,
                [this] { loadSteps(); });
    for (auto* combo : {m_layer, m_head})
        connect(combo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { draw(); });
    connect(m_step, &QSlider::valueChanged, this, [this] { loadMaps(); });
}

void CompareAttention::setComparison(const QString& dbPath, const Comparison* comparison) {
    m_dbPath = dbPath;
    m_comparison = comparison;
    int layers = 1, heads = 1;
    for (int side = 0; side < 2; ++side) {
        QSignalBlocker block(m_run[side]);
        const int keep = m_run[side]->currentIndex();
        m_run[side]->clear();
        for (const CompareRun& r : comparison->runs) m_run[side]->addItem(r.label());
        const int fallback = std::min(side, int(comparison->runs.size()) - 1);
        m_run[side]->setCurrentIndex(keep >= 0 && keep < m_run[side]->count() ? keep : fallback);
    }
    for (const CompareRun& r : comparison->runs) {
        layers = std::max(layers, r.summary.layers);
        heads = std::max(heads, int(r.snap.config.model.nHeads));
    }
    QSignalBlocker blockLayer(m_layer), blockHead(m_head);
    m_layer->clear();
    for (int l = 0; l < layers; ++l) m_layer->addItem(tr("layer %1").arg(l), l);
    m_head->clear();
    for (int h = 0; h < heads; ++h) m_head->addItem(tr("head %1").arg(h), h);
    loadSteps();
}

void CompareAttention::choose(int runA, int runB, int layer, int head) {
    QSignalBlocker a(m_run[0]), b(m_run[1]), l(m_layer), h(m_head);
    m_run[0]->setCurrentIndex(runA);
    m_run[1]->setCurrentIndex(runB);
    m_layer->setCurrentIndex(m_layer->findData(layer));
    m_head->setCurrentIndex(m_head->findData(head));
    loadSteps();
}

void CompareAttention::loadSteps() {
    if (!m_comparison || m_comparison->runs.empty() || m_dbPath.isEmpty()) return;
    std::pair<int64_t, int64_t> ids;
    const auto& runs = m_comparison->runs;
    ids.first = runs[std::clamp(m_run[0]->currentIndex(), 0, int(runs.size()) - 1)].snap.runId;
    ids.second = runs[std::clamp(m_run[1]->currentIndex(), 0, int(runs.size()) - 1)].snap.runId;
    const uint64_t generation = ++m_generation;
    readStoreAsync<std::vector<int64_t>>(
        this, m_dbPath,
        [ids](RunStore& store) {
            // Steps both runs mapped: comparing across steps would compare training time.
            const auto a = store.attentionMapSteps(ids.first),
                       b = store.attentionMapSteps(ids.second);
            std::vector<int64_t> both;
            std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
            return both;
        },
        [this, generation](std::vector<int64_t> steps) {
            if (generation != m_generation) return;
            m_steps = std::move(steps);
            QSignalBlocker block(m_step);
            m_step->setRange(0, std::max(0, int(m_steps.size()) - 1));
            m_step->setValue(m_step->maximum());
            loadMaps();
        },
        [this](const QString& e) {
            m_info->setText(tr("Could not read attention maps: %1").arg(e));
        });
}

int64_t CompareAttention::shownStep() const {
    if (m_steps.empty()) return -1;
    return m_steps[std::clamp<size_t>(m_step->value(), 0, m_steps.size() - 1)];
}

void CompareAttention::setStep(int64_t step) {
    const auto it = std::upper_bound(m_steps.begin(), m_steps.end(), step);
    m_step->setValue(it == m_steps.begin() ? 0 : int(it - m_steps.begin()) - 1);
}

void CompareAttention::loadMaps() {
    const int64_t step = shownStep();
    m_stepLabel->setText(step < 0 ? tr("no shared step") : tr("step %1").arg(step));
    if (step < 0 || !m_comparison) {
        m_maps[0].clear();
        m_maps[1].clear();
        draw();
        return;
    }
    const auto& runs = m_comparison->runs;
    const int64_t a = runs[std::max(0, m_run[0]->currentIndex())].snap.runId;
    const int64_t b = runs[std::max(0, m_run[1]->currentIndex())].snap.runId;
    using Pair = std::pair<std::vector<AttentionMap>, std::vector<AttentionMap>>;
    const uint64_t generation = ++m_generation;
    readStoreAsync<Pair>(
        this, m_dbPath,
        [a, b, step](RunStore& store) {
            return Pair{store.attentionMaps(a, step), store.attentionMaps(b, step)};
        },
        [this, generation](Pair maps) {
            if (generation != m_generation) return;
            m_maps[0] = std::move(maps.first);
            m_maps[1] = std::move(maps.second);
            draw();
            emit mapsLoaded();
        },
        [this](const QString& e) {
            m_info->setText(tr("Could not read attention maps: %1").arg(e));
        });
}

const AttentionMap* CompareAttention::shown(int side) const {
    const int layer = m_layer->currentData().toInt(), head = m_head->currentData().toInt();
    for (const AttentionMap& m : m_maps[side])
        if (m.layer == layer && m.head == head && m.size > 0 &&
            m.weights.size() >= size_t(m.size) * m.size)
            return &m;
    return nullptr;
}

QString CompareAttention::infoText() const {
    return m_info->text();
}

void CompareAttention::drawSide(int side) {
    const AttentionMap* m = shown(side);
    QCPColorMap* map = m_map[side];
    if (!m) {
        map->data()->setSize(1, 1);
        map->data()->fill(qQNaN());
    } else {
        const int n = m->size;
        map->data()->setSize(n, n);
        map->data()->setRange(QCPRange(0, n - 1), QCPRange(0, n - 1));
        for (int r = 0; r < n; ++r)
            for (int c = 0; c < n; ++c) {
                const double w = m->weights[size_t(r) * n + c];
                map->data()->setCell(c, r, c > r ? qQNaN() : w);  // masked keys: transparent
            }
        m_plot[side]->xAxis->setRange(-0.5, n - 0.5);
        m_plot[side]->yAxis->setRange(-0.5, n - 0.5);
    }
    m_plot[side]->replot(QCustomPlot::rpQueuedReplot);
}

void CompareAttention::draw() {
    QStringList parts;
    for (int side = 0; side < 2; ++side) {
        drawSide(side);
        const AttentionMap* m = shown(side);
        const QString name = m_run[side]->currentText().toHtmlEscaped();
        const QColor color = compareColor(size_t(std::max(0, m_run[side]->currentIndex())));
        parts << (m ? tr("<span style='color:%1'>■</span> %2: mean row max %3, entropy %4 nats")
                          .arg(color.name(), name)
                          .arg(meanRowMax(*m), 0, 'f', 3)
                          .arg(meanRowEntropy(*m), 0, 'f', 3)
                    : tr("%1: no map at this step").arg(name));
    }
    m_info->setText(m_steps.empty() ? tr("The two runs have no attention map at a common step "
                                         "(probes.attn_map_every).")
                                    : parts.join(QStringLiteral(" &nbsp; · &nbsp; ")));
}

}  // namespace qklab::gui
