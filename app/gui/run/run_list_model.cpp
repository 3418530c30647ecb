// run_list_model.cpp — display text, sort keys and status colours of the run table.
#include "run/run_list_model.h"

#include <QBrush>
#include <QDateTime>
#include <cmath>
#include <iterator>

#include "common/run_data.h"

namespace qklab::gui {

namespace {
// A loss as shown and as sorted: missing ones sort last, NaN (a diverged validation) too.
QVariant lossCell(const std::optional<double>& loss, bool sort) {
    if (!loss) return sort ? QVariant(1e300) : QVariant(QStringLiteral("–"));
    if (std::isnan(*loss)) return sort ? QVariant(1e299) : QVariant(QStringLiteral("NaN"));
    return sort ? QVariant(*loss) : QVariant(QString::number(*loss, 'f', 4));
}
}  // namespace

RunListModel::RunListModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunListModel::setRuns(std::vector<RunInfo> runs) {
    bool sameIds = runs.size() == m_runs.size();
    for (size_t i = 0; sameIds && i < runs.size(); ++i) sameIds = runs[i].id == m_runs[i].id;
    std::vector<QString> settings;
    settings.reserve(runs.size());
    for (size_t i = 0; i < runs.size(); ++i) {
        // Re-parse the config only for rows that are new or got an intervention: the config
        // itself never changes after creation.
        if (sameIds && !m_settings.empty() &&
            runs[i].interventions.size() == m_runs[i].interventions.size())
            settings.push_back(m_settings[i]);
        else
            settings.push_back(keySettings(configAsTrained(runs[i])));
    }
    if (sameIds) {
        m_runs = std::move(runs);
        m_settings = std::move(settings);
        if (!m_runs.empty())
            emit dataChanged(index(0, 0), index(int(m_runs.size()) - 1, int(Column::Count) - 1));
        return;
    }
    beginResetModel();
    m_runs = std::move(runs);
    m_settings = std::move(settings);
    endResetModel();
}

const RunInfo* RunListModel::runById(int64_t id) const {
    const int row = rowOf(id);
    return row >= 0 ? &m_runs[row] : nullptr;
}

int RunListModel::rowOf(int64_t id) const {
    for (size_t i = 0; i < m_runs.size(); ++i)
        if (m_runs[i].id == id) return int(i);
    return -1;
}

int RunListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_runs.size());
}

int RunListModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(Column::Count);
}

QVariant RunListModel::headerData(int section, Qt::Orientation o, int role) const {
    if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
    static const char* names[] = {"id",     "name",     "status",     "key settings",
                                  "steps",  "val loss", "train loss", "max logit",
                                  "spikes", "created",  "tags"};
    static_assert(std::size(names) == size_t(Column::Count), "one header per column");
    return tr(names[section]);
}

QVariant RunListModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(m_runs.size())) return {};
    const RunInfo& r = m_runs[index.row()];
    if (role == RunIdRole) return qlonglong(r.id);
    if (role == Qt::DisplayRole || role == SortRole) {
        const bool sort = role == SortRole;
        switch (index.column()) {
            case int(Column::Id):
                return qlonglong(r.id);
            case int(Column::Name):
                return QString::fromStdString(r.name);
            case int(Column::Status):
                return QString::fromLatin1(toString(r.status));
            case int(Column::Settings):
                return m_settings[index.row()];
            case int(Column::Steps):
                return qlonglong(r.stepsDone);
            case int(Column::ValLoss):
                return lossCell(r.finalValLoss, sort);
            case int(Column::TrainLoss):
                return lossCell(r.finalLoss, sort);
            case int(Column::MaxLogit):
                if (!r.maxLogitRaw) return sort ? QVariant(-1.0) : QVariant(QStringLiteral("–"));
                return sort ? QVariant(*r.maxLogitRaw) : QVariant(formatNumber(*r.maxLogitRaw));
            case int(Column::Spikes):
                return qlonglong(r.spikes);
            case int(Column::Created): {
                if (sort) return QString::fromStdString(r.createdAt);
                const QDateTime t =
                    QDateTime::fromString(QString::fromStdString(r.createdAt), Qt::ISODate);
                return t.isValid() ? t.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"))
                                   : QString::fromStdString(r.createdAt);
            }
            case int(Column::Tags):
                return QString::fromStdString(r.tags);
        }
    }
    if (role == Qt::ToolTipRole) {
        QString tip = QStringLiteral("%1 — %2").arg(QString::fromStdString(r.name),
                                                    QString::fromLatin1(toString(r.status)));
        if (!r.statusMessage.empty())
            tip += QStringLiteral("\n") + QString::fromStdString(r.statusMessage);
        if (!r.notes.empty()) tip += QStringLiteral("\nnotes: ") + QString::fromStdString(r.notes);
        return tip;
    }
    if (role == Qt::ForegroundRole && index.column() == int(Column::Status)) {
        switch (r.status) {
            case RunStatus::Running:
                return QBrush(QColor(20, 90, 200));
            case RunStatus::Diverged:
                return QBrush(QColor(200, 0, 0));
            case RunStatus::Failed:
                return QBrush(QColor(140, 0, 0));
            case RunStatus::Interrupted:
                return QBrush(QColor(200, 120, 0));
            case RunStatus::Stopped:
                return QBrush(QColor(110, 110, 110));
            case RunStatus::Finished:
                return QBrush(QColor(30, 130, 30));
            case RunStatus::Unknown:  // a status this build has no name for: shown as unknown
                return QBrush(QColor(110, 110, 110));
        }
    }
    if (role == Qt::ForegroundRole && index.column() == int(Column::MaxLogit) && r.maxLogitRaw &&
        *r.maxLogitRaw > 30) {
        return QBrush(QColor(200, 0, 0));  // past the domain's "intervene" threshold
    }
    return {};
}

}  // namespace qklab::gui
