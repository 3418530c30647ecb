// compare_panel.cpp — toolbar, tables, live reload and exports of the comparison.
#include "compare/compare_panel.h"

#include <qcustomplot.h>

#include <QAbstractItemView>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>
#include <cmath>
#include <optional>

#include "common/async_store.h"
#include "common/plot_style.h"
#include "common/theme.h"
#include "common/x_axis.h"
#include "compare/compare_attention.h"
#include "compare/compare_histograms.h"
#include "compare/compare_plots.h"

namespace qklab::gui {
namespace {

// Sorts by the number in UserRole (missing values last), shows the formatted text.
class NumberItem : public QTableWidgetItem {
  public:
    using QTableWidgetItem::QTableWidgetItem;
    bool operator<(const QTableWidgetItem& other) const override {
        const QVariant a = data(Qt::UserRole), b = other.data(Qt::UserRole);
        if (!a.isValid() || !b.isValid()) return a.isValid() && !b.isValid();
        return a.toDouble() < b.toDouble();
    }
};

QString swatch(const QColor& c) {
    return QStringLiteral("<span style='color:%1'>■</span>").arg(c.name());
}

}  // namespace

ComparePanel::ComparePanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    m_legend = new QLabel(tr("No comparison. Select 2-%1 runs in the run list (Ctrl+click) and "
                             "press Compare.")
                              .arg(kMaxRuns));
    m_legend->setObjectName(QStringLiteral("compareLegend"));
    m_legend->setWordWrap(true);
    m_legend->setTextFormat(Qt::RichText);
    layout->addWidget(m_legend);
    m_plots = new ComparePlots;  // before the toolbar, which lays out its custom scalar choice
    layout->addWidget(buildToolbar());

    auto* split = m_split = new QSplitter(Qt::Vertical);
    m_views = new QTabWidget;
    m_views->addTab(m_plots, tr("Curves"));
    m_histograms = new CompareHistograms;
    m_views->addTab(m_histograms, tr("Histograms at one step"));
    m_attention = new CompareAttention;
    m_views->addTab(m_attention, tr("Attention maps, two runs"));
    split->addWidget(m_views);
    auto* tabs = new QTabWidget;
    m_summary = new QTableWidget;
    m_summary->setObjectName(QStringLiteral("compareSummary"));
    m_summary->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_summary->setSortingEnabled(true);
    m_summary->verticalHeader()->setVisible(false);
    tabs->addTab(m_summary, tr("Summary"));
    auto* diffPage = new QWidget;
    auto* diffLayout = new QVBoxLayout(diffPage);
    diffLayout->setContentsMargins(0, 0, 0, 0);
    m_diffOnly = new QCheckBox(tr("Differences only"));
    m_diffOnly->setChecked(true);
    diffLayout->addWidget(m_diffOnly);
    m_diff = new QTableWidget;
    m_diff->setObjectName(QStringLiteral("compareDiff"));
    m_diff->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_diff->setWordWrap(true);
    m_diff->setTextElideMode(Qt::ElideRight);  // a row at its 8-line cap ends in "…"
    diffLayout->addWidget(m_diff, 1);
    tabs->addTab(diffPage, tr("Config diff"));
    m_events = new QTextBrowser;
    tabs->addTab(m_events, tr("Events"));
    tabs->setMinimumHeight(60);
    split->addWidget(tabs);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);  // room for a dozen summary rows
    layout->addWidget(split, 1);

    connect(m_diffOnly, &QCheckBox::toggled, this, [this] { fillDiff(); });
    m_liveTimer = new QTimer(this);
    m_liveTimer->setInterval(2000);
    connect(m_liveTimer, &QTimer::timeout, this, &ComparePanel::reloadIfLive);
}

QWidget* ComparePanel::buildToolbar() {
    // Two rows: one row of every control was wider than the central area of a 1280x720 window.
    auto* bar = new QWidget;
    auto* rows = new QVBoxLayout(bar);
    rows->setContentsMargins(0, 0, 0, 0);
    rows->setSpacing(2);
    // The view controls in two rows too: in presenter mode's large font one row was wider
    // than a 1024x768 projector leaves beside the lesson.
    auto* viewRow = new QHBoxLayout;
    auto* groupRow = new QHBoxLayout;
    rows->addLayout(viewRow);
    rows->addLayout(groupRow);
    // A widget of its own: presenter mode hides it (a class does not save or export).
    auto* saveStrip = new QWidget;
    saveStrip->setObjectName(QStringLiteral("compareSaveRow"));
    auto* saveRow = new QHBoxLayout(saveStrip);
    saveRow->setContentsMargins(0, 0, 0, 0);
    rows->addWidget(saveStrip);
    buildViewControls(bar, viewRow, groupRow);
    connectViewControls();
    buildSaveRow(saveRow);  // saving and exports below the view controls
    return bar;
}

// What the curves show: x axis, layer, smoothing, seed groups, small multiples.
void ComparePanel::buildViewControls(QWidget* bar, QHBoxLayout* row, QHBoxLayout* groupRow) {
    m_xChoice = makeXAxisChoice(bar);
    m_layer = new QComboBox;
    m_layer->setToolTip(
        tr("Per-layer series: one layer, or the worst layer at each step "
           "(highest logit and norm, lowest entropy)"));
    m_layer->addItem(tr("worst layer"), -1);
    m_smoothing = new QSlider(Qt::Horizontal);
    m_smoothing->setRange(0, 99);
    m_smoothing->setToolTip(
        tr("EMA smoothing; raw points stay drawn faint and spike markers "
           "keep their raw values"));
    m_smoothingLabel = new QLabel(tr("smoothing 0"));
    m_multiples = new QCheckBox(tr("Small multiples of"));
    m_multiples->setToolTip(
        tr("One panel per run for the chosen metric, linked axes, instead "
           "of the overlay"));
    m_multiMetric = new QComboBox;
    for (const CompareMetricInfo& info : compareMetrics())
        m_multiMetric->addItem(info.title, int(info.metric));
    m_multiMetric->setCurrentIndex(m_multiMetric->findData(int(CompareMetric::MaxLogit)));
    // Group by any differing key, as TensorBoard and W&B do; seeds first, the usual case.
    auto* groupLabel = new QLabel(tr("Group by"));
    m_groupBy = new QComboBox;
    m_groupBy->setObjectName(QStringLiteral("compareGroupBy"));
    m_groupBy->setToolTip(
        tr("Runs with the same value of a key are drawn as their mean in a min-max band, in "
           "one colour. Seed: runs that differ only in run.seed"));
    groupLabel->setBuddy(m_groupBy);
    fillGroupChoices();
    row->addWidget(m_xChoice);
    row->addWidget(m_layer);
    row->addWidget(m_smoothingLabel);
    row->addWidget(m_smoothing);
    // Here rather than beside Group by: that row is the wider in presenter mode at 1024 px.
    row->addWidget(buildAlignControls());
    row->addWidget(m_plots->scalarChoice());  // shown while a compared run logged any
    row->addStretch(1);
    groupRow->addWidget(groupLabel);
    groupRow->addWidget(m_groupBy);
    groupRow->addWidget(m_multiples);
    groupRow->addWidget(m_multiMetric);
    groupRow->addStretch(1);
    m_multiMetric->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_multiMetric->setMinimumContentsLength(12);
    m_groupBy->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_groupBy->setMinimumContentsLength(10);  // presenter mode's 1.5x font fits 1024 px
    m_xChoice->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_xChoice->setMinimumContentsLength(10);
    m_smoothing->setMaximumWidth(120);
}

void ComparePanel::connectViewControls() {
    connect(m_xChoice, qOverload<int>(&QComboBox::currentIndexChanged), this,
            [this] { m_plots->setXAxis(xAxisKindOf(m_xChoice)); });
    connect(m_layer, qOverload<int>(&QComboBox::currentIndexChanged), this,
            [this] { m_plots->setLayer(m_layer->currentData().toInt()); });
    connect(m_smoothing, &QSlider::valueChanged, this, [this](int v) {
        m_smoothingLabel->setText(tr("smoothing %1").arg(v / 100.0, 0, 'f', 2));
        m_plots->setSmoothing(v / 100.0);
    });
    connect(m_groupBy, qOverload<int>(&QComboBox::currentIndexChanged), this,
            &ComparePanel::groupingChanged);
    auto multiples = [this] {
        m_plots->setSmallMultiples(
            m_multiples->isChecked(),
            static_cast<CompareMetric>(m_multiMetric->currentData().toInt()));
    };
    connect(m_multiples, &QCheckBox::toggled, this, multiples);
    connect(m_multiMetric, qOverload<int>(&QComboBox::currentIndexChanged), this, multiples);
}

// Saved comparisons (reopen, save) and the exports.
void ComparePanel::buildSaveRow(QHBoxLayout* row) {
    m_saved = new QComboBox;
    m_saved->setObjectName(QStringLiteral("savedComparisons"));
    m_saved->setToolTip(tr("Reopen a saved comparison, with its runs and view settings"));
    row->addWidget(m_saved);
    auto* save = new QPushButton(tr("Save…"));
    save->setToolTip(tr("Save these runs and view settings under a name, in the database"));
    connect(save, &QPushButton::clicked, this, &ComparePanel::askSaveName);
    row->addWidget(save);
    connect(m_saved, &QComboBox::activated, this, [this](int index) {
        if (index > 0) openSaved(m_saved->itemText(index));
    });
    for (const QString& what : {tr("Figure…"), tr("Series CSV…"), tr("Summary CSV…")}) {
        auto* b = new QPushButton(what);
        connect(b, &QPushButton::clicked, this, [this, what] { exportAs(what); });
        row->addWidget(b);
    }
}

void ComparePanel::setRuns(const QString& dbPath, const std::vector<int64_t>& runIds) {
    m_dbPath = dbPath;
    m_runIds = runIds;
    const uint64_t generation = ++m_generation;
    readStoreAsync<Comparison>(
        this, dbPath, [runIds](RunStore& store) { return loadComparison(store, runIds); },
        [this, generation](Comparison c) {
            if (generation != m_generation) return;  // a newer request is on its way
            const double seconds = c.loadSeconds;
            const int runs = int(c.runs.size());
            setComparison(std::move(c));
            emit loaded(runs, seconds);
        },
        [this](const QString& e) { emit error(tr("Cannot load the comparison"), e); });
}

void ComparePanel::setComparison(Comparison comparison) {
    m_comparison = std::move(comparison);
    int layers = 0;
    for (const CompareRun& r : m_comparison.runs) layers = std::max(layers, r.summary.layers);
    const int chosen = m_layer->currentData().toInt();
    {
        QSignalBlocker block(m_layer);
        while (m_layer->count() > 1) m_layer->removeItem(1);
        for (int l = 0; l < layers; ++l) m_layer->addItem(tr("layer %1").arg(l), l);
        m_layer->setCurrentIndex(std::max(0, m_layer->findData(chosen)));
    }
    const QString grouped = groupBy();
    fillGroupChoices();
    if (groupBy() != grouped) m_plots->setGroupBy(groupBy());  // its key no longer differs
    m_plots->setComparison(&m_comparison, m_layer->currentData().toInt());
    if (!m_dbPath.isEmpty()) {
        m_histograms->setComparison(m_dbPath, &m_comparison);
        m_attention->setComparison(m_dbPath, &m_comparison);
    }
    if (!m_pendingSettings.isEmpty()) {
        applySettings(m_pendingSettings);
        m_pendingSettings.clear();
    }
    refreshSaved();
    fillLegend();
    fillSummary();
    fillDiff();
    fillEvents();
    bool live = false;
    for (const CompareRun& r : m_comparison.runs)
        live = live || r.summary.status == RunStatus::Running;
    if (live)
        m_liveTimer->start();
    else
        m_liveTimer->stop();
}

void ComparePanel::reloadIfLive() {
    if (!m_dbPath.isEmpty() && !m_runIds.empty()) setRuns(m_dbPath, m_runIds);
}

std::vector<ComparePanel::LegendEntry> ComparePanel::legendEntries() const {
    std::vector<LegendEntry> entries;
    for (const CurveGroup& g : m_plots->groups())
        entries.push_back({m_plots->runColor(g.members.front()), g.label});
    if (entries.empty())
        for (size_t i = 0; i < m_comparison.runs.size(); ++i)
            entries.push_back({compareColor(i), m_comparison.runs[i].label()});
    alignLegend(entries);
    return entries;
}

void ComparePanel::fillLegend() {
    QStringList parts;
    for (const LegendEntry& e : legendEntries())
        parts << swatch(e.color) + QLatin1Char(' ') +
                     (e.greyed ? QStringLiteral("<span style='color:gray'>%1</span>")
                                     .arg(e.label.toHtmlEscaped())
                               : e.label.toHtmlEscaped());
    QString text = tr("<b>Comparing %n run(s):</b> ", nullptr, int(m_comparison.runs.size())) +
                   parts.join(QStringLiteral(" &nbsp; "));
    if (!m_comparison.missing.empty()) {
        QStringList ids;
        for (int64_t id : m_comparison.missing) ids << QString::number(id);
        text += tr("<br><i>No longer in the database (deleted?): run %1</i>")
                    .arg(ids.join(QStringLiteral(", ")));
    }
    m_legend->setText(text);
}

// The curves regroup; the legend and every run's swatch (summary, diff, events) take the
// colours the curves now have.
void ComparePanel::groupingChanged() {
    m_plots->setGroupBy(groupBy());
    fillLegend();
    fillSummary();
    fillDiff();
    fillEvents();
}

void ComparePanel::setLessonMetrics(const QStringList& metrics) {
    m_plots->setLessonMetrics(metrics);
}

void ComparePanel::presenterChanged() {
    m_plots->relayoutPlots();
    fillSummary();
    // The plots take three quarters of the height in presenter mode: at 3:2 a lesson's four
    // got 125 px at 1280x720, and their log ticks ran together. The list scrolls instead.
    if (presenterActive() && m_splitSizes.isEmpty()) {
        m_splitSizes = m_split->sizes();
        m_split->setSizes({3000, 1000});
    } else if (!presenterActive() && !m_splitSizes.isEmpty()) {
        m_split->setSizes(m_splitSizes);
        m_splitSizes.clear();
    }
}

// In presenter mode the summary is a list: a row per column and a column per run. Eighteen
// columns were cut at the right beside the lesson at 1024x768; two or three runs' columns fit.
void ComparePanel::fillSummary() {
    const auto& columns = summaryColumns();
    const auto& runs = m_comparison.runs;
    const bool list = presenterActive();
    m_summary->setSortingEnabled(false);
    m_summary->clear();
    m_summary->setColumnCount(list ? int(runs.size()) : int(columns.size()) + 1);
    m_summary->setRowCount(list ? int(columns.size()) : int(runs.size()));
    m_summary->verticalHeader()->setVisible(list);
    QStringList headers{tr("run")};
    for (const SummaryColumn& c : columns) headers << QString::fromUtf8(c.title);
    if (list)
        m_summary->setVerticalHeaderLabels(headers.mid(1));
    else
        m_summary->setHorizontalHeaderLabels(headers);
    for (size_t r = 0; r < runs.size(); ++r) {
        // A run trained outside qklab is named with its source beside qklab's own runs.
        const RunInfo& info = runs[r].snap.info;
        QString label =
            trainedOutsideQklab(info)
                ? tr("%1 (%2)").arg(runs[r].label(), QString::fromStdString(info.source))
                : runs[r].label();
        if (list) label.replace(label.indexOf(QLatin1Char(' ')), 1, QLatin1Char('\n'));
        auto* name = new NumberItem(label);
        name->setData(Qt::UserRole, double(runs[r].summary.runId));
        name->setData(Qt::DecorationRole, m_plots->runColor(r));
        if (list)
            m_summary->setHorizontalHeaderItem(int(r), name);
        else
            m_summary->setItem(int(r), 0, name);
        for (size_t c = 0; c < columns.size(); ++c) {
            auto* item = new NumberItem(QString::fromStdString(columns[c].text(runs[r].summary)));
            if (columns[c].number)
                if (const auto v = columns[c].number(runs[r].summary))
                    item->setData(Qt::UserRole, *v);
            if (list)
                m_summary->setItem(int(c), int(r), item);
            else
                m_summary->setItem(int(r), int(c) + 1, item);
        }
    }
    markBestSummaryValues(list);
    m_summary->setSortingEnabled(!list);
    m_summary->resizeColumnsToContents();
}

// The best value of each column that has a "better" direction: bold on a tint, on every run
// that reaches it; nothing when all runs tie (no run is better there).
void ComparePanel::markBestSummaryValues(bool list) {
    const auto& columns = summaryColumns();
    const auto& runs = m_comparison.runs;
    for (size_t c = 0; c < columns.size(); ++c) {
        if (columns[c].better == 0 || !columns[c].number || runs.size() < 2) continue;
        std::vector<std::optional<double>> values;
        for (const CompareRun& run : runs) values.push_back(columns[c].number(run.summary));
        std::optional<double> best;
        bool allEqual = true;
        for (const auto& v : values) {
            if (!v || std::isnan(*v)) {
                allEqual = false;
                continue;
            }
            if (best && *v != *best) allEqual = false;
            if (!best || (columns[c].better < 0 ? *v < *best : *v > *best)) best = v;
        }
        if (!best || allEqual) continue;
        for (size_t r = 0; r < runs.size(); ++r) {
            if (!values[r] || *values[r] != *best) continue;
            QTableWidgetItem* item =
                list ? m_summary->item(int(c), int(r)) : m_summary->item(int(r), int(c) + 1);
            QFont f = item->font();
            f.setBold(true);
            item->setFont(f);
            item->setBackground(severityTint(0));
            item->setToolTip(tr("best of the compared runs"));
        }
    }
}

void ComparePanel::setDifferencesOnly(bool on) {
    m_diffOnly->setChecked(on);
    fillDiff();
}

void ComparePanel::fillDiff() {
    const bool only = m_diffOnly->isChecked();
    std::vector<const ConfigDiffRow*> rows;
    const std::vector<ConfigDiffRow> outside = outsideQklabRows(m_comparison);
    for (const ConfigDiffRow& row : outside)
        if (!only || row.differs) rows.push_back(&row);
    for (const ConfigDiffRow& row : m_comparison.diff)
        if (!only || row.differs) rows.push_back(&row);
    m_diff->clear();
    m_diff->setColumnCount(int(m_comparison.runs.size()));
    m_diff->setRowCount(int(rows.size()));
    for (size_t r = 0; r < m_comparison.runs.size(); ++r) {
        auto* header = new QTableWidgetItem(m_comparison.runs[r].label());
        header->setData(Qt::DecorationRole, m_plots->runColor(r));
        m_diff->setHorizontalHeaderItem(int(r), header);
    }
    QStringList keys;
    for (size_t i = 0; i < rows.size(); ++i) {
        keys << QString::fromStdString(rows[i]->key);
        for (size_t r = 0; r < rows[i]->values.size(); ++r) {
            auto* item = new QTableWidgetItem(QString::fromStdString(rows[i]->values[r]));
            item->setToolTip(item->text());
            if (rows[i]->differs) item->setBackground(severityTint(1));
            m_diff->setItem(int(i), int(r), item);
        }
    }
    m_diff->setVerticalHeaderLabels(keys);
    m_diff->resizeColumnsToContents();
    // A long value (a preset's `why`) made its column as wide as the text: it wraps in at
    // most ~40 characters instead, its row up to 8 lines tall; the tooltip has it whole.
    const QFontMetrics fm = m_diff->fontMetrics();
    const int widest = fm.averageCharWidth() * kDiffCellChars;
    for (int c = 0; c < m_diff->columnCount(); ++c)
        m_diff->setColumnWidth(c, std::min(m_diff->columnWidth(c), widest));
    m_diff->resizeRowsToContents();
    for (int r = 0; r < m_diff->rowCount(); ++r)
        m_diff->setRowHeight(r, std::min(m_diff->rowHeight(r), fm.lineSpacing() * 8 + 6));
}

void ComparePanel::fillEvents() {
    QString html;
    for (size_t i = 0; i < m_comparison.runs.size(); ++i) {
        const CompareRun& run = m_comparison.runs[i];
        html += QStringLiteral("<p>%1 <b>%2</b><br>")
                    .arg(swatch(m_plots->runColor(i)), run.label().toHtmlEscaped());
        if (run.snap.events.empty()) html += tr("no events");
        for (const EventRecord& e : run.snap.events)
            html += tr("step %1: %2 %3 (%4)<br>")
                        .arg(e.step)
                        .arg(QString::fromStdString(e.kind),
                             QString::fromStdString(e.paramsJson).toHtmlEscaped(),
                             e.source == "user"     ? tr("intervention")
                             : e.source == "policy" ? tr("skip-step policy")
                                                    : tr("config"));
        html += QStringLiteral("</p>");
    }
    m_events->setHtml(html);
}

void ComparePanel::setSmoothing(double weight) {
    m_smoothing->setValue(int(std::lround(weight * 100)));
}

void ComparePanel::setGroupSeeds(bool on) {
    setGroupBy(on ? QString::fromLatin1(kGroupBySeed) : QString());
}

void ComparePanel::setGroupBy(const QString& groupBy) {
    m_groupBy->setCurrentIndex(std::max(0, m_groupBy->findData(groupBy)));
}

QString ComparePanel::groupBy() const {
    return m_groupBy->currentData().toString();
}

// None, seed, then the keys that differ in this comparison; the choice stays when it still
// applies. The popup is as wide as its longest entry (the box itself is kept narrow).
void ComparePanel::fillGroupChoices() {
    const QString chosen = m_groupBy->count() > 0 ? groupBy() : QString();
    QSignalBlocker block(m_groupBy);
    m_groupBy->clear();
    m_groupBy->addItem(tr("none"), QString());
    m_groupBy->addItem(tr("seed (runs that differ only in run.seed)"),
                       QString::fromLatin1(kGroupBySeed));
    for (const QString& key : groupByKeys(m_comparison)) m_groupBy->addItem(key, key);
    m_groupBy->setCurrentIndex(std::max(0, m_groupBy->findData(chosen)));
    m_groupBy->view()->setMinimumWidth(m_groupBy->view()->sizeHintForColumn(0) + 24);
}

}  // namespace qklab::gui
