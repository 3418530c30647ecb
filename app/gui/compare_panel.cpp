// compare_panel.cpp — toolbar, tables, live reload and exports of the comparison.
#include "compare_panel.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QPdfWriter>
#include <QPushButton>
#include <QSaveFile>
#include <QSlider>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>
#include <cmath>
#include <optional>

#include "async_store.h"
#include "compare_attention.h"
#include "compare_histograms.h"
#include "compare_plots.h"
#include "theme.h"
#include "x_axis.h"

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

bool writeText(const QString& path, const QString& text, QString* error) {
    QSaveFile f(path);  // a failed write leaves any earlier file as it was
    if (!f.open(QIODevice::WriteOnly | QIODevice::Text) || f.write(text.toUtf8()) < 0 ||
        !f.commit()) {
        if (error) *error = f.errorString();
        return false;
    }
    return true;
}

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
    layout->addWidget(buildToolbar());

    auto* split = new QSplitter(Qt::Vertical);
    m_views = new QTabWidget;
    m_plots = new ComparePlots;
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
    auto* row = new QHBoxLayout;
    auto* second = new QHBoxLayout;
    rows->addLayout(row);
    rows->addLayout(second);
    m_xChoice = makeXAxisChoice(bar);
    m_layer = new QComboBox;
    m_layer->setToolTip(
        tr("Per-layer series: one layer, or the worst layer at each step "
           "(highest logit and norm, lowest entropy)"));
    m_layer->addItem(tr("worst layer"), -1);
    m_smoothing = new QSlider(Qt::Horizontal);
    m_smoothing->setRange(0, 99);
    m_smoothing->setMaximumWidth(160);
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
    m_groups = new QCheckBox(tr("Seeds as groups"));
    m_groups->setToolTip(tr("Runs that differ only in run.seed: their mean in a min-max band"));
    row->addWidget(m_xChoice);
    row->addWidget(m_layer);
    row->addWidget(m_smoothingLabel);
    row->addWidget(m_smoothing);
    row->addWidget(m_groups);
    row->addWidget(m_multiples);
    row->addWidget(m_multiMetric);
    row->addStretch(1);
    m_multiMetric->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_multiMetric->setMinimumContentsLength(12);
    m_xChoice->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_xChoice->setMinimumContentsLength(10);
    m_smoothing->setMaximumWidth(120);
    row = second;  // saving and exports below the view controls
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
    connect(m_xChoice, qOverload<int>(&QComboBox::currentIndexChanged), this,
            [this] { m_plots->setXAxis(xAxisKindOf(m_xChoice)); });
    connect(m_layer, qOverload<int>(&QComboBox::currentIndexChanged), this,
            [this] { m_plots->setLayer(m_layer->currentData().toInt()); });
    connect(m_smoothing, &QSlider::valueChanged, this, [this](int v) {
        m_smoothingLabel->setText(tr("smoothing %1").arg(v / 100.0, 0, 'f', 2));
        m_plots->setSmoothing(v / 100.0);
    });
    connect(m_groups, &QCheckBox::toggled, this, [this](bool on) { m_plots->setGroupSeeds(on); });
    auto multiples = [this] {
        m_plots->setSmallMultiples(
            m_multiples->isChecked(),
            static_cast<CompareMetric>(m_multiMetric->currentData().toInt()));
    };
    connect(m_multiples, &QCheckBox::toggled, this, multiples);
    connect(m_multiMetric, qOverload<int>(&QComboBox::currentIndexChanged), this, multiples);
    return bar;
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
    m_plots->setLayer(m_layer->currentData().toInt());
    m_plots->setComparison(&m_comparison);
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

void ComparePanel::fillLegend() {
    QStringList parts;
    for (size_t i = 0; i < m_comparison.runs.size(); ++i)
        parts << swatch(compareColor(i)) + QLatin1Char(' ') +
                     m_comparison.runs[i].label().toHtmlEscaped();
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

void ComparePanel::fillSummary() {
    const auto& columns = summaryColumns();
    const auto& runs = m_comparison.runs;
    m_summary->setSortingEnabled(false);
    m_summary->clear();
    m_summary->setColumnCount(int(columns.size()) + 1);
    m_summary->setRowCount(int(runs.size()));
    QStringList headers{tr("run")};
    for (const SummaryColumn& c : columns) headers << QString::fromUtf8(c.title);
    m_summary->setHorizontalHeaderLabels(headers);
    for (size_t r = 0; r < runs.size(); ++r) {
        auto* name = new NumberItem(runs[r].label());
        name->setData(Qt::UserRole, double(runs[r].summary.runId));
        name->setData(Qt::DecorationRole, compareColor(r));
        m_summary->setItem(int(r), 0, name);
        for (size_t c = 0; c < columns.size(); ++c) {
            auto* item = new NumberItem(QString::fromStdString(columns[c].text(runs[r].summary)));
            if (columns[c].number)
                if (const auto v = columns[c].number(runs[r].summary))
                    item->setData(Qt::UserRole, *v);
            m_summary->setItem(int(r), int(c) + 1, item);
        }
    }
    // The best value of each column that has a "better" direction: bold on a tint, on every run
    // that reaches it; nothing when all runs tie (no run is better there).
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
            QTableWidgetItem* item = m_summary->item(int(r), int(c) + 1);
            QFont f = item->font();
            f.setBold(true);
            item->setFont(f);
            item->setBackground(severityTint(0));
            item->setToolTip(tr("best of the compared runs"));
        }
    }
    m_summary->setSortingEnabled(true);
    m_summary->resizeColumnsToContents();
}

void ComparePanel::setDifferencesOnly(bool on) {
    m_diffOnly->setChecked(on);
    fillDiff();
}

void ComparePanel::fillDiff() {
    const bool only = m_diffOnly->isChecked();
    std::vector<const ConfigDiffRow*> rows;
    for (const ConfigDiffRow& row : m_comparison.diff)
        if (!only || row.differs) rows.push_back(&row);
    m_diff->clear();
    m_diff->setColumnCount(int(m_comparison.runs.size()));
    m_diff->setRowCount(int(rows.size()));
    for (size_t r = 0; r < m_comparison.runs.size(); ++r) {
        auto* header = new QTableWidgetItem(m_comparison.runs[r].label());
        header->setData(Qt::DecorationRole, compareColor(r));
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
}

void ComparePanel::fillEvents() {
    QString html;
    for (size_t i = 0; i < m_comparison.runs.size(); ++i) {
        const CompareRun& run = m_comparison.runs[i];
        html += QStringLiteral("<p>%1 <b>%2</b><br>")
                    .arg(swatch(compareColor(i)), run.label().toHtmlEscaped());
        if (run.snap.events.empty()) html += tr("no events");
        for (const EventRecord& e : run.snap.events)
            html += tr("step %1: %2 %3 (%4)<br>")
                        .arg(e.step)
                        .arg(QString::fromStdString(e.kind),
                             QString::fromStdString(e.paramsJson).toHtmlEscaped(),
                             e.source == "user" ? tr("intervention") : tr("config"));
        html += QStringLiteral("</p>");
    }
    m_events->setHtml(html);
}

void ComparePanel::setSmoothing(double weight) {
    m_smoothing->setValue(int(std::lround(weight * 100)));
}

void ComparePanel::setGroupSeeds(bool on) {
    m_groups->setChecked(on);
}

QString ComparePanel::settingsJson() const {
    QJsonObject o;
    o[QStringLiteral("x_axis")] = int(xAxisKindOf(m_xChoice));
    o[QStringLiteral("layer")] = m_layer->currentData().toInt();
    o[QStringLiteral("smoothing")] = m_smoothing->value() / 100.0;
    o[QStringLiteral("seed_groups")] = m_groups->isChecked();
    o[QStringLiteral("differences_only")] = m_diffOnly->isChecked();
    o[QStringLiteral("view")] = m_views->currentIndex();
    o[QStringLiteral("small_multiples")] = m_multiples->isChecked();
    o[QStringLiteral("small_multiples_metric")] = m_multiMetric->currentData().toInt();
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

void ComparePanel::applySettings(const QString& json) {
    const QJsonObject o = QJsonDocument::fromJson(json.toUtf8()).object();
    // Unknown or missing keys keep the current setting: a file from another version opens.
    if (o.contains(QStringLiteral("x_axis")))
        m_xChoice->setCurrentIndex(
            std::max(0, m_xChoice->findData(o[QStringLiteral("x_axis")].toInt())));
    if (o.contains(QStringLiteral("layer")))
        m_layer->setCurrentIndex(
            std::max(0, m_layer->findData(o[QStringLiteral("layer")].toInt())));
    if (o.contains(QStringLiteral("smoothing")))
        setSmoothing(o[QStringLiteral("smoothing")].toDouble());
    if (o.contains(QStringLiteral("seed_groups")))
        m_groups->setChecked(o[QStringLiteral("seed_groups")].toBool());
    if (o.contains(QStringLiteral("differences_only")))
        setDifferencesOnly(o[QStringLiteral("differences_only")].toBool());
    if (o.contains(QStringLiteral("small_multiples_metric")))
        m_multiMetric->setCurrentIndex(std::max(
            0, m_multiMetric->findData(o[QStringLiteral("small_multiples_metric")].toInt())));
    if (o.contains(QStringLiteral("small_multiples")))
        m_multiples->setChecked(o[QStringLiteral("small_multiples")].toBool());
    if (o.contains(QStringLiteral("view")))
        m_views->setCurrentIndex(o[QStringLiteral("view")].toInt());
}

bool ComparePanel::saveAs(const QString& name, QString* error) {
    SavedComparison saved;
    saved.name = name.trimmed().toStdString();
    for (const CompareRun& r : m_comparison.runs) saved.runIds.push_back(r.snap.runId);
    saved.settingsJson = settingsJson().toStdString();
    try {
        RunStore store(m_dbPath.toStdString());
        store.saveComparison(saved);
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
    refreshSaved();
    return true;
}

void ComparePanel::askSaveName() {
    if (m_comparison.runs.size() < 2) return;
    bool ok = false;
    const QString name = QInputDialog::getText(this, tr("Save comparison"), tr("Name:"),
                                               QLineEdit::Normal, QString(), &ok);
    if (!ok || name.trimmed().isEmpty()) return;
    QString err;
    if (!saveAs(name, &err)) emit error(tr("Cannot save the comparison"), err);
}

void ComparePanel::openSaved(const QString& name) {
    try {
        RunStore store(m_dbPath.toStdString(), StoreAccess::ReadOnly);  // a reader: no write
        const SavedComparison saved = store.comparison(name.toStdString());
        m_pendingSettings = QString::fromStdString(saved.settingsJson);
        setRuns(m_dbPath, saved.runIds);
    } catch (const std::exception& e) {
        emit error(tr("Cannot open the comparison"), QString::fromStdString(e.what()));
    }
}

QStringList ComparePanel::savedNames() const {
    QStringList names;
    for (int i = 1; i < m_saved->count(); ++i) names << m_saved->itemText(i);
    return names;
}

void ComparePanel::refreshSaved() {
    QStringList names;
    try {
        RunStore store(m_dbPath.toStdString(), StoreAccess::ReadOnly);
        for (const SavedComparison& c : store.comparisons())
            names << QString::fromStdString(c.name);
    } catch (const std::exception&) {
        // No database yet, or an old one: nothing saved to offer.
    }
    QSignalBlocker block(m_saved);
    m_saved->clear();
    m_saved->addItem(tr("saved comparisons…"));
    m_saved->addItems(names);
}

bool ComparePanel::saveSeriesCsv(const QString& path, QString* error) const {
    return writeText(path, comparisonCsv(m_comparison, m_layer->currentData().toInt()), error);
}

bool ComparePanel::saveSummaryCsv(const QString& path, QString* error) const {
    std::vector<RunSummary> summaries;
    for (const CompareRun& r : m_comparison.runs) summaries.push_back(r.summary);
    return writeText(path, QString::fromStdString(summaryCsv(summaries)), error);
}

// The differing keys as a compact grid (key, then one column per run in its colour): a grab
// of the table widget carried its scroll bars and empty space.
QImage ComparePanel::diffImage(int width) const {
    std::vector<const ConfigDiffRow*> rows;
    for (const ConfigDiffRow& row : m_comparison.diff)
        if (row.differs) rows.push_back(&row);
    const QFontMetrics fm(font());
    const int line = fm.height() + 6, runs = int(m_comparison.runs.size());
    int keyWidth = fm.horizontalAdvance(tr("config key"));
    for (const ConfigDiffRow* row : rows)
        keyWidth = std::max(keyWidth, fm.horizontalAdvance(QString::fromStdString(row->key)));
    keyWidth += 12;
    const int cell = runs > 0 ? std::max(40, (width - keyWidth) / runs) : 0;
    QImage image(width, line * int(rows.size() + 1) + 4, QImage::Format_RGB32);
    image.fill(palette().color(QPalette::Base));
    QPainter p(&image);
    p.setFont(font());
    auto text = [&](int x, int y, int w, const QString& t, const QColor& color) {
        p.setPen(color);
        p.drawText(QRect(x + 4, y, w - 8, line), Qt::AlignVCenter | Qt::AlignLeft,
                   fm.elidedText(t, Qt::ElideRight, w - 8));
    };
    const QColor ink = palette().color(QPalette::Text);
    text(0, 0, keyWidth, tr("config key"), ink);
    for (int r = 0; r < runs; ++r)
        text(keyWidth + r * cell, 0, cell, m_comparison.runs[r].label(), compareColor(r));
    for (size_t i = 0; i < rows.size(); ++i) {
        const int y = line * int(i + 1);
        p.setPen(palette().color(QPalette::Mid));
        p.drawLine(0, y, width, y);
        text(0, y, keyWidth, QString::fromStdString(rows[i]->key), ink);
        for (int r = 0; r < runs && r < int(rows[i]->values.size()); ++r)
            text(keyWidth + r * cell, y, cell, QString::fromStdString(rows[i]->values[r]), ink);
    }
    return image;
}

bool ComparePanel::saveFigure(const QString& path, QString* error) {
    // The legend line, the curves as shown, and the differing config keys below them.
    const QPixmap legend = m_legend->grab(), curves = m_plots->grab();
    const QImage diff = diffImage(curves.width());
    const int width = std::max(legend.width(), curves.width());
    const int height = legend.height() + curves.height() + diff.height();
    auto paint = [&](QPainter& p) {
        p.drawPixmap(0, 0, legend);
        p.drawPixmap(0, legend.height(), curves);
        p.drawImage(0, legend.height() + curves.height(), diff);
    };
    if (QFileInfo(path).suffix().compare(QStringLiteral("pdf"), Qt::CaseInsensitive) == 0) {
        QPdfWriter pdf(path);
        pdf.setPageSize(QPageSize(QSizeF(width, height), QPageSize::Point));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf.setResolution(72);
        QPainter p;
        if (!p.begin(&pdf)) {
            if (error) *error = tr("cannot write %1").arg(path);
            return false;
        }
        paint(p);
        return p.end();
    }
    QImage image(width, height, QImage::Format_RGB32);
    image.fill(palette().color(QPalette::Window));
    QPainter p(&image);
    paint(p);
    p.end();
    if (!image.save(path)) {
        if (error) *error = tr("cannot write %1").arg(path);
        return false;
    }
    return true;
}

void ComparePanel::exportAs(const QString& what) {
    const bool figure = what == tr("Figure…");
    const QString filter = figure ? tr("PNG image (*.png);;PDF (*.pdf)") : tr("CSV (*.csv)");
    const QString suggested = figure ? QStringLiteral("comparison.png")
                              : what == tr("Series CSV…")
                                  ? QStringLiteral("comparison-series.csv")
                                  : QStringLiteral("comparison-summary.csv");
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export comparison"), suggested, filter);
    if (path.isEmpty()) return;
    QString err;
    const bool ok = figure                      ? saveFigure(path, &err)
                    : what == tr("Series CSV…") ? saveSeriesCsv(path, &err)
                                                : saveSummaryCsv(path, &err);
    if (!ok) emit error(tr("Export failed"), err);
}

}  // namespace qklab::gui
