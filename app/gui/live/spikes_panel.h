// spikes_panel.h — every detected loss/grad-norm spike with the probes read before it, the
// classification (Q/K runaway, token spike, data/accumulation) and the prescription tier.
//
// Clicking a row emits stepSelected so the main window can move every plot to that step: the
// point of the panel is to go from "a spike happened" to "this is what the logits did".
#pragma once

#include <QWidget>
#include <vector>

#include "qklab/analysis/onsets.h"
#include "qklab/store/records.h"

class QLabel;
class QTableWidget;
class QTextBrowser;

namespace qklab::gui {

class SpikesPanel : public QWidget {
    Q_OBJECT
  public:
    explicit SpikesPanel(QWidget* parent = nullptr);

    void setSpikes(int64_t runId, const std::vector<Spike>& spikes);
    void addSpikes(int64_t runId, const std::vector<Spike>& spikes);
    // The run's logit alarms (the first probe per layer past 30 / p99 15), listed above the
    // spikes: a blow-up is a plateau, not a spike, and must not read as "nothing happened".
    void setLogitAlarms(int64_t runId, const std::vector<LogitAlarm>& alarms);
    void addLogitAlarms(int64_t runId, const std::vector<LogitAlarm>& alarms);
    // The run's forecasts, each beside what then happened (`onsets` of the run through
    // `latestStep`, forecast_view.h): a warning is judged by what followed it.
    void setForecasts(int64_t runId, const std::vector<Forecast>& forecasts,
                      const std::vector<Onset>& onsets, int64_t latestStep);
    QString forecastsText() const;
    void clear();
    int rowCount() const;
    int alarmCount() const { return int(m_alarms.size()); }
    QString alarmsText() const;

    // What each tier means, from the domain brief (shown under the table).
    static QString tierText(int tier);
    static QString adviceOf(const Spike& s);

  signals:
    void stepSelected(qint64 step);
    // An alarm's "step N" link: show the live plots at that step.
    void plotsRequested(qint64 step);

  private:
    void addRow(const Spike& s);
    void showDetails(int row);
    void refreshAlarms();
    void refreshSummary();

    int64_t m_runId = 0;
    std::vector<Spike> m_spikes;
    std::vector<LogitAlarm> m_alarms;
    QLabel* m_summary = nullptr;
    QLabel* m_alarmList = nullptr;
    QLabel* m_forecastList = nullptr;
    QTableWidget* m_table = nullptr;
    QTextBrowser* m_details = nullptr;
};

}  // namespace qklab::gui
