// run_controls_panel.h — start / pause / resume / stop, progress with ETA and tokens/s, and
// the queue of runs waiting to train.
//
// The panel talks to the RunController only; where the config and the database come from is
// injected (the form and the browser own those), so the panel can be tested alone.
#pragma once

#include <QElapsedTimer>
#include <QWidget>
#include <functional>

#include "common/gui_types.h"

class QLabel;
class QLineEdit;
class QComboBox;
class QProgressBar;
class QPushButton;

namespace qklab::gui {

class RunController;

class RunControlsPanel : public QWidget {
    Q_OBJECT
  public:
    explicit RunControlsPanel(RunController* controller, QWidget* parent = nullptr);

    // The config to run (problems non-empty = refuse and say why) and the store to record in.
    void setConfigSource(std::function<RunConfig(QStringList*)> source) {
        m_configSource = std::move(source);
    }
    void setDatabaseSource(std::function<QString()> source) { m_dbSource = std::move(source); }

    void setStartEnabled(bool enabled);  // the form's validity
    void setRunName(const QString& name);

  public slots:
    // Queues the form's config; returns silently after showing why when it cannot.
    void startRun();

  signals:
    void error(const QString& title, const QString& message);

  private:
    void onProgress(qint64 runId, qint64 step, qint64 total, double tokensPerSec);
    void onStarted(qint64 runId, const QString& name, qint64 total);
    void onEnded(const QString& text);
    void refreshButtons();
    void refreshQueue();

    RunController* m_controller;
    std::function<RunConfig(QStringList*)> m_configSource;
    std::function<QString()> m_dbSource;
    QLineEdit* m_name = nullptr;
    QPushButton* m_start = nullptr;
    QPushButton* m_pause = nullptr;
    QPushButton* m_stop = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_status = nullptr;
    QComboBox* m_queue = nullptr;
    QPushButton* m_removeQueued = nullptr;
    QElapsedTimer m_runClock;
    int64_t m_stepAtClockStart = 0;
    bool m_formValid = true;
};

}  // namespace qklab::gui
