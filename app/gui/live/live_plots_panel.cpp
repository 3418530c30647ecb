// live_plots_panel.cpp — building the plots, appending rows, coalesced replots, spike tips.
#include "live/live_plots_panel.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QStackedWidget>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <tuple>

#include "common/plot_cursor.h"
#include "common/plot_export.h"
#include "common/plot_style.h"
#include "common/theme.h"
#include "live/custom_scalars_plot.h"
#include "live/forecast_view.h"
#include "qklab/analysis/spikes.h"
#include "qklab/store/run_export.h"

namespace qklab::gui {

namespace {

bool finite(double v) {
    return std::isfinite(v);
}

QString spikeHtml(const Spike& s) {
    return QStringLiteral(
               "<b>Spike at step %1</b> (%2 = %3, z = %4)<br>"
               "<b>%5</b>, prescription tier %6<br>"
               "probe max logit %7 (baseline %8), q/k norm %9 (baseline %10)<br>%11")
        .arg(s.step)
        .arg(QString::fromStdString(s.metric), formatNumber(s.value), formatNumber(s.zScore),
             QString::fromLatin1(toString(s.kind)))
        .arg(s.tier)
        .arg(formatNumber(s.probeMaxLogit), formatNumber(s.baselineMaxLogit),
             formatNumber(s.probeQkNorm), formatNumber(s.baselineQkNorm),
             QString::fromStdString(s.diagnosis)
                 .toHtmlEscaped()
                 .replace(QStringLiteral("\n\n"), QStringLiteral("<br><br>")));
}

// A line needs two points: a curve with one (a lesson's callout at step 0, the first probe)
// would draw nothing, so it gets a dot until its second point arrives.
void showLonePoint(QCPGraph* g) {
    const char* key = "qklabLoneDot";
    const bool lone = g->dataCount() == 1 && g->lineStyle() != QCPGraph::lsNone;
    if (lone && g->scatterStyle().isNone()) {
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 7));
        g->setProperty(key, true);
    } else if (!lone && g->property(key).toBool()) {
        g->setScatterStyle(QCPScatterStyle());
        g->setProperty(key, false);
    }
}

// The full title when it fits the plot's width, else the short one.
void fitTitle(QCustomPlot* plot) {
    auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0));
    if (!title || !title->property("fullTitle").isValid()) return;
    const QString full = title->property("fullTitle").toString();
    const QString brief = title->property("shortTitle").toString();
    const bool fits = QFontMetrics(title->font()).horizontalAdvance(full) + 8 <= plot->width();
    const QString want = fits || brief.isEmpty() ? full : brief;
    if (title->text() != want) title->setText(want);
}

}  // namespace

LivePlotsPanel::LivePlotsPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    m_hover = new HoverCursor(this);
    QHBoxLayout* header = buildHeader();
    layout->addLayout(header);
    m_forecastLine = new QLabel;
    m_forecastLine->setObjectName(QStringLiteral("forecastLine"));
    m_forecastLine->setWordWrap(true);
    m_forecastLine->setVisible(false);
    layout->addWidget(m_forecastLine);
    // The plots scroll rather than shrink below a readable height (seven plots in 60 px
    // rows at 1280x720 had their ticks overlap); with no run shown, one first action instead.
    auto* plotArea = new QWidget;
    m_grid = new QGridLayout(plotArea);
    m_grid->setContentsMargins(0, 0, 0, 0);
    m_grid->setSpacing(2);
    auto* scroll = new QScrollArea;
    scroll->setObjectName(QStringLiteral("livePlotsScroll"));
    scroll->setWidget(plotArea);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    m_pages = new QStackedWidget;
    m_pages->addWidget(buildEmptyState());
    m_pages->addWidget(scroll);
    layout->addWidget(m_pages, 1);
    buildLossAndGradientPlots();
    buildLanesPlot();
    buildProbePlots();
    buildOutputLogitPlot();
    // What an external run logged besides qklab's metrics ("tokens_seen", "train/acc").
    m_custom = std::make_unique<CustomScalarsPlot>(
        makePlot(tr("Custom scalars (logged by the run)"), tr("value"), tr("Custom scalars")),
        [this] { replotNow(); });
    header->insertWidget(1, m_custom->choice());
    relayoutPlots();
    refreshEmptyState();

    m_replotTimer = new QTimer(this);
    m_replotTimer->setSingleShot(true);
    m_replotTimer->setInterval(50);
    connect(m_replotTimer, &QTimer::timeout, this, &LivePlotsPanel::replotNow);
    connect(m_follow, &QCheckBox::toggled, this, [this](bool on) {
        if (on) scheduleReplot();
    });
    connect(m_logLogits, &QCheckBox::toggled, this, [this](bool on) {
        setLogAxis(m_logits->yAxis, on);
        scheduleReplot();
    });
    connect(m_xChoice, qOverload<int>(&QComboBox::currentIndexChanged), this,
            [this] { redrawForXAxis(); });
    m_hover->setReadout([this](QCustomPlot* plot, double x) { return readout(plot, x); });
    setupThresholds();
    for (QCustomPlot* p : {m_logits, m_norms, m_entropy}) p->legend->setVisible(false);
}

LivePlotsPanel::~LivePlotsPanel() = default;

QHBoxLayout* LivePlotsPanel::buildHeader() {
    auto* top = new QHBoxLayout;
    m_header = new QLabel(tr("No run shown. Start a run or pick one in the run list."));
    m_header->setObjectName(QStringLiteral("liveHeader"));
    // A long run name or settings line wraps instead of widening the window past a
    // 1280x720 screen.
    m_header->setWordWrap(true);
    m_header->setMinimumWidth(120);
    m_follow = new QCheckBox(tr("Follow"));
    m_follow->setToolTip(tr("Keep the whole run in view as it grows (off after you zoom or drag)"));
    m_follow->setChecked(true);
    m_logLogits = new QCheckBox(tr("Log logits"));
    m_logLogits->setChecked(true);
    m_logLogits->setToolTip(
        tr("Raw logits without QK-norm reach 10^3 and more: log scale shows both regimes"));
    m_xChoice = makeXAxisChoice(this);
    top->addWidget(m_header, 1);
    top->addWidget(m_xChoice);
    top->addWidget(m_logLogits);
    top->addWidget(m_follow);

    return top;
}

// What a newcomer sees first: one button that trains the healthy example, and where else
// to go.
QWidget* LivePlotsPanel::buildEmptyState() {
    m_emptyState = new QWidget;
    m_emptyState->setObjectName(QStringLiteral("firstRunPanel"));
    auto* column = new QWidget;  // a column of text a reader's eye can follow, centred
    column->setMaximumWidth(560);
    auto* v = new QVBoxLayout(column);
    v->setSpacing(12);
    auto* title = new QLabel(tr("Train a first run"));
    QFont big = title->font();
    big.setBold(true);
    big.setPointSizeF(big.pointSizeF() * 1.6);
    title->setFont(big);
    auto* text = new QLabel(
        tr("A small byte-level model (2 layers, 4 heads) trains for 150 steps at a modest "
           "learning rate. Its loss, gradients and attention logits are drawn here as it trains: "
           "the healthy picture the other lessons compare against."));
    text->setWordWrap(true);
    auto* start = new QPushButton(tr("▶  Train the healthy example"));
    start->setObjectName(QStringLiteral("firstRunButton"));
    QFont buttonFont = start->font();
    buttonFont.setPointSizeF(buttonFont.pointSizeF() * 1.3);
    start->setFont(buttonFont);
    start->setMinimumHeight(start->sizeHint().height() * 3 / 2);
    connect(start, &QPushButton::clicked, this, &LivePlotsPanel::firstRunRequested);
    auto* other = new QLabel(
        tr("Or pick a stored run in the Runs list, set up your own run on the left, or open a "
           "lesson (File ▸ Open lesson…)."));
    other->setWordWrap(true);
    other->setEnabled(false);  // the quieter colour: a second choice
    v->addWidget(title);
    v->addWidget(text);
    v->addWidget(start, 0, Qt::AlignLeft);
    v->addWidget(other);
    auto* rows = new QVBoxLayout(m_emptyState);
    auto* middle = new QHBoxLayout;
    middle->addStretch(1);
    middle->addWidget(column, 4);
    middle->addStretch(1);
    rows->addStretch(1);
    rows->addLayout(middle);
    rows->addStretch(2);
    return m_emptyState;
}

bool LivePlotsPanel::showsEmptyState() const {
    return m_pages->currentWidget() == m_emptyState;
}

void LivePlotsPanel::refreshEmptyState() {
    m_pages->setCurrentIndex(m_run.runId == 0 ? 0 : 1);
}

void LivePlotsPanel::buildLossAndGradientPlots() {
    m_loss = makePlot(tr("Loss (train, validation, spikes)"), tr("loss (nats/token)"), tr("Loss"));
    m_trainLoss = stepGraph(m_loss, "loss");
    m_trainLoss->setName(tr("train"));
    m_trainLoss->setPen(QPen(QColor(31, 119, 180), 1.2));
    QCPGraph* valLoss = stepGraph(m_loss, "val_loss");
    valLoss->setName(tr("validation"));
    valLoss->setPen(QPen(QColor(44, 160, 44), 2));
    valLoss->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
    m_lossSpikes = m_loss->addGraph();
    m_lossSpikes->setName(tr("spike (hover)"));
    m_lossSpikes->setLineStyle(QCPGraph::lsNone);
    m_lossSpikes->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssDiamond, QColor(200, 0, 0), QColor(255, 80, 80), 11));
    excludeFromReadout(m_lossSpikes);

    m_grad = makePlot(tr("Gradient norm (before clipping), update norm"), tr("L2 norm"),
                      tr("Grad · update norm"));
    setLogAxis(m_grad->yAxis, true);
    QCPGraph* gradNorm = stepGraph(m_grad, "grad_norm");
    gradNorm->setName(tr("grad norm"));
    gradNorm->setPen(QPen(QColor(148, 103, 189), 1.2));
    m_gradSpikes = m_grad->addGraph();
    m_gradSpikes->setName(tr("spike (hover)"));
    m_gradSpikes->setLineStyle(QCPGraph::lsNone);
    m_gradSpikes->setScatterStyle(m_lossSpikes->scatterStyle());
    excludeFromReadout(m_gradSpikes);
    // After the spikes (graph 1). What the optimizer did with the gradient: an update that grows
    // while the gradient does not is Adam's own instability, ahead of a loss spike.
    QCPGraph* updateNorm = stepGraph(m_grad, "update_norm");
    updateNorm->setName(tr("update norm"));
    updateNorm->setPen(QPen(QColor(255, 127, 14), 1.2));
}

// Three lanes on one axis rect: LR on the left, alpha and softcap C on two right axes, so an
// intervention's effect on each is visible at the same x.
void LivePlotsPanel::buildLanesPlot() {
    m_lanes =
        makePlot(tr("LR · QK-norm alpha · softcap C"), tr("learning rate"), tr("LR · alpha · C"));
    QCPGraph* lr = stepGraph(m_lanes, "lr");
    lr->setName(tr("LR"));
    lr->setPen(QPen(QColor(31, 119, 180), 1.5));
    m_lanes->yAxis2->setVisible(true);
    m_lanes->yAxis2->setLabel(tr("alpha"));
    m_lanes->yAxis2->setRange(-0.05, 1.05);
    QCPGraph* alpha = stepGraph(m_lanes, "alpha", m_lanes->yAxis2);
    alpha->setName(tr("alpha (1 = normed)"));
    alpha->setPen(QPen(QColor(44, 160, 44), 1.5));
    QCPAxis* capAxis = m_lanes->axisRect()->addAxis(QCPAxis::atRight);
    capAxis->setLabel(tr("softcap C"));
    capAxis->setTickLabelFont(m_lanes->yAxis->tickLabelFont());
    capAxis->setLabelFont(m_lanes->yAxis->labelFont());
    QCPGraph* softcapC = stepGraph(m_lanes, "softcap_c", capAxis);
    softcapC->setName(tr("softcap C (0 = off)"));
    softcapC->setPen(QPen(QColor(214, 39, 40), 1.5));
    themePlot(m_lanes);  // the axis added after makePlot()
}

void LivePlotsPanel::buildProbePlots() {
    m_logits = makePlot(tr("Logits per layer: max, p99 (light), capped (dark)"), tr("logit"),
                        tr("Logits per layer"));
    setLogAxis(m_logits->yAxis, true);
    m_norms = makePlot(tr("q, k (light) norm p90 per layer; normed (dark)"), tr("L2 norm"),
                       tr("q, k norm p90"));
    setLogAxis(m_norms->yAxis, true);
    // The attention sink beside the entropy: a head that parks its weight on position 0 has
    // low entropy too, and gated attention (attention.gate) is said to remove the sink.
    m_entropy = makePlot(tr("Attention entropy (→ 0: one-hot); first-token share (light, right)"),
                         tr("entropy (nats)"), tr("Entropy (→ 0: one-hot)"));
    m_entropy->yAxis2->setVisible(true);
    m_entropy->yAxis2->setLabel(tr("first-token share"));
    m_entropy->yAxis2->setRange(-0.02, 1.02);
    themePlot(m_entropy);  // the right axis shown after makePlot()
    m_clips = std::make_unique<QkClipMarks>(m_logits);
}

// Output-logit divergence (Wortsman et al. 2023): log Z of the LM head drifts away from 0
// when nothing anchors it (z-loss does); mean (log Z)² on the right, the quantity z-loss would
// penalise, recorded whether z-loss is on or off. The LM head's max logit is named so: beside
// the attention plots' "max logit" lines a bare "max logit" read as theirs.
void LivePlotsPanel::buildOutputLogitPlot() {
    m_outLogits = makePlot(tr("Output logits (LM head): log Z mean, max; max logit; ‖μ‖; "
                              "mean (log Z)² (right)"),
                           tr("log Z, logit"), tr("Output logits (LM head)"));
    // ‖μ‖, the mean LM-head row (output-embedding centring, arXiv 2601.02031): its drift sets
    // the mean output logit μ·h; empty before schema 15.
    const std::pair<const char*, QString> lanes[] = {{"logz_mean", tr("log Z mean")},
                                                     {"logz_max", tr("log Z max")},
                                                     {"out_logit_max", tr("LM-head max logit")},
                                                     {"mu_norm", tr("‖μ‖ mean LM-head row")}};
    const QColor colors[] = {QColor(31, 119, 180), QColor(174, 199, 232), QColor(214, 39, 40),
                             QColor(44, 160, 44)};
    for (size_t i = 0; i < std::size(lanes); ++i) {
        QCPGraph* g = stepGraph(m_outLogits, lanes[i].first);
        g->setName(lanes[i].second);
        g->setPen(QPen(colors[i], 1.2));
    }
    m_outLogits->yAxis2->setVisible(true);
    m_outLogits->yAxis2->setLabel(tr("mean (log Z)²"));
    QCPGraph* term = stepGraph(m_outLogits, "z_loss_term", m_outLogits->yAxis2);
    term->setName(tr("mean (log Z)² (right)"));
    term->setPen(QPen(QColor(127, 127, 127), 1));
    themePlot(m_outLogits);  // the right axis shown after makePlot()
}

QCustomPlot* LivePlotsPanel::makePlot(const QString& title, const QString& yLabel,
                                      const QString& shortTitle) {
    auto* plot = new QCustomPlot(this);
    // The layout may make a plot narrower than its full title and legend: the title then
    // shortens (fitTitle) and the legend takes more rows, instead of the window growing past
    // a 1024x768 projector. At least kReadableHeight high: below it the tick labels overlap,
    // and the plots scroll instead.
    stylePlot(plot, yLabel);
    plot->setMinimumSize(200, kReadableHeight);
    plot->xAxis->setLabel(tr("step"));  // every x-axis says what it counts
    plot->plotLayout()->insertRow(0);
    QFont f = font();
    f.setBold(true);
    f.setPointSizeF(std::max(7.0, f.pointSizeF() - 1));
    auto* titleElement = new QCPTextElement(plot, title, f);
    titleElement->setProperty("fullTitle", title);
    titleElement->setProperty("shortTitle", shortTitle);
    plot->plotLayout()->addElement(0, 0, titleElement);
    placeLegendOutside(plot, 1);  // under the title, never over the data
    themePlot(plot);              // the title element too
    m_hover->addPlot(plot);
    installExportMenu(plot, [this] { return &m_run; });
    connect(plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            [this, plot] { syncXRanges(plot); });
    // A zoom or a drag means the user wants to look somewhere: stop following. A click alone
    // (to read a value, or to focus the window) does not: it used to freeze the view at the
    // steps shown while training went on.
    connect(plot, &QCustomPlot::mousePress, this, [this, plot](QMouseEvent* e) {
        m_pressPos = e->pos();
        showSpikeTip(plot, e->pos(), true);
    });
    connect(plot, &QCustomPlot::mouseWheel, this, [this] { m_follow->setChecked(false); });
    connect(plot, &QCustomPlot::mouseMove, this, [this, plot](QMouseEvent* e) {
        const bool dragging = (e->buttons() & Qt::LeftButton) &&
                              (e->pos() - m_pressPos).manhattanLength() > kDragPixels;
        if (dragging) m_follow->setChecked(false);
        // A spike marker explains itself, and an event's mark what its change did; anywhere
        // else the cursor reads every curve.
        if (showSpikeTip(plot, e->pos(), false)) {
            m_hover->hide();
        } else if (const QString tip = eventTipAt(plot, e->pos()); !tip.isEmpty()) {
            QToolTip::showText(plot->mapToGlobal(e->pos()), tip, plot);
            m_hover->hide();
        } else {
            m_hover->hover(plot, e->pos());
        }
    });
    m_plots << plot;
    return plot;
}

QCPGraph* LivePlotsPanel::stepGraph(QCustomPlot* plot, const char* column, QCPAxis* valueAxis) {
    QCPGraph* g = plot->addGraph(plot->xAxis, valueAxis ? valueAxis : plot->yAxis);
    m_stepGraphs.emplace_back(&stepMetricColumn(column), g);
    return g;
}

QString LivePlotsPanel::layerKey(QCustomPlot* plot, const QString& metric, int layer) {
    return QStringLiteral("%1/%2/%3").arg(quintptr(plot)).arg(metric).arg(layer);
}

QCPGraph* LivePlotsPanel::layerGraph(QCustomPlot* plot, const QString& metric, int layer) {
    const QString key = layerKey(plot, metric, layer);
    if (QCPGraph* g = m_layerGraphs.value(key)) return g;
    // The first-token share (0..1) is read on the entropy plot's right axis.
    const bool right = metric == QLatin1String("first_token_share");
    QCPGraph* g = plot->addGraph(plot->xAxis, right ? plot->yAxis2 : plot->yAxis);
    // Solid pens only: QPainter dashes a 10k-point polyline ~10x slower than it draws it solid
    // (a dotted p99 line made one replot of a 100k-step run take 250 ms). Secondary series are
    // told apart by lightness instead.
    QColor color = layerColor(layer);
    if (metric == QLatin1String("p99_raw") || metric == QLatin1String("k") || right)
        color = color.lighter(160);
    if (metric == QLatin1String("max_capped") || metric.endsWith(QLatin1String("_normed")))
        color = color.darker(170);
    if (metric == QLatin1String("k_normed")) color = color.lighter(130);
    g->setPen(QPen(color,
                   metric == QLatin1String("max_raw") || metric == QLatin1String("q") ? 1.6 : 1.1));
    QString name = QStringLiteral("L%1 %2").arg(layer).arg(QString(metric).replace('_', ' '));
    g->setName(name);
    m_layerGraphs.insert(key, g);
    plot->legend->setVisible(true);
    return g;
}

void LivePlotsPanel::setupThresholds() {
    clearItems(m_logits, QStringLiteral("threshold"));
    addThresholdLine(m_logits, kHealthyMaxLogit, QColor(230, 150, 0),
                     tr("healthy max < %1").arg(kHealthyMaxLogit));
    addThresholdLine(m_logits, kInterveneMaxLogit, QColor(200, 0, 0),
                     tr("intervene > %1").arg(kInterveneMaxLogit));
    // With RMS QK-norm and s = 1/sqrt(d_qk), |logit| <= sqrt(d_qk) (d_qk = d_head, plus d_rope
    // under MLA): draw the bound the normed run must stay under.
    const RunConfig& c = m_run.config;
    if (c.attention.qkNorm == QkNormVariant::Rms && c.attention.qkNormOn != QkNormTarget::K &&
        c.model.nHeads > 0 && !c.attention.scale)
        addThresholdLine(m_logits, std::sqrt(double(c.dQk())), QColor(90, 90, 90),
                         c.attention.kind == AttentionKind::Mla
                             ? tr("QK-norm bound √(d_head+d_rope)")
                             : tr("QK-norm bound √d_head"));
}

void LivePlotsPanel::clear() {
    for (QCustomPlot* p : m_plots) {
        for (int i = 0; i < p->graphCount(); ++i) p->graph(i)->data()->clear();
        clearItems(p, QStringLiteral("event"));
        clearItems(p, QStringLiteral("cursor"));
    }
    for (QCPGraph* g : m_layerGraphs) g->parentPlot()->removeGraph(g);
    m_layerGraphs.clear();
    m_clips->clear();
    m_custom->clear();
    // Per-layer plots have no series until probes arrive: an empty legend box is noise.
    for (QCustomPlot* p : {m_logits, m_norms, m_entropy}) p->legend->setVisible(false);
    m_run = RunSnapshot{};
    refreshEmptyState();
    m_x = StepToX(xAxisKindOf(m_xChoice), 1, 1);
    m_hover->hide();
    m_cursorStep = -1;
    m_stepLimit = -1;
    m_probeLimit = -1;
    m_clipLimit = -1;
    m_follow->setChecked(true);
    showCustomScalars();
    refreshForecast();
}

void LivePlotsPanel::showRun(RunSnapshot snapshot) {
    clear();
    m_run = std::move(snapshot);
    refreshEmptyState();
    resetXMap();
    m_status = QString::fromLatin1(toString(m_run.info.status));
    refreshHeader();
    m_stepLimit = m_run.steps.empty() ? -1 : m_run.steps.back().step;
    for (const ProbeStats& p : m_run.probes) m_probeLimit = std::max(m_probeLimit, p.step);
    addSteps(m_run.steps, 0);
    addProbes(m_run.probes, 0);
    for (const QkClip& c : m_run.clips) m_clipLimit = std::max(m_clipLimit, c.step);
    m_clips->set(m_run.clips, xOfStep());
    showCustomScalars();
    setupThresholds();
    refreshSpikes();
    refreshForecast();
    m_markersDirty = true;
    replotNow();
}

void LivePlotsPanel::startLive(int64_t runId, const RunConfig& config, const QString& name) {
    clear();
    m_run.runId = runId;
    m_run.config = config;
    m_run.info.id = runId;
    m_run.info.name = name.toStdString();
    refreshEmptyState();
    resetXMap();
    m_status = tr("training");
    refreshHeader();
    setupThresholds();
    m_markersDirty = true;
    replotNow();
}

void LivePlotsPanel::appendBatch(const LiveBatch& batch) {
    if (batch.runId != m_run.runId || m_run.runId == 0) return;
    const size_t stepFrom = m_run.steps.size();
    for (const StepMetrics& m : batch.steps)
        if (m.step > m_stepLimit) m_run.steps.push_back(m);
    addSteps(m_run.steps, stepFrom);
    const size_t probeFrom = m_run.probes.size();
    for (const ProbeStats& p : batch.probes)
        if (p.head < 0 && p.step > m_probeLimit) m_run.probes.push_back(p);
    addProbes(m_run.probes, probeFrom);
    std::vector<QkClip> clips;
    for (const QkClip& c : batch.clips)
        if (c.step > m_clipLimit) clips.push_back(c);
    if (!clips.empty()) {
        m_run.clips.insert(m_run.clips.end(), clips.begin(), clips.end());
        m_clips->add(clips, xOfStep());
    }
    if (!batch.spikes.isEmpty()) {
        m_run.spikes.insert(m_run.spikes.end(), batch.spikes.begin(), batch.spikes.end());
        refreshSpikes();
    }
    if (!batch.events.isEmpty()) {
        m_run.events.insert(m_run.events.end(), batch.events.begin(), batch.events.end());
        m_markersDirty = true;
        refreshHeader();
    }
    if (!batch.changeReports.isEmpty()) {
        m_run.changeReports.insert(m_run.changeReports.end(), batch.changeReports.begin(),
                                   batch.changeReports.end());
        m_markersDirty = true;
    }
    if (!batch.forecasts.isEmpty()) {
        m_run.forecasts.insert(m_run.forecasts.end(), batch.forecasts.begin(),
                               batch.forecasts.end());
        m_markersDirty = true;
    }
    if (!batch.forecasts.isEmpty() || (!batch.steps.isEmpty() && !m_run.forecasts.empty()))
        refreshForecast();  // the countdown moves with the steps
    scheduleReplot();
}

void LivePlotsPanel::addSteps(const std::vector<StepMetrics>& steps, size_t from) {
    if (steps.size() <= from) return;
    m_x.add(steps, from);
    QVector<double> x;
    x.reserve(int(steps.size() - from));
    for (size_t i = from; i < steps.size(); ++i) x << m_x(double(steps[i].step));
    for (const auto& [column, graph] : m_stepGraphs) {
        // NaN/inf (a diverged step), and on a log axis values <= 0, become gaps rather than
        // poisoning the axis range; a step without a value (not validated) has no point.
        const bool log = graph->valueAxis()->scaleType() == QCPAxis::stLogarithmic;
        QVector<double> keys, values;
        for (size_t i = from; i < steps.size(); ++i) {
            const std::optional<double> v = numberOf(column->get(steps[i]));
            if (!v) continue;
            keys << x[int(i - from)];
            values << (finite(*v) && (!log || *v > 0) ? *v : qQNaN());
        }
        if (!keys.isEmpty()) graph->addData(keys, values, true);
    }
}

void LivePlotsPanel::addProbes(const std::vector<ProbeStats>& probes, size_t from) {
    const bool capped = m_run.config.attention.softcap.kind != SoftcapKind::None;
    for (size_t i = from; i < probes.size(); ++i) {
        const ProbeStats& p = probes[i];
        if (p.head >= 0) continue;
        const double s = m_x(double(p.step));
        const int l = p.layer;
        auto add = [&](QCustomPlot* plot, const char* metric, double v) {
            if (finite(v)) layerGraph(plot, QString::fromLatin1(metric), l)->addData(s, v);
        };
        add(m_logits, "max_raw", p.logitMaxRaw);
        add(m_logits, "p99_raw", p.logitP99Raw);
        if (capped || p.logitMaxCapped != p.logitMaxRaw)
            add(m_logits, "max_capped", p.logitMaxCapped);
        add(m_norms, "q", p.qRawNormP90);
        add(m_norms, "k", p.kRawNormP90);
        // Under QK-norm the vectors the dot product sees have other lengths than the
        // projections' (RMS norm: exactly sqrt(d_head)); those lanes appear, dark, once they
        // differ, and stay for the rest of the run (a switch-off shows them rejoin).
        for (const auto& [metric, normed, raw] :
             {std::tuple{"q_normed", p.qNormP90, p.qRawNormP90},
              std::tuple{"k_normed", p.kNormP90, p.kRawNormP90}})
            if (std::fabs(normed - raw) > 1e-6 * std::max(1.0, std::fabs(raw)) ||
                m_layerGraphs.contains(layerKey(m_norms, QString::fromLatin1(metric), l)))
                add(m_norms, metric, normed);
        add(m_entropy, "entropy", p.entropy);
        add(m_entropy, "first_token_share", p.firstTokenShare);
    }
}

void LivePlotsPanel::showCustomScalars() {
    if (m_run.customScalars.empty())
        m_custom->clear();
    else
        m_custom->set(m_run.customScalars, xOfStep());
    // Laid out again only when the plot comes or goes: qklab's own runs keep seven plots.
    if (m_custom->plot()->isHidden() != m_custom->empty()) relayoutPlots();
}

void LivePlotsPanel::refreshSpikes() {
    m_lossSpikes->data()->clear();
    m_gradSpikes->data()->clear();
    for (const Spike& s : m_run.spikes) {
        if (!finite(s.value)) continue;
        (s.metric == "grad_norm" ? m_gradSpikes : m_lossSpikes)
            ->addData(m_x(double(s.step)), s.value);
    }
    scheduleReplot();
}

void LivePlotsPanel::refreshMarkers() {
    for (QCustomPlot* p : m_plots) {
        setEventMarkers(
            p, m_run.events, m_run.config.schedule.steps, [this](double step) { return m_x(step); },
            m_run.changeReports);
        setStepCursor(p, m_cursorStep < 0 ? -1.0 : m_x(m_cursorStep));
    }
    setForecastExtensions(m_logits, m_run.forecasts, [this](double step) { return m_x(step); });
    m_markersDirty = false;
}

void LivePlotsPanel::refreshForecast() {
    m_onsets.clear();
    if (m_run.forecasts.empty()) {
        m_forecastLine->clear();
        m_forecastLine->setVisible(false);
        return;
    }
    const int64_t latest = latestStep();
    m_onsets = onsetsOf(m_run.steps, m_run.probes, m_run.config.spikes);
    const std::vector<Onset>& onsets = m_onsets;
    // The latest forecast still open, else the first (the earliest warning) with what came of
    // it.
    const Forecast* shown = &m_run.forecasts.front();
    ForecastOutcome outcome = forecastOutcome(*shown, onsets, latest);
    for (auto it = m_run.forecasts.rbegin(); it != m_run.forecasts.rend(); ++it) {
        const ForecastOutcome o = forecastOutcome(*it, onsets, latest);
        if (o.state != ForecastOutcome::State::Pending) continue;
        shown = &*it;
        outcome = o;
        break;
    }
    m_forecastLine->setText(forecastLineText(*shown, outcome, latest));
    m_forecastLine->setToolTip(QString::fromStdString(shown->text));
    m_forecastLine->setVisible(true);
}

QString LivePlotsPanel::forecastText() const {
    return m_forecastLine->isHidden() ? QString() : m_forecastLine->text();
}

QCustomPlot* LivePlotsPanel::plotForMetric(const QString& metric) const {
    for (const auto& [column, graph] : m_stepGraphs)
        if (metric == QLatin1String(column->name)) return graph->parentPlot();
    if (metric == QLatin1String("entropy") || metric == QLatin1String("first_token_share"))
        return m_entropy;  // the share is drawn on its right axis
    if (metric.startsWith(QLatin1String("q_")) || metric.startsWith(QLatin1String("k_")))
        return m_norms;
    return m_logits;  // logit_* and frac_at_cap (the logits' story), and anything unknown
}

void LivePlotsPanel::setLessonMetrics(const QStringList& metrics) {
    m_lessonPlots.clear();
    for (const QString& metric : metrics)
        if (QCustomPlot* plot = plotForMetric(metric); !m_lessonPlots.contains(plot))
            m_lessonPlots << plot;
    relayoutPlots();
}

QList<QCustomPlot*> LivePlotsPanel::shownPlots() const {
    // Reading order: the loss first, the logits beside it, as the everyday grid has them.
    QList<QCustomPlot*> order = {m_loss,  m_logits,  m_grad,     m_norms,
                                 m_lanes, m_entropy, m_outLogits};
    if (!m_custom->empty()) order << m_custom->plot();
    if (!presenterActive() || m_lessonPlots.isEmpty()) return order;
    QList<QCustomPlot*> shown;
    for (QCustomPlot* plot : order)
        if (m_lessonPlots.contains(plot)) shown << plot;
    return shown;
}

void LivePlotsPanel::relayoutPlots() {
    for (QCustomPlot* plot : m_plots) {
        m_grid->removeWidget(plot);
        plot->hide();
    }
    const QList<QCustomPlot*> shown = shownPlots();
    // One named plot takes the whole width; otherwise two to a row, and a last odd one
    // spans both columns.
    const int columns = shown.size() == 1 ? 1 : 2;
    for (int i = 0; i < shown.size(); ++i) {
        const bool lastOdd = i + 1 == shown.size() && i % columns == 0;
        m_grid->addWidget(shown[i], i / columns, i % columns, 1, lastOdd ? columns : 1);
        shown[i]->show();
    }
    const int rows = (int(shown.size()) + columns - 1) / columns;
    for (int r = 0; r < std::max(rows, m_grid->rowCount()); ++r)
        m_grid->setRowStretch(r, r < rows ? 1 : 0);
    // Equal columns: left to size hints, the per-layer plots (no legend before their first
    // probe) were drawn at a fraction of their cell beside the full-width loss plots.
    m_grid->setColumnStretch(0, 1);
    m_grid->setColumnStretch(1, columns == 2 ? 1 : 0);
}

int LivePlotsPanel::lossPointCount() const {
    return m_trainLoss->dataCount();
}

void LivePlotsPanel::scheduleReplot() {
    // Not restarted when already pending: under a steady stream of batches the plots still
    // refresh every 50 ms instead of waiting for a pause in the stream.
    if (!m_replotTimer->isActive()) m_replotTimer->start();
}

void LivePlotsPanel::replotNow() {
    m_replotTimer->stop();
    if (m_markersDirty) refreshMarkers();
    const bool follow = m_follow->isChecked();
    double maxX = 1;
    if (!m_run.steps.empty())
        maxX = m_x.kind() == XAxisKind::Step ? std::max(1.0, double(m_run.steps.back().step) + 1)
                                             : m_x(double(m_run.steps.back().step));
    m_syncing = true;
    for (QCustomPlot* p : m_plots) {
        // A long noisy series becomes a dense band of near-vertical segments; antialiasing
        // them costs ~100x more than drawing them aliased (a 100k-step grad-norm plot took
        // 230 ms). At that density nobody can see the difference.
        // Same for pens wider than 1 px, which QPainter strokes as polygons.
        for (int i = 0; i < p->graphCount(); ++i) {
            QCPGraph* g = p->graph(i);
            const bool dense = g->dataCount() >= 4000;
            g->setAntialiased(!dense);
            if (!g->property("baseWidth").isValid()) g->setProperty("baseWidth", g->pen().widthF());
            QPen pen = g->pen();
            // Presenter mode draws every curve thick whatever its length: readable from the
            // back of a room matters more there than the replot time of a 100k-step run.
            const double base = g->property("baseWidth").toDouble();
            pen.setWidthF(presenterActive() ? curvePenWidth(base) : dense ? 0 : base);
            g->setPen(pen);
            showLonePoint(g);
        }
        if (follow && maxX > 0) p->xAxis->setRange(0, maxX);
        fitLegendColumns(p);
        fitTitle(p);
        for (QCPAxis* axis : p->axisRect()->axes(QCPAxis::atLeft | QCPAxis::atRight)) {
            // alpha and the first-token share keep their fixed 0..1 bands
            if (axis == m_lanes->yAxis2 || axis == m_entropy->yAxis2) continue;
            // When zoomed, fit y to what is visible rather than to the whole run.
            fitValueAxis(axis, follow ? QCPRange() : p->xAxis->range());
        }
        p->replot(QCustomPlot::rpQueuedReplot);
    }
    // Both thresholds stay in view so a healthy run is seen to be *below* them.
    QCPRange lr = m_logits->yAxis->range();
    if (lr.upper < kInterveneMaxLogit * 2.5) {
        m_logits->yAxis->setRange(lr.lower, kInterveneMaxLogit * 2.5);
        m_logits->replot(QCustomPlot::rpQueuedReplot);
    }
    m_syncing = false;
}

void LivePlotsPanel::fitValueAxis(QCPAxis* axis, const QCPRange& keys) {
    // Computed here rather than with QCPAxis::rescale(), which keeps the previous size for a
    // flat series; padding that on every replot made a constant lane's range grow without end.
    const bool log = axis->scaleType() == QCPAxis::stLogarithmic;
    bool found = false;
    QCPRange total;
    for (QCPGraph* g : axis->graphs()) {
        if (!g->visible() || g->dataCount() == 0) continue;
        bool f = false;
        const QCPRange r = g->getValueRange(f, log ? QCP::sdPositive : QCP::sdBoth, keys);
        if (!f) continue;
        total =
            found ? QCPRange(std::min(total.lower, r.lower), std::max(total.upper, r.upper)) : r;
        found = true;
    }
    if (!found) return;
    if (log) {
        axis->setRange(total.lower / 1.3, total.upper * 1.3);
    } else if (total.size() <= 1e-12 * std::max(1.0, std::fabs(total.upper))) {
        const double pad = total.upper != 0 ? std::fabs(total.upper) * 0.1 : 1.0;
        axis->setRange(total.lower - pad, total.upper + pad);
    } else {
        const double pad = total.size() * 0.05;
        axis->setRange(total.lower - pad, total.upper + pad);
    }
}

void LivePlotsPanel::setRunStatus(int64_t runId, const QString& status) {
    if (runId != m_run.runId) return;
    m_status = status;
    refreshHeader();
}

// "Run 3 “x” — training · qk_norm=none, lr 0.03, … · then qk_norm rms @150": the settings the
// run started with and its config's planned events (keySettings), then every intervention
// since, the latest last, so the header never claims a setting the run has left.
void LivePlotsPanel::refreshHeader() {
    const QString name = m_run.info.name.empty() ? QStringLiteral("run-%1").arg(m_run.runId)
                                                 : QString::fromStdString(m_run.info.name);
    // A run trained in the user's own loop says so first: its plots hold only what it logged.
    const bool external = trainedOutsideQklab(m_run.info);
    const QString source =
        external ? tr("trained outside qklab: %1 · ").arg(QString::fromStdString(m_run.info.source))
                 : QString();
    QString text = tr("Run %1 “%2” — %3 · %4%5")
                       .arg(m_run.runId)
                       .arg(name, m_status, source,
                            keySettings(m_run.config, external, unobservedConfigKeys(m_run.info)));
    QStringList changes;  // interventions: keySettings() names the config's own events
    for (const EventRecord& e : m_run.events)
        if (e.source == "user") changes << tr("%1 @%2").arg(eventLabel(e)).arg(e.step);
    constexpr int kShown = 3;  // a long schedule of events would fill the header
    if (changes.size() > kShown) {
        const int hidden = int(changes.size()) - kShown;
        changes = changes.mid(hidden);
        changes.prepend(tr("%n earlier change(s)", nullptr, hidden));
    }
    if (!changes.isEmpty()) text += tr(" · then ") + changes.join(QStringLiteral(", "));
    m_header->setText(text);
    const QString userConfig = userConfigText(m_run.info);
    m_header->setToolTip(userConfig.isEmpty()
                             ? QString()
                             : tr("User config (qklab.init(config=...)):\n%1").arg(userConfig));
}

void LivePlotsPanel::syncXRanges(QCustomPlot* source) {
    if (m_syncing) return;
    m_syncing = true;
    for (QCustomPlot* p : m_plots) {
        if (p == source) continue;
        p->xAxis->setRange(source->xAxis->range());
        p->replot(QCustomPlot::rpQueuedReplot);
    }
    m_syncing = false;
}

bool LivePlotsPanel::following() const {
    return m_follow->isChecked();
}

void LivePlotsPanel::jumpToStep(qint64 step) {
    m_follow->setChecked(false);
    m_cursorStep = double(step);
    const double total = m_run.steps.empty() ? m_x(100.0) : m_x(double(m_run.steps.back().step));
    double width = m_loss->xAxis->range().size();
    if (width >= total * 0.9) width = std::max(m_x(40.0) - m_x(0.0), total / 5);
    const double at = m_x(double(step));
    m_syncing = true;
    for (QCustomPlot* p : m_plots) p->xAxis->setRange(at - width / 2, at + width / 2);
    m_syncing = false;
    m_markersDirty = true;
    replotNow();
    // replotNow() rescaled y only; keep the x window we just chose.
}

bool LivePlotsPanel::showSpikeTip(QCustomPlot* plot, const QPoint& pos, bool click) {
    if (plot == m_logits) {  // QK-Clip markers
        const ClipMark* c = m_clips->hit(pos);
        if (c) {
            QToolTip::showText(plot->mapToGlobal(pos), clipMarkHtml(*c), plot);
            if (click) emit stepSelected(c->summary.step);
        } else if (!click) {
            QToolTip::hideText();
        }
        return c != nullptr;
    }
    QCPGraph* graph = plot == m_loss ? m_lossSpikes : plot == m_grad ? m_gradSpikes : nullptr;
    if (!graph) return false;
    const std::string metric = plot == m_grad ? "grad_norm" : "loss";
    for (const Spike& s : m_run.spikes) {
        if ((s.metric == "grad_norm") != (metric == "grad_norm") || !finite(s.value)) continue;
        const QPointF px = graph->coordsToPixels(m_x(double(s.step)), s.value);
        if (QLineF(px, QPointF(pos)).length() <= 8) {
            QToolTip::showText(plot->mapToGlobal(pos), spikeHtml(s), plot);
            if (click) emit stepSelected(s.step);
            return true;
        }
    }
    if (!click) QToolTip::hideText();
    return false;
}

void LivePlotsPanel::setXAxis(XAxisKind kind) {
    m_xChoice->setCurrentIndex(m_xChoice->findData(int(kind)));
}

void LivePlotsPanel::resetXMap() {
    m_x = StepToX(xAxisKindOf(m_xChoice), m_run.config.data.batchSize, m_run.config.model.seqLen);
    const QString title = xAxisTitle(m_x.kind());
    for (QCustomPlot* p : m_plots) p->xAxis->setLabel(title);
}

// The same series against another x: rebuilt from the rows already held, no store read.
void LivePlotsPanel::redrawForXAxis() {
    for (QCustomPlot* p : m_plots)
        for (int i = 0; i < p->graphCount(); ++i) p->graph(i)->data()->clear();
    resetXMap();
    addSteps(m_run.steps, 0);
    addProbes(m_run.probes, 0);
    m_clips->set(m_run.clips, xOfStep());
    showCustomScalars();
    refreshSpikes();
    m_markersDirty = true;
    m_follow->setChecked(true);
    replotNow();
}

QString LivePlotsPanel::readout(QCustomPlot* plot, double x) {
    if (m_run.runId == 0) return {};
    const int64_t step = m_x.stepAt(x);
    QString name = QString::fromStdString(m_run.info.name);
    if (name.isEmpty()) name = QStringLiteral("run-%1").arg(m_run.runId);  // as the store names it
    QString head =
        tr("<b>Run %1 “%2”</b><br>step %3").arg(m_run.runId).arg(name.toHtmlEscaped()).arg(step);
    if (m_x.kind() != XAxisKind::Step)
        head += QStringLiteral(" · ") + xAxisValueText(m_x.kind(), x);
    QStringList lines = curveValuesAt(plot, x, [this](const QCPGraph*, double key) {
        return tr("step %1").arg(m_x.stepAt(key));
    });
    if (plot == m_logits)
        if (const ClipStep* c = m_clips->atStep(step)) lines << clipText(*c).toHtmlEscaped();
    if (lines.isEmpty()) return {};
    return head + QStringLiteral("<br>") + lines.join(QStringLiteral("<br>"));
}

}  // namespace qklab::gui
