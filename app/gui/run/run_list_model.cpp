// run_list_model.cpp — display text, sort keys and status colours of the run table.
#include "run/run_list_model.h"

#include <QBrush>
#include <QDateTime>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/run_data.h"
#include "qklab/store/run_export.h"

namespace qklab::gui {

namespace {
// A loss as shown and as sorted: missing ones sort last, NaN (a diverged validation) too.
QVariant lossCell(const std::optional<double>& loss, bool sort) {
    if (!loss) return sort ? QVariant(1e300) : QVariant(QStringLiteral("–"));
    if (std::isnan(*loss)) return sort ? QVariant(1e299) : QVariant(QStringLiteral("NaN"));
    return sort ? QVariant(*loss) : QVariant(QString::number(*loss, 'f', 4));
}

// A cell of a core column, as shown or as sorted.
QVariant cellOf(const RunColumn& c, const RunInfo& r, bool sort) {
    const ColumnValue v = c.get(r);
    const std::optional<double> number = numberOf(v);
    switch (c.format) {
        case RunColumn::Format::Loss:
            return lossCell(number, sort);
        case RunColumn::Format::Logit:
            if (!number) return sort ? QVariant(-1.0) : QVariant(QStringLiteral("–"));
            return sort ? QVariant(*number) : QVariant(formatNumber(*number));
        case RunColumn::Format::Time: {
            const QString text = QString::fromStdString(csvText(v));
            const QDateTime t = QDateTime::fromString(text, Qt::ISODate);
            if (sort || !t.isValid()) return text;
            return t.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"));
        }
        case RunColumn::Format::Plain:
            break;
    }
    if (const int64_t* i = std::get_if<int64_t>(&v)) return qlonglong(*i);
    if (number) return sort ? QVariant(*number) : QVariant(formatNumber(*number));
    return QString::fromStdString(csvText(v));
}

// Core's run-list columns, and the key settings (nullptr) after the status.
const std::vector<const RunColumn*>& modelColumns() {
    static const std::vector<const RunColumn*> columns = [] {
        std::vector<const RunColumn*> c = listedRunColumns();
        const auto status = std::find_if(c.begin(), c.end(), [](const RunColumn* x) {
            return std::strcmp(x->name, "status") == 0;
        });
        c.insert(status == c.end() ? c.end() : status + 1, nullptr);
        return c;
    }();
    return columns;
}
}  // namespace

int RunListModel::columnOf(const char* name) {
    const auto& columns = modelColumns();
    for (size_t i = 0; i < columns.size(); ++i)
        if (std::strcmp(columns[i] ? columns[i]->name : kSettingsColumn, name) == 0) return int(i);
    return -1;
}

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
            settings.push_back(keySettings(configAsTrained(runs[i]), trainedOutsideQklab(runs[i]),
                                           unobservedConfigKeys(runs[i])));
    }
    if (sameIds) {
        m_runs = std::move(runs);
        m_settings = std::move(settings);
        if (!m_runs.empty())
            emit dataChanged(index(0, 0), index(int(m_runs.size()) - 1, columnCount() - 1));
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
    return parent.isValid() ? 0 : int(modelColumns().size());
}

QVariant RunListModel::headerData(int section, Qt::Orientation o, int role) const {
    if (o != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= columnCount())
        return {};
    const RunColumn* c = modelColumns()[section];
    return c ? tr(c->title) : tr("key settings");
}

QVariant RunListModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(m_runs.size()) || index.column() >= columnCount())
        return {};
    const RunInfo& r = m_runs[index.row()];
    if (role == RunIdRole) return qlonglong(r.id);
    if (role == Qt::DisplayRole || role == SortRole) {
        const RunColumn* c = modelColumns()[index.column()];
        return c ? cellOf(*c, r, role == SortRole) : QVariant(m_settings[index.row()]);
    }
    if (role == Qt::ToolTipRole) {
        QString tip = QStringLiteral("%1 — %2").arg(QString::fromStdString(r.name),
                                                    QString::fromLatin1(toString(r.status)));
        if (!r.statusMessage.empty())
            tip += QStringLiteral("\n") + QString::fromStdString(r.statusMessage);
        if (trainedOutsideQklab(r))
            tip += tr("\ntrained outside qklab: %1").arg(QString::fromStdString(r.source));
        if (!r.notes.empty()) tip += QStringLiteral("\nnotes: ") + QString::fromStdString(r.notes);
        return tip;
    }
    if (role == Qt::ForegroundRole && index.column() == columnOf("status")) {
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
    if (role == Qt::ForegroundRole && index.column() == columnOf("max_logit_raw") &&
        r.maxLogitRaw && *r.maxLogitRaw > 30) {
        return QBrush(QColor(200, 0, 0));  // past the domain's "intervene" threshold
    }
    return {};
}

}  // namespace qklab::gui
