// compare_histograms.cpp — loading and drawing the cross-run histograms.
#include "compare/compare_histograms.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QVBoxLayout>
#include <algorithm>

#include "common/async_store.h"
#include "common/plot_export.h"
#include "common/plot_style.h"

namespace qklab::gui {
namespace {

QVector<double> centers(const HistBins& bins) {
    QVector<double> x;
    for (int b = 0; b < bins.count(); ++b) x << bins.center(b);
    return x;
}

QVector<double> counts(const LogitHistogram& h) {
    QVector<double> y;
    for (int64_t c : h.counts) y << double(c);
    return y;
}

QString binsText(const HistBins& b) {
    return QStringLiteral("%1 bins %2..%3%4")
        .arg(b.count())
        .arg(b.toRaw(b.lo()), 0, 'g', 4)
        .arg(b.toRaw(b.hi()), 0, 'g', 4)
        .arg(b.symlog ? QStringLiteral(" symlog") : QString());
}

}  // namespace

CompareHistograms::CompareHistograms(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    auto* row = new QHBoxLayout;
    m_mode = new QComboBox;
    m_mode->addItem(tr("side by side"), int(Mode::SideBySide));
    m_mode->addItem(tr("overlaid outlines"), int(Mode::Overlay));
    m_mode->addItem(tr("difference from the first run"), int(Mode::Difference));
    m_layer = new QComboBox;
    m_step = new QSlider(Qt::Horizontal);
    m_stepLabel = new QLabel;
    m_stepLabel->setMinimumWidth(90);
    row->addWidget(m_mode);
    row->addWidget(m_layer);
    row->addWidget(new QLabel(tr("step")));
    row->addWidget(m_step, 1);
    row->addWidget(m_stepLabel);
    layout->addLayout(row);
    m_note = new QLabel;
    m_note->setWordWrap(true);
    m_note->setObjectName(QStringLiteral("compareHistogramNote"));
    layout->addWidget(m_note);
    m_grid = new QGridLayout;
    m_grid->setSpacing(2);
    layout->addLayout(m_grid, 1);
    connect(m_mode, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { redraw(); });
    connect(m_layer, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { load(); });
    connect(m_step, &QSlider::valueChanged, this, [this] { redraw(); });
}

void CompareHistograms::setComparison(const QString& dbPath, const Comparison* comparison) {
    m_dbPath = dbPath;
    m_comparison = comparison;
    m_bins.clear();
    int layers = 0;
    for (const CompareRun& r : comparison->runs) {
        m_bins.push_back(histBinsOf(r.snap.config.probes));
        layers = std::max(layers, r.summary.layers);
    }
    // Overlay and difference compare bin by bin: only honest on identical edges.
    m_binsAgree = true;
    for (const HistBins& b : m_bins)
        m_binsAgree =
            m_binsAgree && b.edges == m_bins.front().edges && b.symlog == m_bins.front().symlog;
    const int layer = std::max(0, m_layer->currentIndex());
    QSignalBlocker block(m_layer);
    m_layer->clear();
    for (int l = 0; l < std::max(1, layers); ++l) m_layer->addItem(tr("layer %1").arg(l), l);
    m_layer->setCurrentIndex(std::min(layer, m_layer->count() - 1));
    load();
}

void CompareHistograms::setMode(Mode mode) {
    m_mode->setCurrentIndex(m_mode->findData(int(mode)));
}

void CompareHistograms::setLayer(int layer) {
    m_layer->setCurrentIndex(m_layer->findData(layer));
}

void CompareHistograms::setStep(int64_t step) {
    const auto it = std::upper_bound(m_steps.begin(), m_steps.end(), step);
    m_step->setValue(it == m_steps.begin() ? 0 : int(it - m_steps.begin()) - 1);
    redraw();
}

int64_t CompareHistograms::shownStep() const {
    if (m_steps.empty()) return -1;
    return m_steps[std::clamp<size_t>(m_step->value(), 0, m_steps.size() - 1)];
}

void CompareHistograms::load() {
    if (!m_comparison) return;
    std::vector<int64_t> ids;
    for (const CompareRun& r : m_comparison->runs) ids.push_back(r.snap.runId);
    const int layer = m_layer->currentData().toInt();
    const uint64_t generation = ++m_generation;
    using Loaded = std::vector<std::vector<LogitHistogram>>;
    readStoreAsync<Loaded>(
        this, m_dbPath,
        [ids, layer](RunStore& store) {
            Loaded out;
            for (int64_t id : ids) out.push_back(store.histograms(id, layer, -1));
            return out;
        },
        [this, generation, layer](Loaded hists) {
            if (generation != m_generation) return;
            const int64_t keep = shownStep();
            m_hists = std::move(hists);
            m_steps.clear();
            for (const auto& run : m_hists)
                for (const LogitHistogram& h : run) m_steps.push_back(h.step);
            std::sort(m_steps.begin(), m_steps.end());
            m_steps.erase(std::unique(m_steps.begin(), m_steps.end()), m_steps.end());
            QSignalBlocker block(m_step);
            m_step->setRange(0, std::max(0, int(m_steps.size()) - 1));
            if (keep >= 0)
                setStep(keep);
            else
                m_step->setValue(m_step->maximum());  // the end of training first
            redraw();
            emit loadedLayer(layer);
        },
        [this](const QString& e) { m_note->setText(tr("Could not read histograms: %1").arg(e)); });
}

const LogitHistogram* CompareHistograms::histogramOf(size_t run) const {
    const int64_t step = shownStep();
    if (run >= m_hists.size()) return nullptr;
    const LogitHistogram* best = nullptr;
    for (const LogitHistogram& h : m_hists[run])
        if (h.step <= step && (!best || h.step > best->step)) best = &h;
    return best;
}

QString CompareHistograms::noteText() const {
    return m_note->text();
}

QCustomPlot* CompareHistograms::plotAt(int index) {
    while (m_plotList.size() <= index) {
        auto* plot = new QCustomPlot(this);
        stylePlot(plot, tr("count"), /*legend=*/false);
        plot->setMinimumSize(160, 90);
        installExportMenu(plot);
        m_plotList << plot;
    }
    return m_plotList[index];
}

void CompareHistograms::redraw() {
    if (!m_comparison) return;
    m_stepLabel->setText(tr("step %1").arg(shownStep()));
    auto mode = static_cast<Mode>(m_mode->currentData().toInt());
    QString note;
    if (!m_binsAgree) {
        QStringList each;
        for (size_t r = 0; r < m_bins.size(); ++r)
            each << QStringLiteral("%1: %2").arg(m_comparison->runs[r].label(),
                                                 binsText(m_bins[r]));
        note = tr("The runs' histogram bins differ (%1): shown side by side on their own bins, "
                  "never rebinned.")
                   .arg(each.join(QStringLiteral("; ")));
        mode = Mode::SideBySide;
    }
    m_mode->setEnabled(m_binsAgree);
    for (QCustomPlot* p : m_plotList) {
        p->clearGraphs();
        m_grid->removeWidget(p);
        p->hide();
    }
    if (mode == Mode::SideBySide)
        drawSideBySide();
    else
        drawOverlay(mode == Mode::Difference);
    m_note->setText(note);
}

// One plot per run, on one count scale (every run counts the same logits). Runs on the same
// bins share the x range too; runs on different bins (symlog-64 beside linear-128) each keep
// their own x axis, with symlog ticks for symlog bins: on a shared linear +-1e4 axis a symlog
// run was one spike.
void CompareHistograms::drawSideBySide() {
    const size_t n = m_comparison->runs.size();
    const int columns = n <= 4 ? int(n) : (n <= 6 ? 3 : 4);
    double lo = 0, hi = 1, top = 1;
    for (size_t r = 0; r < n; ++r) {
        lo = r == 0 ? m_bins[r].lo() : std::min(lo, m_bins[r].lo());
        hi = r == 0 ? m_bins[r].hi() : std::max(hi, m_bins[r].hi());
        top = std::max(top, countTop(r));
    }
    for (size_t r = 0; r < n; ++r) {
        QCustomPlot* plot = plotAt(int(r));
        m_grid->addWidget(plot, int(r) / columns, int(r) % columns);
        plot->show();
        const LogitHistogram* h = histogramOf(r);
        QCPGraph* g = plot->addGraph();
        QColor color = compareColor(r);
        g->setPen(QPen(color, 1.2));
        color.setAlpha(90);
        g->setBrush(color);
        g->setLineStyle(QCPGraph::lsStepCenter);
        g->setName(m_comparison->runs[r].label());
        if (h) g->setData(centers(m_bins[r]), counts(*h), true);
        setHistogramTicker(plot->xAxis, m_bins[r]);
        plot->xAxis->setLabel(
            QStringLiteral("%1 · %2").arg(m_comparison->runs[r].label(),
                                          h ? tr("step %1").arg(h->step) : tr("no histogram yet")));
        if (m_binsAgree)
            plot->xAxis->setRange(lo, hi);
        else
            plot->xAxis->setRange(m_bins[r].lo(), m_bins[r].hi());
        plot->yAxis->setRange(0, top * 1.05);
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

// The highest bin of run r's shown histogram (1 when it has none).
double CompareHistograms::countTop(size_t r) const {
    double top = 1;
    if (const LogitHistogram* h = histogramOf(r))
        for (int64_t c : h->counts) top = std::max(top, double(c));
    return top;
}

// One plot: every run's outline on the shared bins, or each run minus the first run.
void CompareHistograms::drawOverlay(bool difference) {
    QCustomPlot* plot = plotAt(0);
    m_grid->addWidget(plot, 0, 0);
    plot->show();
    const QVector<double> x = centers(m_bins.front());
    const LogitHistogram* base = histogramOf(0);
    for (size_t r = difference ? 1 : 0; r < m_comparison->runs.size(); ++r) {
        const LogitHistogram* h = histogramOf(r);
        if (!h || (difference && !base)) continue;
        QVector<double> y = counts(*h);
        if (difference) {
            const QVector<double> b = counts(*base);
            for (int i = 0; i < y.size() && i < b.size(); ++i) y[i] -= b[i];
        }
        QCPGraph* g = plot->addGraph();
        g->setPen(QPen(compareColor(r), 1.6));
        g->setLineStyle(QCPGraph::lsStepCenter);
        g->setName(m_comparison->runs[r].label());
        g->setData(x, y, true);
    }
    setHistogramTicker(plot->xAxis, m_bins.front());
    plot->xAxis->setLabel(difference ? tr("%1 · count minus %2's")
                                           .arg(histogramAxisLabel(m_bins.front()),
                                                m_comparison->runs.front().label())
                                     : histogramAxisLabel(m_bins.front()));
    plot->rescaleAxes();
    plot->xAxis->setRange(m_bins.front().lo(), m_bins.front().hi());
    plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace qklab::gui
