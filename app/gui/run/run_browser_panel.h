// run_browser_panel.h — the run list of one SQLite store: search/filter, rename, notes, tags,
// delete with confirmation, open another database.
//
// It owns the GUI thread's RunStore connection. A 1 s poll of maxRunId() (plus a list
// refresh while any run is still running) makes runs written by qklab-cli or another app
// instance appear without restarting; listRuns() on a store of hundreds of runs takes a few
// milliseconds, well inside the GUI thread's budget.
#pragma once

#include <QWidget>
#include <functional>
#include <memory>
#include <vector>

#include "common/gui_types.h"
#include "qklab/store/run_store.h"

class QLabel;
class QLineEdit;
class QTableView;
class QTimer;

namespace qklab::gui {

class RunFilterProxy;
class RunListModel;

class RunBrowserPanel : public QWidget {
    Q_OBJECT
  public:
    explicit RunBrowserPanel(QWidget* parent = nullptr);
    ~RunBrowserPanel() override;

    // Opens (creating if new) a store; on failure keeps the previous one and emits error.
    bool openDatabase(const QString& path);
    // "Open": a path that does not exist is created only if confirmCreate(path) says so (a
    // typo such as runz.db used to create an empty database silently).
    bool openExistingDatabase(const QString& path);
    // Asks the user; tests replace it.
    void setCreateConfirmation(std::function<bool(const QString&)> confirm) {
        m_confirmCreate = std::move(confirm);
    }
    QString databasePath() const { return m_path; }
    RunStore* store() const { return m_store.get(); }
    RunListModel* model() const { return m_model; }

    int64_t selectedRunId() const;
    // The line under the list: the selected run's status, source, user config and notes.
    QString detailsText() const;
    // Every selected row's run (Ctrl/Shift+click), in list order.
    std::vector<int64_t> selectedRunIds() const;
    // Selects the run the views show. A run hidden by the filter is never left unselected
    // behind another highlighted row: the filter is cleared (and the details line says so),
    // so the selection always names the run on screen.
    void selectRun(int64_t id);
    QString filterText() const;
    // Sets the filter box's text: words match name, status, settings and tags; "sweep:NAME"
    // (a sweep's name, a prefix of it or its id) shows only that sweep's runs.
    void setFilterText(const QString& text);
    void setPollInterval(int ms);

    // The stored config plus the run's user interventions as config events: a replay.
    static RunConfig replayConfig(RunStore& store, int64_t runId);

  public slots:
    void refresh();
    void chooseDatabase();  // File > Open database…: existing files
    void createDatabase();  // File > New database…
    void renameSelected();
    void editNotesSelected();
    void editTagsSelected();
    void deleteSelected();
    void reuseSelected();
    // Compare: the selected runs, or with fewer than two selected, every run the filter shows.
    void compareSelected();

  signals:
    void compareRequested(const std::vector<int64_t>& runIds);
    void configRequested(const qklab::RunConfig& config);  // "Reuse config"
    void runActivated(qint64 runId);                       // the user picked a run to look at
    void databaseChanged(const QString& path);
    void runsChanged();  // the list was reloaded with changes
    void error(const QString& title, const QString& message);

  private:
    void buildTable();
    void addTableActions();
    void poll();
    void showDetails();
    static QString outsideQklabDetails(const RunInfo& r);
    void onFilterChanged(const QString& text);
    void applyFilter(const QString& text);  // the proxy's filter for the box's text

    std::unique_ptr<RunStore> m_store;
    std::function<bool(const QString&)> m_confirmCreate;
    QString m_path;
    int64_t m_lastMaxId = -1;
    int64_t m_shownRun = 0;    // the run the views show (selectRun's last argument)
    QString m_clearedFilter;   // a filter selectRun cleared, named in the details line
    bool m_filtering = false;  // the proxy is re-filtering: its row moves are not picks
    int m_quietTicks = 0;
    RunListModel* m_model = nullptr;
    RunFilterProxy* m_proxy = nullptr;
    QTableView* m_view = nullptr;
    QLineEdit* m_search = nullptr;
    QLabel* m_dbLabel = nullptr;
    QLabel* m_details = nullptr;
    QTimer* m_poll = nullptr;
};

}  // namespace qklab::gui
