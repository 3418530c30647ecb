// run_list_model.h — the runs of one database as a table model: the run-list columns of
// core's runColumns() (qklab/store/record_columns.h: id, name, status, steps, val loss, train loss,
// max logit, spikes, qk clips, created, tags) and, after the status, the key settings.
//
// setRuns() is called by a poll every second, so it updates rows in place when the set of
// runs is unchanged (selection and scroll position survive) and only resets when runs were
// added or deleted.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "qklab/store/record_columns.h"
#include "qklab/store/run_store.h"

namespace qklab::gui {

class RunListModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    // The column of a run column's name (e.g. "final_val_loss"), or of kSettingsColumn; -1
    // when there is none.
    static int columnOf(const char* name);
    static constexpr const char* kSettingsColumn = "key_settings";
    static constexpr int SortRole = Qt::UserRole + 1;
    static constexpr int RunIdRole = Qt::UserRole + 2;

    explicit RunListModel(QObject* parent = nullptr);

    void setRuns(std::vector<RunInfo> runs);
    const std::vector<RunInfo>& runs() const { return m_runs; }
    const RunInfo* runById(int64_t id) const;
    int rowOf(int64_t id) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation o, int role) const override;

  private:
    std::vector<RunInfo> m_runs;
    std::vector<QString> m_settings;  // keySettings() per run, parsed once per update
};

}  // namespace qklab::gui
