// compare_panel_io.cpp — what leaves or comes back into the comparison: saving it under a
// name in the store and reopening it exactly as left, and the figure and CSV exports.
#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QInputDialog>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSlider>
#include <QTabWidget>
#include <QTableWidget>
#include <algorithm>

#include "common/file_dialogs.h"
#include "common/plot_style.h"
#include "common/x_axis.h"
#include "compare/compare_panel.h"
#include "compare/compare_plots.h"

namespace qklab::gui {
namespace {

bool writeText(const QString& path, const QString& text, QString* error) {
    QSaveFile f(path);  // a failed write leaves any earlier file as it was
    if (!f.open(QIODevice::WriteOnly | QIODevice::Text) || f.write(text.toUtf8()) < 0 ||
        !f.commit()) {
        if (error) *error = f.errorString();
        return false;
    }
    return true;
}

}  // namespace

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
int ComparePanel::paintDiff(QPainter* p, const QFontMetrics& fm, int width) const {
    std::vector<const ConfigDiffRow*> rows;
    for (const ConfigDiffRow& row : m_comparison.diff)
        if (row.differs) rows.push_back(&row);
    const int line = fm.height() + 6, runs = int(m_comparison.runs.size());
    const int height = line * int(rows.size() + 1) + 4;
    if (!p) return height;
    int keyWidth = fm.horizontalAdvance(tr("config key"));
    for (const ConfigDiffRow* row : rows)
        keyWidth = std::max(keyWidth, fm.horizontalAdvance(QString::fromStdString(row->key)));
    keyWidth += 12;
    const int cell = runs > 0 ? std::max(40, (width - keyWidth) / runs) : 0;
    p->fillRect(QRect(0, 0, width, height), palette().color(QPalette::Base));
    auto text = [&](int x, int y, int w, const QString& t, const QColor& color) {
        p->setPen(color);
        p->drawText(QRect(x + 4, y, w - 8, line), Qt::AlignVCenter | Qt::AlignLeft,
                    fm.elidedText(t, Qt::ElideRight, w - 8));
    };
    const QColor ink = palette().color(QPalette::Text);
    text(0, 0, keyWidth, tr("config key"), ink);
    for (int r = 0; r < runs; ++r)
        text(keyWidth + r * cell, 0, cell, m_comparison.runs[r].label(), m_plots->runColor(r));
    for (size_t i = 0; i < rows.size(); ++i) {
        const int y = line * int(i + 1);
        p->setPen(palette().color(QPalette::Mid));
        p->drawLine(0, y, width, y);
        text(0, y, keyWidth, QString::fromStdString(rows[i]->key), ink);
        for (int r = 0; r < runs && r < int(rows[i]->values.size()); ++r)
            text(keyWidth + r * cell, y, cell, QString::fromStdString(rows[i]->values[r]), ink);
    }
    return height;
}

// The legend line as the PDF draws it, in text: a colour square and the label of each run,
// wrapped at `width`, then the note on runs no longer in the database.
int ComparePanel::paintLegend(QPainter* p, const QFontMetrics& fm, int width) const {
    const int line = fm.height() + 4, box = fm.ascent() * 3 / 4;
    int x = 4, y = 0;
    auto place = [&](const QString& t, const QColor* swatchColor) {
        const int w = (swatchColor ? box + 4 : 0) + fm.horizontalAdvance(t) + 12;
        if (x > 4 && x + w > width) {
            x = 4;
            y += line;
        }
        if (p && swatchColor) p->fillRect(QRect(x, y + (line - box) / 2, box, box), *swatchColor);
        const int textX = x + (swatchColor ? box + 4 : 0);
        if (p) {
            p->setPen(palette().color(QPalette::WindowText));
            p->drawText(QRect(textX, y, width - textX, line), Qt::AlignVCenter | Qt::AlignLeft, t);
        }
        x += w;
    };
    place(tr("Comparing %n run(s):", nullptr, int(m_comparison.runs.size())), nullptr);
    for (const LegendEntry& e : legendEntries()) place(e.label, &e.color);
    if (!m_comparison.missing.empty()) {
        QStringList ids;
        for (int64_t id : m_comparison.missing) ids << QString::number(id);
        x = width;  // a line of its own
        place(
            tr("No longer in the database (deleted?): run %1").arg(ids.join(QStringLiteral(", "))),
            nullptr);
    }
    return y + line + 4;
}

// Vector: QCustomPlot paints each plot into the PDF's painter (toPainter) and the legend and
// diff are text, so the figure scales for a paper (grabbing the widgets embedded bitmaps).
// Coordinates are the widgets' pixels: the page's resolution is the screen's, so fonts given in
// points come out the size they have on screen and the plots keep their layout.
bool ComparePanel::saveFigurePdf(const QString& path, QString* error) {
    QPdfWriter pdf(path);
    pdf.setResolution(std::max(1, logicalDpiX()));
    pdf.setCreator(QStringLiteral("qklab"));
    const QFontMetrics fm(font(), &pdf);
    QList<QCustomPlot*> plots;
    for (QCustomPlot* plot :
         m_plots->smallMultiples() ? m_plots->multiplePlots() : m_plots->plots())
        if (plot->isVisibleTo(m_plots)) plots << plot;
    const int width = m_plots->width();
    const int legendHeight = paintLegend(nullptr, fm, width);
    const int height = legendHeight + m_plots->height() + paintDiff(nullptr, fm, width);
    const double toPoints = 72.0 / pdf.resolution();
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    pdf.setPageSize(QPageSize(QSizeF(width * toPoints, height * toPoints), QPageSize::Point,
                              QString(), QPageSize::ExactMatch));
    QCPPainter p;
    if (!p.begin(&pdf)) {
        if (error) *error = tr("cannot write %1").arg(path);
        return false;
    }
    // Vectorized: no pixmap-cached tick labels; non-cosmetic: the dense curves' 0-width
    // hairlines become 1 px lines that scale with the page instead of 1 device dot.
    p.setModes(QCPPainter::pmVectorized | QCPPainter::pmNoCaching | QCPPainter::pmNonCosmetic);
    p.setFont(font());
    p.fillRect(QRect(0, 0, width, height), palette().color(QPalette::Window));
    paintLegend(&p, fm, width);
    for (QCustomPlot* plot : plots) {
        p.save();
        p.translate(plot->mapTo(m_plots, QPoint(0, 0)) + QPoint(0, legendHeight));
        plot->toPainter(&p, plot->width(), plot->height());
        p.restore();
    }
    p.translate(0, legendHeight + m_plots->height());
    paintDiff(&p, fm, width);
    return p.end();
}

bool ComparePanel::saveFigure(const QString& path, QString* error) {
    if (QFileInfo(path).suffix().compare(QStringLiteral("pdf"), Qt::CaseInsensitive) == 0)
        return saveFigurePdf(path, error);
    // PNG: the legend line and the curves as shown, the differing config keys below them.
    const QPixmap legend = m_legend->grab(), curves = m_plots->grab();
    const QFontMetrics fm(font());
    const int width = std::max(legend.width(), curves.width());
    const int diffHeight = paintDiff(nullptr, fm, curves.width());
    QImage image(width, legend.height() + curves.height() + diffHeight, QImage::Format_RGB32);
    image.fill(palette().color(QPalette::Window));
    QPainter p(&image);
    p.setFont(font());
    p.drawPixmap(0, 0, legend);
    p.drawPixmap(0, legend.height(), curves);
    p.translate(0, legend.height() + curves.height());
    paintDiff(&p, fm, curves.width());
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
    const QString path = chooseFileToSave(this, tr("Export comparison"), suggested, filter);
    if (path.isEmpty()) return;
    QString err;
    const bool ok = figure                      ? saveFigure(path, &err)
                    : what == tr("Series CSV…") ? saveSeriesCsv(path, &err)
                                                : saveSummaryCsv(path, &err);
    if (!ok) emit error(tr("Export failed"), err);
}
}  // namespace qklab::gui
