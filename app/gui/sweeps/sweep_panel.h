// sweep_panel.h — the Sweeps tab: the store's sweeps (name, status, points done/total) and,
// for the selected one, its LR-sensitivity plots (SweepPlots) and its point table
// (SweepTableModel). Selected points open in the Compare tab.
//
// Sweeps run in qklab-cli processes (started here or in a terminal); the panel only reads.
// Like the run browser it polls the store every second (RunStore::dataVersion() on its own
// read-only connection, so only commits by others wake it), and re-reads the sweep list and
// the selected sweep's report on a pool thread (sweepReport summarises every point's run),
// so a running sweep's points fill in. A sweep whose process is gone reads "interrupted" and
// gets a Resume button (`qklab-cli sweep --resume`).
#pragma once

#include <QStringList>
#include <QWidget>
#include <memory>
#include <vector>

#include "qklab/analysis/sweep_report.h"
#include "qklab/store/run_store.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QSplitter;
class QTableView;
class QTableWidget;
class QTimer;

namespace qklab::gui {

class SweepPlots;
class SweepTableModel;

// What one background read brings back: the sweep list, each sweep's points with a result,
// and the selected sweep's report.
struct SweepPanelData {
    std::vector<SweepInfo> sweeps;
    std::vector<int> done;  // per sweep: points whose run finished, diverged or failed
    int64_t reportId = 0;   // the sweep the report is of (0: none asked)
    std::shared_ptr<SweepReport> report;
    QString reportError;
    double seconds = 0;
};

class SweepPanel : public QWidget {
    Q_OBJECT
  public:
    explicit SweepPanel(QWidget* parent = nullptr);
    ~SweepPanel() override;

    void setDatabase(const QString& path);
    QString databasePath() const { return m_path; }
    // Selects a sweep by name or id; one not listed yet is selected when it appears.
    void selectSweep(const QString& nameOrId);
    const SweepReport* report() const { return m_report.get(); }  // null until loaded
    std::vector<int64_t> selectedRunIds() const;                  // table selection, by row
    void setPollInterval(int ms);

    void setMargin(double nats);
    double margin() const;
    void setValidationLoss(bool validation);
    bool validationLoss() const;

    SweepPlots* plots() const { return m_plots; }
    QTableView* table() const { return m_table; }
    SweepTableModel* model() const { return m_model; }
    QTableWidget* sweepList() const { return m_list; }
    QPushButton* resumeButton() const { return m_resume; }

  public slots:
    void refresh();  // re-reads the list and the selected sweep now
    void compareSelected();
    void resumeSelected();
    // Shows the given sweep's share of the table: the splitter between plots and table.
    void setTableShare(double share);

  signals:
    void compareRequested(const std::vector<int64_t>& runIds);
    void runActivated(qint64 runId);
    void showRunsRequested(const QString& filter);  // "sweep:NAME" for the run browser
    void newSweepRequested();
    // Sweeps whose process is gone, when that list changes (the window's status bar says so).
    void interruptedSweeps(const QStringList& names);
    void loaded(qint64 sweepId);  // the list and (for sweepId > 0) the report were drawn
    void error(const QString& title, const QString& message);

  private:
    QWidget* buildListSide();
    QWidget* buildSweepSide();
    QWidget* buildTable();
    void poll();
    void onData(SweepPanelData panel);
    void fillList(const SweepPanelData& panel);
    void showReport(std::shared_ptr<SweepReport> report);
    void updateHeader();
    void onSweepPicked();
    const SweepInfo* sweepInfo(int64_t id) const;

    QString m_path;
    std::unique_ptr<RunStore> m_store;  // the poll's read-only connection
    int64_t m_lastVersion = -1;
    int m_quietTicks = 0;
    bool m_loading = false, m_dirty = false;
    uint64_t m_generation = 0;
    qint64 m_lastLoadMs = 0;
    int64_t m_sweepId = 0;
    QString m_pendingSelect;
    std::vector<SweepInfo> m_sweeps;
    std::shared_ptr<SweepReport> m_report;
    QString m_reportError;
    QStringList m_interrupted;

    QTableWidget* m_list = nullptr;
    QLabel* m_banner = nullptr;
    QLabel* m_header = nullptr;
    QLabel* m_note = nullptr;
    QPushButton* m_resume = nullptr;
    QPushButton* m_compare = nullptr;
    QPushButton* m_showRuns = nullptr;
    QComboBox* m_lossKind = nullptr;
    QDoubleSpinBox* m_margin = nullptr;
    SweepPlots* m_plots = nullptr;
    SweepTableModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QTableView* m_table = nullptr;
    QSplitter* m_split = nullptr;
    QTimer* m_poll = nullptr;
    QTimer* m_optionsTimer = nullptr;
};

}  // namespace qklab::gui
