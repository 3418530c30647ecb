// sweep_table.cpp — display text, sort keys and state colours of the sweep's point table.
#include "sweeps/sweep_table.h"

#include <QBrush>
#include <cmath>

#include "common/run_data.h"

namespace qklab::gui {

namespace {
constexpr int kPointColumn = 0, kRunColumn = 1;
const double kMissingSort = 1e300;  // missing values sort last (ascending)

QColor stateColor(const std::string& state) {
    if (state == "finished") return QColor(30, 130, 30);
    if (state == "diverged") return QColor(200, 0, 0);
    if (state == "failed") return QColor(140, 0, 0);
    if (state == "running") return QColor(20, 90, 200);
    if (state == "interrupted" || state == "stopped") return QColor(200, 120, 0);
    return QColor(120, 120, 120);  // pending
}
}  // namespace

QString coordText(const nlohmann::json& value) {
    if (value.is_string()) return QString::fromStdString(value.get<std::string>());
    // 4 significant digits: a log grid's 0.000948683 reads 0.0009487 (the tooltip has all).
    if (value.is_number_float()) return QString::number(value.get<double>(), 'g', 4);
    return QString::fromStdString(value.dump());
}

SweepTableModel::SweepTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void SweepTableModel::clear() {
    beginResetModel();
    m_sweepId = 0;
    m_keys.clear();
    m_points.clear();
    endResetModel();
}

void SweepTableModel::setReport(const SweepReport& report) {
    QStringList keys;
    for (const SweepAxis& a : report.definition.axes) keys << QString::fromStdString(a.key);
    for (const SweepPointResult& p : report.points)
        for (const auto& item : p.coords.items())
            if (!keys.contains(QString::fromStdString(item.key())))
                keys << QString::fromStdString(item.key());
    const bool same =
        report.sweep.id == m_sweepId && keys == m_keys && report.points.size() == m_points.size();
    if (same) {
        m_points = report.points;
        if (!m_points.empty())
            emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
        return;
    }
    beginResetModel();
    m_sweepId = report.sweep.id;
    m_keys = keys;
    m_points = report.points;
    endResetModel();
}

int SweepTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_points.size());
}

int SweepTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : firstSummaryColumn() + int(summaryColumns().size());
}

QVariant SweepTableModel::headerData(int section, Qt::Orientation o, int role) const {
    if (o != Qt::Horizontal) return {};
    if (role == Qt::ToolTipRole && section >= 2 && section < firstSummaryColumn())
        return tr("swept key %1").arg(m_keys[section - 2]);
    if (role != Qt::DisplayRole) return {};
    if (section == kPointColumn) return tr("point");
    if (section == kRunColumn) return tr("run");
    if (section < firstSummaryColumn()) {
        // The last part of the dotted key keeps the columns narrow; the tooltip names it.
        const QString& key = m_keys[section - 2];
        return key == QLatin1String("run.seed") ? tr("seed") : key.section(QLatin1Char('.'), -1);
    }
    const int c = section - firstSummaryColumn();
    return c < int(summaryColumns().size()) ? QString::fromUtf8(summaryColumns()[c].title)
                                            : QVariant();
}

QVariant SweepTableModel::coordCell(const SweepPointResult& p, int keyIndex, bool sort) const {
    const std::string key = m_keys[keyIndex].toStdString();
    if (!p.coords.contains(key)) return sort ? QVariant(QString()) : QVariant();
    const nlohmann::json& v = p.coords[key];
    if (sort && v.is_number()) return v.get<double>();
    return coordText(v);
}

QVariant SweepTableModel::summaryCell(const SweepPointResult& p, int column, bool sort) const {
    const SummaryColumn& c = summaryColumns()[column];
    if (std::string(c.key) == "status") return QString::fromStdString(p.state());
    if (!p.summary) return sort ? QVariant(kMissingSort) : QVariant(QStringLiteral("–"));
    if (!sort) return QString::fromStdString(c.text(*p.summary));
    const std::optional<double> v = c.number(*p.summary);
    if (!v || std::isnan(*v)) return kMissingSort;
    return *v;
}

QVariant SweepTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(m_points.size())) return {};
    const SweepPointResult& p = m_points[size_t(index.row())];
    const int column = index.column();
    if (role == RunIdRole) return qlonglong(p.run ? p.run->id : 0);
    if (role == PointRole) return qlonglong(p.index);
    if (role == Qt::DisplayRole || role == SortRole) {
        const bool sort = role == SortRole;
        if (column == kPointColumn) return qlonglong(p.index);
        if (column == kRunColumn) {
            if (!p.run) return sort ? QVariant(qlonglong(-1)) : QVariant(QStringLiteral("–"));
            return qlonglong(p.run->id);
        }
        if (column < firstSummaryColumn()) return coordCell(p, column - 2, sort);
        return summaryCell(p, column - firstSummaryColumn(), sort);
    }
    if (role == Qt::TextAlignmentRole && column != firstSummaryColumn())
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ForegroundRole && column == firstSummaryColumn())
        return QBrush(stateColor(p.state()));
    if (role == Qt::ToolTipRole) {
        QString tip = QString::fromStdString(coordsText(p.coords));
        if (p.run) {
            tip += QStringLiteral("\n%1 — %2")
                       .arg(QString::fromStdString(p.run->name), QString::fromStdString(p.state()));
            if (!p.run->statusMessage.empty())
                tip += QStringLiteral("\n") + QString::fromStdString(p.run->statusMessage);
        } else {
            tip += tr("\nnot run yet");
        }
        return tip;
    }
    return {};
}

}  // namespace qklab::gui
