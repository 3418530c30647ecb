// run_browser_panel.cpp — table, filter, edit actions and change polling.
#include "run/run_browser_panel.h"

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <optional>
#include <set>

#include "common/file_dialogs.h"
#include "common/run_data.h"
#include "run/run_list_model.h"

namespace qklab::gui {

// The run table's filter: Qt's fixed-string match over every column, or, for "sweep:NAME",
// the runs that belong to the sweeps given.
class RunFilterProxy : public QSortFilterProxyModel {
  public:
    using QSortFilterProxyModel::QSortFilterProxyModel;
    void setSweepIds(std::optional<std::set<int64_t>> ids) {
        m_sweepIds = std::move(ids);
        invalidateFilter();
    }
    const std::optional<std::set<int64_t>>& sweepIds() const { return m_sweepIds; }

  protected:
    bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
        if (!m_sweepIds) return QSortFilterProxyModel::filterAcceptsRow(row, parent);
        const auto& runs = static_cast<const RunListModel*>(sourceModel())->runs();
        if (row < 0 || row >= int(runs.size())) return false;
        const RunInfo& r = runs[size_t(row)];
        return r.sweep && m_sweepIds->count(r.sweep->sweepId) > 0;
    }

  private:
    std::optional<std::set<int64_t>> m_sweepIds;
};

namespace {
const QString kSweepPrefix = QStringLiteral("sweep:");

// "sweep:NAME": the sweep of that name or id; failing that, every sweep whose name starts
// with NAME (case-insensitive), so the list narrows while the name is typed. "sweep:" alone
// is every run that belongs to some sweep.
std::set<int64_t> sweepsMatching(RunStore* store, const QString& name) {
    std::set<int64_t> ids;
    if (!store) return ids;
    std::vector<SweepInfo> sweeps;
    try {
        sweeps = store->sweeps();
    } catch (const std::exception&) {
        return ids;  // a file from before sweeps: no run is in one
    }
    for (const SweepInfo& s : sweeps)
        if (QString::fromStdString(s.name) == name || QString::number(s.id) == name)
            ids.insert(s.id);
    if (!ids.empty()) return ids;
    for (const SweepInfo& s : sweeps)
        if (QString::fromStdString(s.name).startsWith(name, Qt::CaseInsensitive)) ids.insert(s.id);
    return ids;
}
}  // namespace

RunBrowserPanel::RunBrowserPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    auto* top = new QHBoxLayout;
    m_search = new QLineEdit;
    m_search->setPlaceholderText(tr("Filter runs (name, status, settings, tags; sweep:NAME)…"));
    m_search->setClearButtonEnabled(true);
    m_search->setObjectName(QStringLiteral("runFilter"));
    top->addWidget(m_search, 1);
    auto addButton = [&](const QString& text, const QString& tip, auto slot) {
        auto* b = new QToolButton;
        b->setText(text);
        b->setToolTip(tip);
        connect(b, &QToolButton::clicked, this, slot);
        top->addWidget(b);
    };
    addButton(tr("Rename"), tr("Rename the selected run"), &RunBrowserPanel::renameSelected);
    addButton(tr("Notes"), tr("Edit the selected run's notes"),
              &RunBrowserPanel::editNotesSelected);
    addButton(tr("Tags"), tr("Edit the selected run's tags (comma separated)"),
              &RunBrowserPanel::editTagsSelected);
    addButton(tr("Delete"), tr("Delete the selected run and all its rows"),
              &RunBrowserPanel::deleteSelected);
    addButton(tr("Reuse config"),
              tr("Load the selected run's config, with its interventions as timed events, into the "
                 "set-up form: the run can be repeated exactly or varied"),
              &RunBrowserPanel::reuseSelected);
    addButton(tr("Compare"),
              tr("Compare the selected runs (Ctrl/Shift+click 2-12), or every run the filter "
                 "shows, side by side"),
              &RunBrowserPanel::compareSelected);
    addButton(tr("Open DB…"), tr("Open another run database"), &RunBrowserPanel::chooseDatabase);
    addButton(tr("New DB…"), tr("Create a new, empty run database"),
              &RunBrowserPanel::createDatabase);
    layout->addLayout(top);

    buildTable();
    layout->addWidget(m_view, 1);
    auto* bottom = new QHBoxLayout;
    m_details = new QLabel;
    m_details->setObjectName(QStringLiteral("runDetails"));
    m_details->setWordWrap(true);
    m_details->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_dbLabel = new QLabel;
    m_dbLabel->setObjectName(QStringLiteral("databaseLabel"));  // styled by qklab.qss
    bottom->addWidget(m_details, 1);
    bottom->addWidget(m_dbLabel);
    layout->addLayout(bottom);

    connect(m_search, &QLineEdit::textChanged, this, &RunBrowserPanel::onFilterChanged);
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] {
        if (m_filtering) return;  // onFilterChanged restores the shown run's row itself
        showDetails();
        const int64_t id = selectedRunId();
        if (id > 0) emit runActivated(id);
    });
    // Double-click opens the run, as everywhere else a list opens what it lists; renaming
    // is F2 or the context menu (a double-click used to open Rename over the opened run).
    connect(m_view, &QTableView::doubleClicked, this, [this] {
        const int64_t id = selectedRunId();
        if (id > 0) emit runActivated(id);
    });
    addTableActions();

    m_poll = new QTimer(this);
    m_poll->setInterval(1000);
    connect(m_poll, &QTimer::timeout, this, &RunBrowserPanel::poll);
}

RunBrowserPanel::~RunBrowserPanel() = default;

// The run table over the filter proxy: newest first, several rows selectable for Compare.
void RunBrowserPanel::buildTable() {
    m_model = new RunListModel(this);
    m_proxy = new RunFilterProxy(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(RunListModel::SortRole);
    m_proxy->setFilterKeyColumn(-1);
    m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_view = new QTableView;
    m_view->setObjectName(QStringLiteral("runTable"));
    m_view->setModel(m_proxy);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(RunListModel::columnOf("id"), Qt::DescendingOrder);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);  // several for Compare
    m_view->verticalHeader()->setVisible(false);
    m_view->verticalHeader()->setDefaultSectionSize(20);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setColumnWidth(RunListModel::columnOf("id"), 40);
    m_view->setColumnWidth(RunListModel::columnOf("name"), 140);
    m_view->setColumnWidth(RunListModel::columnOf(RunListModel::kSettingsColumn), 260);
    // Where a run was trained next to its status, not after "created" where a 1280-px list
    // cuts it off: "python: hf-llama" beside "qklab" is what tells a user's run from a proxy.
    if (const int source = RunListModel::columnOf("source"); source >= 0) {
        QHeaderView* header = m_view->horizontalHeader();
        header->moveSection(header->visualIndex(source),
                            header->visualIndex(RunListModel::columnOf("status")) + 1);
        m_view->setColumnWidth(source, 110);
    }
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
}

// The edit buttons' actions again, on the table's context menu; Rename also on F2.
void RunBrowserPanel::addTableActions() {
    m_view->setContextMenuPolicy(Qt::ActionsContextMenu);
    auto add = [this](const QString& text, auto slot, const QKeySequence& key = {}) {
        auto* action = new QAction(text, m_view);
        action->setShortcut(key);
        action->setShortcutContext(Qt::WidgetShortcut);
        connect(action, &QAction::triggered, this, slot);
        m_view->addAction(action);
    };
    add(tr("Rename…"), &RunBrowserPanel::renameSelected, QKeySequence(Qt::Key_F2));
    add(tr("Notes…"), &RunBrowserPanel::editNotesSelected);
    add(tr("Tags…"), &RunBrowserPanel::editTagsSelected);
    add(tr("Reuse config"), &RunBrowserPanel::reuseSelected);
    add(tr("Compare"), &RunBrowserPanel::compareSelected);
    add(tr("Delete…"), &RunBrowserPanel::deleteSelected);
}

void RunBrowserPanel::setPollInterval(int ms) {
    m_poll->setInterval(ms);
}

bool RunBrowserPanel::openDatabase(const QString& path) {
    // A file this user cannot write (read-only media, someone else's) is browsed read-only:
    // listing must not need a write.
    const QFileInfo info(path);
    const bool readOnly = info.exists() && !info.isWritable();
    try {
        auto store = std::make_unique<RunStore>(
            path.toStdString(), readOnly ? StoreAccess::ReadOnly : StoreAccess::ReadWrite);
        // Runs whose writer died (crash, kill, power loss) are stored as interrupted when the
        // file can be written; reads show them as interrupted either way.
        store->markInterruptedRuns();
        m_store = std::move(store);
    } catch (const std::exception& e) {
        // What is open now: at start-up (--db) there is no previous database to keep.
        const QString after =
            m_store ? tr("%1 stays open.").arg(QDir::toNativeSeparators(m_path))
                    : tr("No database is open: open or create one from the File menu.");
        emit error(
            tr("Cannot open the run database"),
            tr("%1\n\n%2\n\n%3")
                .arg(QDir::toNativeSeparators(path), QString::fromStdString(e.what()), after));
        return false;
    }
    m_path = QFileInfo(path).absoluteFilePath();
    m_dbLabel->setText(readOnly ? tr("%1 (read-only)").arg(QFileInfo(path).fileName())
                                : QFileInfo(path).fileName());
    m_dbLabel->setToolTip(m_path);
    m_lastMaxId = -1;
    m_model->setRuns({});
    refresh();
    m_poll->start();
    emit databaseChanged(m_path);
    return true;
}

void RunBrowserPanel::chooseDatabase() {
    // An open dialog ("Open", existing files): opening must never create anything.
    const QString path = chooseFileToOpen(this, tr("Open a run database"), m_path,
                                          tr("qklab databases (*.db);;All files (*)"));
    if (!path.isEmpty()) openExistingDatabase(path);
}

void RunBrowserPanel::createDatabase() {
    const QString path = chooseFileToSave(
        this, tr("New run database"), QFileInfo(m_path).absolutePath() + QStringLiteral("/runs.db"),
        tr("qklab databases (*.db)"));
    if (path.isEmpty()) return;
    if (QFileInfo::exists(path)) {
        // The dialog confirmed overwriting, but a database is never overwritten: open it.
        openExistingDatabase(path);
        return;
    }
    openDatabase(path);
}

bool RunBrowserPanel::openExistingDatabase(const QString& path) {
    if (!QFileInfo::exists(path)) {
        const bool create = m_confirmCreate
                                ? m_confirmCreate(path)
                                : QMessageBox::question(
                                      this, tr("No such database"),
                                      tr("%1 does not exist.\n\nCreate a new, empty run "
                                         "database there?")
                                          .arg(QDir::toNativeSeparators(path))) == QMessageBox::Yes;
        if (!create) return false;
    }
    return openDatabase(path);
}

void RunBrowserPanel::poll() {
    if (!m_store) return;
    try {
        const int64_t maxId = m_store->maxRunId();
        bool anyRunning = false;
        for (const RunInfo& r : m_model->runs())
            anyRunning = anyRunning || r.status == RunStatus::Running;
        // Every 5th tick regardless: another instance may have renamed or deleted a run,
        // which maxRunId() does not reveal.
        if (maxId != m_lastMaxId || anyRunning || ++m_quietTicks >= 5) {
            m_quietTicks = 0;
            refresh();
        }
    } catch (const std::exception&) {
        // A locked or briefly unavailable database: try again at the next tick.
    }
}

void RunBrowserPanel::refresh() {
    if (!m_store) return;
    try {
        const int64_t keep = selectedRunId();
        m_lastMaxId = m_store->maxRunId();
        const size_t before = m_model->runs().size();
        QSignalBlocker block(m_view->selectionModel());
        // A sweep started since the filter was typed: its runs belong in the list too.
        if (m_proxy->sweepIds()) applyFilter(m_search->text());
        m_model->setRuns(m_store->listRuns());
        if (keep > 0) {
            const int row = m_model->rowOf(keep);
            const QModelIndex index =
                row < 0 ? QModelIndex() : m_proxy->mapFromSource(m_model->index(row, 0));
            if (index.isValid())
                m_view->selectionModel()->setCurrentIndex(
                    index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        }
        showDetails();
        if (m_model->runs().size() != before) emit runsChanged();
    } catch (const std::exception& e) {
        m_details->setText(tr("Could not read runs: %1").arg(QString::fromStdString(e.what())));
    }
}

int64_t RunBrowserPanel::selectedRunId() const {
    const QModelIndex current = m_view->currentIndex();
    return current.isValid() ? current.data(RunListModel::RunIdRole).toLongLong() : 0;
}

void RunBrowserPanel::selectRun(int64_t id) {
    m_shownRun = id;
    m_clearedFilter.clear();
    const int row = m_model->rowOf(id);
    if (row < 0) return;
    QModelIndex index = m_proxy->mapFromSource(m_model->index(row, 0));
    if (!index.isValid()) {
        // Hidden by the filter (a new run named unlike the filter, say): another row must not
        // stay highlighted while the views show this one.
        const QString filter = m_search->text();
        m_search->clear();
        m_clearedFilter = filter;
        index = m_proxy->mapFromSource(m_model->index(row, 0));
    }
    m_view->selectionModel()->setCurrentIndex(
        index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_view->scrollTo(index);
    showDetails();
}

std::vector<int64_t> RunBrowserPanel::selectedRunIds() const {
    std::vector<int64_t> ids;
    for (int row = 0; row < m_proxy->rowCount(); ++row) {
        const QModelIndex index = m_proxy->index(row, 0);
        if (m_view->selectionModel()->isRowSelected(row, {}))
            ids.push_back(index.data(RunListModel::RunIdRole).toLongLong());
    }
    return ids;
}

void RunBrowserPanel::compareSelected() {
    std::vector<int64_t> ids = selectedRunIds();
    if (ids.size() < 2 && !m_search->text().isEmpty()) {
        ids.clear();
        for (int row = 0; row < m_proxy->rowCount(); ++row)
            ids.push_back(m_proxy->index(row, 0).data(RunListModel::RunIdRole).toLongLong());
    }
    if (ids.size() < 2 || ids.size() > 12) {
        emit error(tr("Compare"),
                   tr("Compare takes 2 to 12 runs: select them with Ctrl+click or Shift+click, or "
                      "filter the list down to them (%n run(s) now).",
                      nullptr, int(ids.size())));
        return;
    }
    std::sort(ids.begin(), ids.end());
    emit compareRequested(ids);
}

QString RunBrowserPanel::detailsText() const {
    return m_details->text();
}

QString RunBrowserPanel::filterText() const {
    return m_search->text();
}

void RunBrowserPanel::setFilterText(const QString& text) {
    m_search->setText(text);
}

void RunBrowserPanel::applyFilter(const QString& text) {
    const QString t = text.trimmed();
    if (t.startsWith(kSweepPrefix, Qt::CaseInsensitive)) {
        m_proxy->setFilterFixedString(QString());
        m_proxy->setSweepIds(sweepsMatching(m_store.get(), t.mid(kSweepPrefix.size()).trimmed()));
        return;
    }
    if (m_proxy->sweepIds()) m_proxy->setSweepIds(std::nullopt);
    m_proxy->setFilterFixedString(text);
}

void RunBrowserPanel::onFilterChanged(const QString& text) {
    m_clearedFilter.clear();
    // Filtering must not change which run the views show: the proxy moves the current index
    // to a neighbouring row when it hides the current one, which used to open that run.
    m_filtering = true;
    applyFilter(text);
    if (m_shownRun > 0) {
        const int row = m_model->rowOf(m_shownRun);
        const QModelIndex index =
            row < 0 ? QModelIndex() : m_proxy->mapFromSource(m_model->index(row, 0));
        if (index.isValid()) {
            m_view->selectionModel()->setCurrentIndex(
                index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        } else {
            m_view->selectionModel()->clearSelection();
            m_view->selectionModel()->setCurrentIndex(QModelIndex(), QItemSelectionModel::NoUpdate);
        }
    }
    m_filtering = false;
    showDetails();
}

void RunBrowserPanel::showDetails() {
    const RunInfo* r = m_model->runById(selectedRunId());
    if (!r) {
        m_details->setToolTip(QString());
        QString text = tr("%n run(s)", nullptr, int(m_model->runs().size()));
        if (m_proxy->sweepIds() && m_proxy->sweepIds()->empty())
            text += tr(" · no sweep matches “%1”").arg(m_search->text().trimmed().toHtmlEscaped());
        else if (m_proxy->sweepIds())
            text += tr(" · %n shown", nullptr, m_proxy->rowCount());
        if (m_shownRun > 0 && m_model->runById(m_shownRun))
            text += tr(" · run %1, shown in the views, is hidden by the filter").arg(m_shownRun);
        m_details->setText(text);
        return;
    }
    QString text = tr("<b>%1</b> · %2 · seed %3 · %4 · %5")
                       .arg(QString::fromStdString(r->name).toHtmlEscaped(),
                            QString::fromLatin1(toString(r->status)))
                       .arg(r->seed)
                       .arg(QString::fromStdString(r->device).toHtmlEscaped(),
                            QString::fromStdString(r->appVersion).toHtmlEscaped());
    if (!m_clearedFilter.isEmpty())
        text += tr(" · filter “%1” cleared to show this run")
                    .arg(m_clearedFilter.left(40).toHtmlEscaped());
    if (!r->statusMessage.empty())
        text += QStringLiteral("<br>") + QString::fromStdString(r->statusMessage).toHtmlEscaped();
    text += outsideQklabDetails(*r);
    if (!r->notes.empty())
        text +=
            QStringLiteral("<br><i>%1</i>").arg(QString::fromStdString(r->notes).toHtmlEscaped());
    m_details->setText(text);
    // The whole user config, indented, on hover: the line above is cut to fit the dock.
    const QString userConfig = userConfigText(*r);
    m_details->setToolTip(userConfig.isEmpty()
                              ? QString()
                              : tr("User config (qklab.init(config=...)):\n%1").arg(userConfig));
}

// A run trained in the user's own loop: where it came from, and its own config, labelled, since
// qklab's config of it holds only the model's shape and the probe settings.
QString RunBrowserPanel::outsideQklabDetails(const RunInfo& r) {
    if (!trainedOutsideQklab(r)) return {};
    QString text =
        QStringLiteral("<br>") +
        tr("trained outside qklab: %1").arg(QString::fromStdString(r.source).toHtmlEscaped());
    const QString line = userConfigLine(r);
    if (!line.isEmpty()) text += tr(" · user config: %1").arg(line.toHtmlEscaped());
    return text;
}

RunConfig RunBrowserPanel::replayConfig(RunStore& store, int64_t runId) {
    // Interventions were applied at recorded steps; as config events they replay identically.
    return configAsTrained(store.run(runId), /*strict=*/true);
}

void RunBrowserPanel::reuseSelected() {
    const int64_t id = selectedRunId();
    if (id <= 0 || !m_store) return;
    try {
        emit configRequested(replayConfig(*m_store, id));
    } catch (const std::exception& e) {
        emit error(tr("Cannot read the run's config"), QString::fromStdString(e.what()));
    }
}

void RunBrowserPanel::renameSelected() {
    const RunInfo* r = m_model->runById(selectedRunId());
    if (!r || !m_store) return;
    const int64_t id = r->id;
    bool ok = false;
    const QString name =
        QInputDialog::getText(this, tr("Rename run"), tr("New name:"), QLineEdit::Normal,
                              QString::fromStdString(r->name), &ok);
    if (!ok || name.trimmed().isEmpty()) return;
    try {
        m_store->renameRun(id, name.trimmed().toStdString());
    } catch (const std::exception& e) {
        emit error(tr("Rename failed"), QString::fromStdString(e.what()));
    }
    refresh();
}

void RunBrowserPanel::editNotesSelected() {
    const RunInfo* r = m_model->runById(selectedRunId());
    if (!r || !m_store) return;
    const int64_t id = r->id;
    bool ok = false;
    const QString notes = QInputDialog::getMultiLineText(this, tr("Run notes"), tr("Notes:"),
                                                         QString::fromStdString(r->notes), &ok);
    if (!ok) return;
    try {
        m_store->setNotes(id, notes.toStdString());
    } catch (const std::exception& e) {
        emit error(tr("Saving notes failed"), QString::fromStdString(e.what()));
    }
    refresh();
}

void RunBrowserPanel::editTagsSelected() {
    const RunInfo* r = m_model->runById(selectedRunId());
    if (!r || !m_store) return;
    const int64_t id = r->id;
    bool ok = false;
    const QString tags =
        QInputDialog::getText(this, tr("Run tags"), tr("Tags (comma separated):"),
                              QLineEdit::Normal, QString::fromStdString(r->tags), &ok);
    if (!ok) return;
    try {
        m_store->setTags(id, tags.toStdString());
    } catch (const std::exception& e) {
        emit error(tr("Saving tags failed"), QString::fromStdString(e.what()));
    }
    refresh();
}

void RunBrowserPanel::deleteSelected() {
    const RunInfo* r = m_model->runById(selectedRunId());
    if (!r || !m_store) return;
    const int64_t id = r->id;
    if (r->status == RunStatus::Running) {
        emit error(tr("Run is training"), tr("Stop run %1 before deleting it.").arg(id));
        return;
    }
    const auto answer = QMessageBox::question(
        this, tr("Delete run"),
        tr("Delete run %1 “%2” and all its metrics, probes and histograms?\nThis cannot be undone.")
            .arg(id)
            .arg(QString::fromStdString(r->name)),
        QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer != QMessageBox::Yes) return;
    try {
        m_store->deleteRun(id);
    } catch (const std::exception& e) {
        emit error(tr("Delete failed"), QString::fromStdString(e.what()));
    }
    refresh();
}

}  // namespace qklab::gui
