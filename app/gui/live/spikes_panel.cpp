// spikes_panel.cpp — the spike table and the diagnosis text of the selected spike.
#include "live/spikes_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "common/run_data.h"
#include "common/theme.h"
#include "live/forecast_view.h"

namespace qklab::gui {

namespace {
enum class Column { Step, Metric, Value, Z, Kind, Tier, MaxLogit, QkNorm, Count };

QTableWidgetItem* item(const QString& text, const QVariant& sortKey = {}) {
    auto* it = new QTableWidgetItem(text);
    it->setFlags(it->flags() & ~Qt::ItemIsEditable);
    if (sortKey.isValid()) it->setData(Qt::UserRole, sortKey);
    return it;
}

QString kindText(SpikeKind k) {
    return QString::fromUtf8(spikeKindTitle(k));
}
}  // namespace

QString SpikesPanel::tierText(int tier) {
    switch (tier) {
        case 1:
            return tr(
                "Tier 1: logits healthy, spikes rare → change nothing; check the sampler and the "
                "loss.");
        case 2:
            return tr(
                "Tier 2: max logit occasionally > 30, norms stable → tanh softcap C = 50, watch "
                "500 "
                "steps, then C = 30 and/or grad clip 1.0.");
        case 3:
            return tr(
                "Tier 3: q/k norms inflating, frequent spikes → QK-norm with s = 1/sqrt(d_head); "
                "give "
                "it 1000 steps before judging.");
        case 4:
            return tr(
                "Tier 4: still spiking with QK-norm, or frequent spikes while attention looks "
                "normal → look at init, LR, batch size and schedule.");
    }
    return tr("Tier %1").arg(tier);
}

SpikesPanel::SpikesPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    m_summary = new QLabel;
    m_summary->setObjectName(QStringLiteral("spikeSummary"));
    // Wraps: as one line, a summary of several spikes widened the window past a 1280x720
    // screen (the tab widget takes the widest page's minimum).
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    m_alarmList = new QLabel;
    m_alarmList->setObjectName(QStringLiteral("logitAlarms"));
    m_alarmList->setWordWrap(true);
    m_alarmList->setTextFormat(Qt::RichText);
    layout->addWidget(m_alarmList);
    m_forecastList = new QLabel;
    m_forecastList->setObjectName(QStringLiteral("forecasts"));
    m_forecastList->setWordWrap(true);
    m_forecastList->setTextFormat(Qt::RichText);
    layout->addWidget(m_forecastList);
    // "step:N" links show the alarm's probe in the plots: a link goes somewhere, so the view
    // switches to them (a row picked in the table only moves the other views' cursors).
    for (QLabel* list : {m_alarmList, m_forecastList})
        connect(list, &QLabel::linkActivated, this, [this](const QString& link) {
            if (link.startsWith(QStringLiteral("step:")))
                emit plotsRequested(link.mid(5).toLongLong());
        });
    auto* splitter = new QSplitter(Qt::Vertical);
    layout->addWidget(splitter, 1);
    m_table = new QTableWidget(0, int(Column::Count));
    m_table->setObjectName(QStringLiteral("spikeTable"));
    m_table->setHorizontalHeaderLabels({tr("step"), tr("metric"), tr("value"), tr("z"),
                                        tr("classification"), tr("tier"),
                                        tr("max logit (baseline)"), tr("q/k norm (baseline)")});
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->setVisible(false);
    m_table->setToolTip(tr("Click a spike to move every plot to its step"));
    splitter->addWidget(m_table);
    m_details = new QTextBrowser;
    m_details->setObjectName(QStringLiteral("spikeDetails"));
    splitter->addWidget(m_details);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);

    connect(m_table, &QTableWidget::currentCellChanged, this,
            [this](int row, int, int, int) { showDetails(row); });
    connect(m_table, &QTableWidget::cellClicked, this, [this](int row, int) {
        showDetails(row);
        if (QTableWidgetItem* it = m_table->item(row, int(Column::Step)))
            emit stepSelected(it->data(Qt::UserRole).toLongLong());
    });
    clear();
}

void SpikesPanel::setLogitAlarms(int64_t runId, const std::vector<LogitAlarm>& alarms) {
    if (runId != m_runId) clear();
    m_runId = runId;
    m_alarms = alarms;
    refreshAlarms();
}

void SpikesPanel::addLogitAlarms(int64_t runId, const std::vector<LogitAlarm>& alarms) {
    if (runId != m_runId) return;  // a live batch of a run not shown
    m_alarms.insert(m_alarms.end(), alarms.begin(), alarms.end());
    refreshAlarms();
}

QString SpikesPanel::alarmsText() const {
    return m_alarmList->text();
}

void SpikesPanel::refreshAlarms() {
    QString html;
    if (!m_alarms.empty()) {
        html = tr("<b>Logit alarms</b> (first probe per layer past an intervention line):");
        for (const LogitAlarm& a : m_alarms)
            html += tr("<br>• <a href=\"step:%1\">step %1</a>, layer %2: %3 %4 &gt; %5 → %6, "
                       "tier %7")
                        .arg(a.step)
                        .arg(a.layer)
                        .arg(QString::fromStdString(a.metric), formatNumber(a.value),
                             formatNumber(a.threshold), QString::fromUtf8(spikeKindTitle(a.kind)))
                        .arg(a.tier);
    }
    m_alarmList->setText(html);
    m_alarmList->setVisible(!html.isEmpty());
    QString tip;
    for (const LogitAlarm& a : m_alarms)
        tip += QString::fromStdString(a.text) + QStringLiteral("\n");
    m_alarmList->setToolTip(tip.trimmed());
    refreshSummary();
}

void SpikesPanel::setForecasts(int64_t runId, const std::vector<Forecast>& forecasts,
                               const std::vector<Onset>& onsets, int64_t latestStep) {
    if (runId != m_runId) return;  // setSpikes or setLogitAlarms names the run shown
    QString html;
    if (!forecasts.empty()) {
        html =
            tr("<b>Forecasts</b> (a warning before the raw max logit passes the line) and "
               "what then happened:");
        for (const Forecast& f : forecasts)
            html += QStringLiteral("<br>• ") +
                    forecastTimelineHtml(f, forecastOutcome(f, onsets, latestStep));
    }
    m_forecastList->setText(html);
    m_forecastList->setVisible(!html.isEmpty());
}

QString SpikesPanel::forecastsText() const {
    return m_forecastList->text();
}

void SpikesPanel::clear() {
    m_runId = 0;
    m_forecastList->clear();
    m_forecastList->setVisible(false);
    m_spikes.clear();
    m_alarms.clear();
    m_alarmList->clear();
    m_alarmList->setVisible(false);
    m_table->setRowCount(0);
    m_summary->setText(tr("No spikes."));
    m_details->setHtml(QStringLiteral("<p>%1</p><p>%2</p><p>%3</p><p>%4</p>")
                           .arg(tierText(1), tierText(2), tierText(3), tierText(4)));
}

int SpikesPanel::rowCount() const {
    return m_table->rowCount();
}

void SpikesPanel::setSpikes(int64_t runId, const std::vector<Spike>& spikes) {
    clear();
    addSpikes(runId, spikes);
}

void SpikesPanel::addSpikes(int64_t runId, const std::vector<Spike>& spikes) {
    if (runId != m_runId) {
        m_runId = runId;
        m_spikes.clear();
        m_table->setRowCount(0);
    }
    m_table->setUpdatesEnabled(false);
    for (const Spike& s : spikes) {
        m_spikes.push_back(s);
        addRow(s);
    }
    m_table->setUpdatesEnabled(true);
    m_table->resizeColumnsToContents();
    // Show the first diagnosis without a click: the paragraph is the point of the panel.
    if (m_table->currentRow() < 0 && m_table->rowCount() > 0) m_table->setCurrentCell(0, 0);
    refreshSummary();
}

// The prescription a spike's own diagnosis ends with ("Tier 3: ..."): for a change of the run
// or the LM head it says what to do about that, which the brief's generic tier text does not.
QString SpikesPanel::adviceOf(const Spike& s) {
    const QString text = QString::fromStdString(s.diagnosis);
    const qsizetype at = text.lastIndexOf(QStringLiteral("Tier %1:").arg(s.tier));
    if (at < 0) return tierText(s.tier);
    // The advice ends the verdict paragraph; the evidence follows it.
    const qsizetype end = text.indexOf(QStringLiteral("\n\n"), at);
    return text.mid(at, end < 0 ? -1 : end - at);
}

void SpikesPanel::refreshSummary() {
    const Spike* worst = nullptr;
    for (const Spike& s : m_spikes)
        if (!worst || s.tier > worst->tier) worst = &s;
    if (worst)
        m_summary->setText(tr("%1 spike(s); highest prescription tier %2 (step %3). %4")
                               .arg(m_spikes.size())
                               .arg(worst->tier)
                               .arg(worst->step)
                               .arg(adviceOf(*worst)));
    else if (!m_alarms.empty())
        m_summary->setText(tr("No loss or grad-norm spikes, but %1 logit alarm(s): the logits "
                              "passed the intervention line.")
                               .arg(m_alarms.size()));
    else
        m_summary->setText(tr("No spikes."));
}

void SpikesPanel::addRow(const Spike& s) {
    const int row = m_table->rowCount();
    m_table->insertRow(row);
    m_table->setItem(row, int(Column::Step), item(QString::number(s.step), qlonglong(s.step)));
    m_table->setItem(row, int(Column::Metric), item(QString::fromStdString(s.metric)));
    m_table->setItem(row, int(Column::Value), item(formatNumber(s.value)));
    m_table->setItem(row, int(Column::Z), item(formatNumber(s.zScore)));
    m_table->setItem(row, int(Column::Kind), item(kindText(s.kind)));
    m_table->setItem(row, int(Column::Tier), item(QString::number(s.tier)));
    m_table->setItem(
        row, int(Column::MaxLogit),
        item(s.probeStep >= 0 ? QStringLiteral("%1 (%2)").arg(formatNumber(s.probeMaxLogit),
                                                              formatNumber(s.baselineMaxLogit))
                              : tr("no probe")));
    m_table->setItem(
        row, int(Column::QkNorm),
        item(s.probeStep >= 0 ? QStringLiteral("%1 (%2)").arg(formatNumber(s.probeQkNorm),
                                                              formatNumber(s.baselineQkNorm))
                              : tr("no probe")));
    const QColor tint = severityTint(s.tier >= 3 ? 2 : s.tier == 2 ? 1 : 0);
    for (int c = 0; c < int(Column::Count); ++c) m_table->item(row, c)->setBackground(tint);
}

void SpikesPanel::showDetails(int row) {
    if (row < 0 || row >= int(m_spikes.size())) return;
    const Spike& s = m_spikes[row];
    // The stored paragraph alone: it states the numbers that decided the verdict and the tier
    // in words fitted to them (a generic tier line beside it said "logits healthy" for
    // logits at 22.8).
    m_details->setHtml(tr("<h3>Step %1: %2, tier %3</h3><p>%4</p>")
                           .arg(s.step)
                           .arg(kindText(s.kind))
                           .arg(s.tier)
                           .arg(QString::fromStdString(s.diagnosis)
                                    .toHtmlEscaped()
                                    .replace(QStringLiteral("\n\n"), QStringLiteral("</p><p>"))));
}

}  // namespace qklab::gui
