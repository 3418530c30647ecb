// sweep_panel.cpp — the Sweeps tab: list, header, controls, plots and point table.
#include "sweeps/sweep_panel.h"

#include <QComboBox>
#include <QDateTime>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <map>

#include "common/async_store.h"
#include "sweeps/sweep_launch.h"
#include "sweeps/sweep_plots.h"
#include "sweeps/sweep_table.h"

namespace qklab::gui {

namespace {

// The sweep list's columns.
constexpr int kNameColumn = 0, kStatusColumn = 1, kDoneColumn = 2, kListColumns = 3;

QColor sweepStatusColor(const std::string& status) {
    if (status == "running") return QColor(20, 90, 200);
    if (status == "finished") return QColor(30, 130, 30);
    if (status == "interrupted" || status == "stopped") return QColor(200, 120, 0);
    return QColor(120, 120, 120);
}

bool resumable(const std::string& status) {
    return status == "interrupted" || status == "stopped";
}

// Points of a sweep whose latest run has a result (finished, diverged or failed).
int donePoints(RunStore& store, int64_t sweepId) {
    std::map<int64_t, RunStatus> latest;  // sweepRuns: by point, then id
    for (const RunInfo& r : store.sweepRuns(sweepId))
        if (r.sweep) latest[r.sweep->point] = r.status;
    return int(std::count_if(latest.begin(), latest.end(), [](const auto& entry) {
        return entry.second == RunStatus::Finished || entry.second == RunStatus::Diverged ||
               entry.second == RunStatus::Failed;
    }));
}

SweepPanelData readPanelData(RunStore& store, int64_t sweepId, SweepReportOptions options) {
    QElapsedTimer clock;
    clock.start();
    SweepPanelData d;
    d.sweeps = store.sweeps();
    for (const SweepInfo& s : d.sweeps) d.done.push_back(donePoints(store, s.id));
    d.reportId = sweepId;
    if (sweepId > 0) {
        try {
            d.report = std::make_shared<SweepReport>(sweepReport(store, sweepId, options));
        } catch (const std::exception& e) {
            d.reportError = QString::fromStdString(e.what());
        }
    }
    d.seconds = clock.nsecsElapsed() / 1e9;
    return d;
}

}  // namespace

SweepPanel::SweepPanel(QWidget* parent) : QWidget(parent) {
    // Margin and loss kind re-read the report; a spin box's key repeat sends a burst.
    m_optionsTimer = new QTimer(this);
    m_optionsTimer->setSingleShot(true);
    m_optionsTimer->setInterval(120);
    connect(m_optionsTimer, &QTimer::timeout, this, &SweepPanel::refresh);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(buildListSide());
    split->addWidget(buildSweepSide());
    split->setStretchFactor(0, 0);
    split->setStretchFactor(1, 1);
    split->setSizes({210, 1000});
    layout->addWidget(split);

    m_poll = new QTimer(this);
    m_poll->setInterval(1000);
    connect(m_poll, &QTimer::timeout, this, &SweepPanel::poll);
}

SweepPanel::~SweepPanel() = default;

QWidget* SweepPanel::buildListSide() {
    auto* side = new QWidget;
    auto* v = new QVBoxLayout(side);
    v->setContentsMargins(0, 0, 0, 0);
    m_banner = new QLabel;
    m_banner->setWordWrap(true);
    m_banner->setObjectName(QStringLiteral("sweepBanner"));
    m_banner->setStyleSheet(QStringLiteral("color: rgb(200, 120, 0);"));
    m_banner->hide();
    m_list = new QTableWidget(0, kListColumns);
    m_list->setObjectName(QStringLiteral("sweepList"));
    m_list->setHorizontalHeaderLabels({tr("sweep"), tr("status"), tr("done")});
    m_list->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_list->setSelectionMode(QAbstractItemView::SingleSelection);
    m_list->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_list->verticalHeader()->setVisible(false);
    m_list->verticalHeader()->setDefaultSectionSize(20);
    m_list->horizontalHeader()->setSectionResizeMode(kNameColumn, QHeaderView::Stretch);
    m_list->horizontalHeader()->setSectionResizeMode(kStatusColumn, QHeaderView::ResizeToContents);
    m_list->horizontalHeader()->setSectionResizeMode(kDoneColumn, QHeaderView::ResizeToContents);
    connect(m_list, &QTableWidget::itemSelectionChanged, this, &SweepPanel::onSweepPicked);
    auto* create = new QPushButton(tr("New sweep from form…"));
    create->setToolTip(tr("Define a sweep over the set-up form's config and start it"));
    connect(create, &QPushButton::clicked, this, &SweepPanel::newSweepRequested);
    v->addWidget(m_banner);
    v->addWidget(m_list, 1);
    v->addWidget(create);
    return side;
}

QWidget* SweepPanel::buildSweepSide() {
    auto* side = new QWidget;
    auto* v = new QVBoxLayout(side);
    v->setContentsMargins(0, 0, 0, 0);
    auto* top = new QHBoxLayout;
    m_header = new QLabel(tr("No sweep selected."));
    m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // Wrapped: "No sweeps in this database yet: …" in one line made the window 1372 px wide.
    m_header->setWordWrap(true);
    m_header->setMinimumWidth(120);
    m_resume = new QPushButton(tr("Resume sweep"));
    m_resume->setToolTip(
        tr("Run the missing, stopped and interrupted points "
           "(qklab-cli sweep --resume), in the background"));
    m_resume->hide();
    m_showRuns = new QPushButton(tr("Show runs"));
    m_showRuns->setToolTip(tr("Filter the run list to this sweep's runs (sweep:NAME)"));
    m_compare = new QPushButton(tr("Compare"));
    m_compare->setToolTip(tr("Open the selected points (rows, 2-12) in the Compare tab"));
    connect(m_resume, &QPushButton::clicked, this, &SweepPanel::resumeSelected);
    connect(m_compare, &QPushButton::clicked, this, &SweepPanel::compareSelected);
    connect(m_showRuns, &QPushButton::clicked, this, [this] {
        if (const SweepInfo* s = sweepInfo(m_sweepId))
            emit showRunsRequested(QStringLiteral("sweep:") + QString::fromStdString(s->name));
    });
    top->addWidget(m_header, 1);
    top->addWidget(m_resume);
    top->addWidget(m_showRuns);
    top->addWidget(m_compare);
    v->addLayout(top);

    auto* controls = new QHBoxLayout;
    m_lossKind = new QComboBox;
    m_lossKind->addItems({tr("final training loss"), tr("final validation loss")});
    m_lossKind->setToolTip(tr("The loss each point is judged by"));
    m_margin = new QDoubleSpinBox;
    m_margin->setRange(0, 10);
    m_margin->setDecimals(2);
    m_margin->setSingleStep(0.05);
    m_margin->setValue(SweepReportOptions().margin);
    m_margin->setSuffix(tr(" nats"));
    m_margin->setToolTip(
        tr("Max stable LR: the largest LR where no seed diverged and the mean "
           "loss is at most this far above the curve's best"));
    m_note = new QLabel;
    m_note->setWordWrap(true);
    controls->addWidget(new QLabel(tr("Loss:")));
    controls->addWidget(m_lossKind);
    controls->addSpacing(12);
    controls->addWidget(new QLabel(tr("Stable within:")));
    controls->addWidget(m_margin);
    controls->addSpacing(12);
    controls->addWidget(m_note, 1);
    v->addLayout(controls);
    connect(m_lossKind, &QComboBox::currentIndexChanged, m_optionsTimer,
            qOverload<>(&QTimer::start));
    connect(m_margin, &QDoubleSpinBox::valueChanged, m_optionsTimer, qOverload<>(&QTimer::start));

    m_split = new QSplitter(Qt::Vertical);
    m_plots = new SweepPlots;
    m_split->addWidget(m_plots);
    m_split->addWidget(buildTable());
    m_split->setStretchFactor(0, 3);
    m_split->setStretchFactor(1, 2);
    m_split->setSizes({600, 400});  // the plots get the larger share, also at 1280x720
    v->addWidget(m_split, 1);
    return side;
}

QWidget* SweepPanel::buildTable() {
    m_model = new SweepTableModel(this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(SweepTableModel::SortRole);
    m_table = new QTableView;
    m_table->setObjectName(QStringLiteral("sweepTable"));
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(0, Qt::AscendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->setVisible(false);
    m_table->verticalHeader()->setDefaultSectionSize(20);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    connect(m_table, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        const qint64 id = index.data(SweepTableModel::RunIdRole).toLongLong();
        if (id > 0) emit runActivated(id);
    });
    return m_table;
}

void SweepPanel::setTableShare(double share) {
    const int total = std::max(100, m_split->height());
    const int table = int(total * std::clamp(share, 0.05, 0.95));
    m_split->setSizes({total - table, table});
}

void SweepPanel::setPollInterval(int ms) {
    m_poll->setInterval(ms);
}

void SweepPanel::setDatabase(const QString& path) {
    m_path = QFileInfo(path).absoluteFilePath();
    m_store.reset();
    m_lastVersion = -1;
    m_sweepId = 0;
    m_sweeps.clear();
    m_report.reset();
    m_list->setRowCount(0);
    m_model->clear();
    m_plots->clear();
    updateHeader();
    ++m_generation;  // an answer about the previous database is dropped
    m_loading = false;
    refresh();
    m_poll->start();
}

void SweepPanel::poll() {
    if (m_path.isEmpty() || !isVisible()) return;  // a hidden tab costs nothing
    try {
        if (!m_store)
            m_store = std::make_unique<RunStore>(m_path.toStdString(), StoreAccess::ReadOnly);
        const int64_t version = m_store->dataVersion();
        // Every 5th tick regardless: a sweep whose process died reads "interrupted" without
        // anyone committing anything.
        if (version != m_lastVersion || ++m_quietTicks >= 5) {
            m_lastVersion = version;
            m_quietTicks = 0;
            refresh();
        }
    } catch (const std::exception&) {
        m_store.reset();  // no file yet, or locked: try again at the next tick
    }
}

}  // namespace qklab::gui

namespace qklab::gui {

void SweepPanel::refresh() {
    if (m_path.isEmpty()) return;
    if (m_loading) {  // one read at a time; the newest request runs when it is back
        m_dirty = true;
        return;
    }
    m_loading = true;
    m_dirty = false;
    SweepReportOptions options;
    options.margin = margin();
    options.validationLoss = validationLoss();
    const int64_t id = m_sweepId;
    const uint64_t generation = m_generation;
    readStoreAsync<SweepPanelData>(
        this, m_path, [id, options](RunStore& store) { return readPanelData(store, id, options); },
        [this, generation](SweepPanelData panel) {
            if (generation != m_generation) return;
            m_loading = false;
            onData(std::move(panel));
            if (m_dirty) refresh();
        },
        [this, generation](const QString& message) {
            if (generation != m_generation) return;
            m_loading = false;
            m_header->setText(tr("Cannot read sweeps: %1").arg(message.toHtmlEscaped()));
        });
}

void SweepPanel::onData(SweepPanelData panel) {
    fillList(panel);
    if (panel.reportId == m_sweepId && m_sweepId > 0) {
        m_reportError = panel.reportError;
        if (panel.report) showReport(std::move(panel.report));
    }
    updateHeader();
    emit loaded(panel.reportId);
}

void SweepPanel::fillList(const SweepPanelData& panel) {
    m_sweeps = panel.sweeps;
    QSignalBlocker block(m_list);
    m_list->setRowCount(int(m_sweeps.size()));
    QStringList interrupted;
    int selectRow = -1;
    for (size_t i = 0; i < m_sweeps.size(); ++i) {
        const SweepInfo& s = m_sweeps[i];
        const QString name = QString::fromStdString(s.name);
        const QString status = QString::fromStdString(s.status);
        auto* nameItem = new QTableWidgetItem(name);
        nameItem->setData(Qt::UserRole, qlonglong(s.id));
        nameItem->setToolTip(tr("%1 (id %2), created %3")
                                 .arg(name)
                                 .arg(s.id)
                                 .arg(QString::fromStdString(s.createdAt)));
        auto* statusItem = new QTableWidgetItem(status);
        statusItem->setForeground(sweepStatusColor(s.status));
        auto* doneItem = new QTableWidgetItem(
            QStringLiteral("%1/%2").arg(i < panel.done.size() ? panel.done[i] : 0).arg(s.points));
        doneItem->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_list->setItem(int(i), kNameColumn, nameItem);
        m_list->setItem(int(i), kStatusColumn, statusItem);
        m_list->setItem(int(i), kDoneColumn, doneItem);
        if (s.status == "interrupted") interrupted << name;
        if (s.id == m_sweepId) selectRow = int(i);
        if (!m_pendingSelect.isEmpty() &&
            (name == m_pendingSelect || QString::number(s.id) == m_pendingSelect))
            selectRow = int(i);
    }
    m_banner->setVisible(!interrupted.isEmpty());
    m_banner->setText(tr("Interrupted (the sweep's process is gone): %1. Select it and press "
                         "Resume sweep to run the missing points.")
                          .arg(interrupted.join(QStringLiteral(", "))));
    if (interrupted != m_interrupted) {
        m_interrupted = interrupted;
        if (!interrupted.isEmpty()) emit interruptedSweeps(interrupted);
    }
    bool picked = !m_pendingSelect.isEmpty() && selectRow >= 0;
    if (selectRow < 0 && m_sweepId == 0 && m_pendingSelect.isEmpty() && !m_sweeps.empty()) {
        selectRow = int(m_sweeps.size()) - 1;  // the newest sweep, to start with
        picked = true;
    }
    if (selectRow >= 0) m_list->selectRow(selectRow);
    if (picked) m_pendingSelect.clear();
    if (picked || (selectRow < 0 && m_sweepId != 0)) {
        block.unblock();
        onSweepPicked();  // a new pick, or the shown sweep was deleted
    }
}

void SweepPanel::showReport(std::shared_ptr<SweepReport> report) {
    m_report = std::move(report);
    // The view and the table follow the data without losing the selection or the sort.
    m_model->setReport(*m_report);
    m_plots->setReport(*m_report, validationLoss());
    if (!m_report->hasLrAxis)
        m_note->setText(tr("This sweep has no optim.lr axis: there are no LR curves."));
    else
        m_note->clear();
}

const SweepInfo* SweepPanel::sweepInfo(int64_t id) const {
    for (const SweepInfo& s : m_sweeps)
        if (s.id == id) return &s;
    return nullptr;
}

void SweepPanel::updateHeader() {
    const SweepInfo* s = sweepInfo(m_sweepId);
    m_resume->setVisible(s && resumable(s->status));
    m_showRuns->setEnabled(s != nullptr);
    m_compare->setEnabled(s != nullptr);
    if (!s) {
        m_header->setText(m_sweeps.empty()
                              ? tr("No sweeps in this database yet: Run > New sweep from form…, "
                                   "or qklab-cli sweep FILE.json.")
                              : tr("Select a sweep."));
        return;
    }
    QString text = tr("<b>%1</b> · %2")
                       .arg(QString::fromStdString(s->name).toHtmlEscaped(),
                            QString::fromStdString(s->status));
    const SweepReport* r = m_report && m_report->sweep.id == s->id ? m_report.get() : nullptr;
    if (r)
        text += tr(" · %1 points: %2 finished, %3 diverged, %4 failed, %5 running, %6 not run")
                    .arg(r->points.size())
                    .arg(r->finished)
                    .arg(r->diverged)
                    .arg(r->failed)
                    .arg(r->running)
                    .arg(r->pending);
    if (!m_reportError.isEmpty()) text += QStringLiteral("<br>") + m_reportError.toHtmlEscaped();
    if (r && !r->definition.why.empty())
        m_header->setToolTip(QString::fromStdString(r->definition.why));
    m_header->setText(text);
}

void SweepPanel::onSweepPicked() {
    const QList<QTableWidgetItem*> items = m_list->selectedItems();
    int64_t id = 0;
    for (QTableWidgetItem* item : items)
        if (item->column() == kNameColumn) id = item->data(Qt::UserRole).toLongLong();
    if (id == m_sweepId) return;
    m_sweepId = id;
    m_report.reset();
    m_reportError.clear();
    m_model->clear();
    m_plots->clear();
    updateHeader();
    ++m_generation;  // an answer for the previous sweep is dropped
    m_loading = false;
    if (id > 0) refresh();
}

void SweepPanel::selectSweep(const QString& nameOrId) {
    m_pendingSelect = nameOrId;
    for (int row = 0; row < m_list->rowCount(); ++row) {
        QTableWidgetItem* item = m_list->item(row, kNameColumn);
        if (item && (item->text() == nameOrId ||
                     QString::number(item->data(Qt::UserRole).toLongLong()) == nameOrId)) {
            m_pendingSelect.clear();
            m_list->selectRow(row);
            return;
        }
    }
    refresh();  // not listed yet (a sweep just started): selected when the list has it
}

std::vector<int64_t> SweepPanel::selectedRunIds() const {
    std::vector<int64_t> ids;
    for (int row = 0; row < m_proxy->rowCount(); ++row) {
        if (!m_table->selectionModel()->isRowSelected(row, {})) continue;
        const qint64 id = m_proxy->index(row, 0).data(SweepTableModel::RunIdRole).toLongLong();
        if (id > 0) ids.push_back(id);
    }
    return ids;
}

void SweepPanel::compareSelected() {
    std::vector<int64_t> ids = selectedRunIds();
    if (ids.size() < 2 || ids.size() > 12) {
        emit error(tr("Compare"),
                   tr("Compare takes 2 to 12 points that have a run: select their rows in the "
                      "sweep table with Ctrl+click or Shift+click (%n selected).",
                      nullptr, int(ids.size())));
        return;
    }
    std::sort(ids.begin(), ids.end());
    emit compareRequested(ids);
}

void SweepPanel::resumeSelected() {
    const SweepInfo* s = sweepInfo(m_sweepId);
    if (!s) return;
    QString message;
    const QString name = QString::fromStdString(s->name);
    if (resumeSweep(m_path, name, &message) == 0) {
        emit error(tr("Cannot resume sweep %1").arg(name), message);
        return;
    }
    m_resume->hide();
    m_header->setText(m_header->text() + tr(" · resuming…"));
    QTimer::singleShot(1500, this, &SweepPanel::refresh);
}

void SweepPanel::setMargin(double nats) {
    m_margin->setValue(nats);
}

double SweepPanel::margin() const {
    return m_margin->value();
}

void SweepPanel::setValidationLoss(bool validation) {
    m_lossKind->setCurrentIndex(validation ? 1 : 0);
}

bool SweepPanel::validationLoss() const {
    return m_lossKind->currentIndex() == 1;
}

}  // namespace qklab::gui
