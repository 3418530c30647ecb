// sweep_table.h — the points of one sweep as a table model: the point's index, its state, one
// column per swept key (the seed as "run.seed") and the comparison summary columns
// (qklab/analysis/compare.h summaryColumns(), the same the Compare tab shows). Sorted through a
// QSortFilterProxyModel on SortRole: numbers as numbers, missing values last.
#pragma once

#include <QAbstractTableModel>
#include <QStringList>
#include <vector>

#include "qklab/analysis/sweep_report.h"

namespace qklab::gui {

class SweepTableModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    static constexpr int SortRole = Qt::UserRole + 1;
    static constexpr int RunIdRole = Qt::UserRole + 2;  // 0 = the point has no run yet
    static constexpr int PointRole = Qt::UserRole + 3;

    explicit SweepTableModel(QObject* parent = nullptr);

    // Rows update in place when the sweep and its keys are the same (a running sweep's poll
    // keeps the selection and the sort); otherwise the model resets.
    void setReport(const SweepReport& report);
    void clear();

    const std::vector<SweepPointResult>& points() const { return m_points; }
    const QStringList& keys() const { return m_keys; }  // the coordinate columns
    int firstSummaryColumn() const { return 2 + int(m_keys.size()); }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation o, int role) const override;

  private:
    QVariant coordCell(const SweepPointResult& p, int keyIndex, bool sort) const;
    QVariant summaryCell(const SweepPointResult& p, int column, bool sort) const;

    int64_t m_sweepId = 0;
    QStringList m_keys;
    std::vector<SweepPointResult> m_points;
};

// A coordinate as shown: numbers compact (0.003, 1e-05), strings bare.
QString coordText(const nlohmann::json& value);

}  // namespace qklab::gui
