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
    o[QStringLiteral("group_by")] = groupBy();
    // For builds from before "Group by", which read this alone.
    o[QStringLiteral("seed_groups")] = groupBy() == QLatin1String(kGroupBySeed);
    o[QStringLiteral("differences_only")] = m_diffOnly->isChecked();
    o[QStringLiteral("view")] = m_views->currentIndex();
    o[QStringLiteral("small_multiples")] = m_multiples->isChecked();
    o[QStringLiteral("small_multiples_metric")] = m_multiMetric->currentData().toInt();
    o[QStringLiteral("custom_scalar")] = m_plots->customScalar();
    o[QStringLiteral("align")] = alignment();
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
    // A comparison saved before "Group by" has only seed_groups: on is group by seed.
    if (o.contains(QStringLiteral("group_by")))
        setGroupBy(o[QStringLiteral("group_by")].toString());
    else if (o.contains(QStringLiteral("seed_groups")))
        setGroupSeeds(o[QStringLiteral("seed_groups")].toBool());
    if (o.contains(QStringLiteral("differences_only")))
        setDifferencesOnly(o[QStringLiteral("differences_only")].toBool());
    if (o.contains(QStringLiteral("small_multiples_metric")))
        m_multiMetric->setCurrentIndex(std::max(
            0, m_multiMetric->findData(o[QStringLiteral("small_multiples_metric")].toInt())));
    if (o.contains(QStringLiteral("small_multiples")))
        m_multiples->setChecked(o[QStringLiteral("small_multiples")].toBool());
    if (o.contains(QStringLiteral("custom_scalar")))
        m_plots->setCustomScalar(o[QStringLiteral("custom_scalar")].toString());
    if (o.contains(QStringLiteral("align"))) setAlignment(o[QStringLiteral("align")].toString());
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

void ComparePanel::exportAs(const QString& what) {
    const bool figure = what == tr("Figure…");
    const QString filter = figure ? tr("PNG image (*.png);;PDF (*.pdf)") : tr("CSV (*.csv)");
    const QString suggested = figure ? QStringLiteral("comparison.png")
                              : what == tr("Series CSV…")
                                  ? QStringLiteral("comparison-series.csv")
                                  : QStringLiteral("comparison-summary.csv");
    const QString path = chooseFileToSave(this, tr("Export comparison"), suggested, filter);
    if (path.isEmpty()) return;
    if (figure) {  // the size next: the window's own size suits neither a slide nor a paper
        FigureSizeDialog ask(this, m_figureSize);
        if (ask.exec() != QDialog::Accepted) return;
        m_figureSize = ask.size();
    }
    QString err;
    const bool ok = figure                      ? saveFigure(path, &err, m_figureSize)
                    : what == tr("Series CSV…") ? saveSeriesCsv(path, &err)
                                                : saveSummaryCsv(path, &err);
    if (!ok) emit error(tr("Export failed"), err);
}
}  // namespace qklab::gui
