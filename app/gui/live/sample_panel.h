// sample_panel.h — the Sample box: text a stored run writes, decoded from its newest
// checkpoint (qklab/engine/generate.h) off the GUI thread and streamed into a read-only view.
//
// The point is comparison — a blown-up run writes visibly worse text — so when another run is
// picked the sample on screen moves to a second view that keeps its run's name, and the next
// run's text appears above it. Reads the store read-only (never prunes checkpoint rows).
// A generation in flight is cancelled (onText returns false) when another run is picked, the
// database changes, Stop is pressed or the panel is destroyed; its late text is dropped.
#pragma once

#include <QPointer>
#include <QWidget>
#include <cstdint>
#include <memory>

#include "qklab/engine/generate.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QThreadPool;

namespace qklab::gui {

class SampleView;
struct SampleJob;  // one generation in flight (sample_panel.cpp)
struct SampleRun;  // what the panel read about the picked run (sample_panel.cpp)

class SamplePanel : public QWidget {
    Q_OBJECT
  public:
    static constexpr int kMaxTokens = 100000;

    explicit SamplePanel(QWidget* parent = nullptr);
    ~SamplePanel() override;  // cancels a generation and waits for its thread

    // Forgets the runs shown and cancels any generation.
    void setDatabase(const QString& path);
    // The run the next Generate decodes from. Another run: the sample on screen becomes the
    // "previous" one. The same run: its checkpoint is looked up again (a run that just ended).
    void setRun(int64_t runId);
    void refreshRun(int64_t runId);  // re-reads the checkpoint when runId is the picked run

    // The settings widgets, for tests and automation.
    void setPrompt(const QString& prompt);
    void setTokens(int tokens);
    void setTemperature(double temperature);  // 0 = greedy
    void setSeed(int seed);

    int64_t runId() const { return m_runId; }
    // A run qklab trained, with a checkpoint, is picked and nothing is running.
    bool canGenerate() const;
    bool isGenerating() const { return m_job != nullptr; }
    SampleView* currentView() const { return m_current; }
    SampleView* previousView() const { return m_previous; }
    QString notice() const;  // why there is nothing to generate from, or ""

  public slots:
    void generate();
    void stop();

  signals:
    // The picked run's checkpoint was looked up: ready = there is one to generate from.
    void runReady(qint64 runId, bool ready);
    // A generation ended: completed, stopped by the user, or failed (message set).
    void sampleFinished(qint64 runId, bool completed, const QString& message);

  private:
    QWidget* buildSettings();
    void readRun();
    void showRun(const SampleRun& run);
    void cancelJob(const QString& why);
    void updateButtons();
    GenerateOptions options() const;
    static void runJob(std::shared_ptr<SampleJob> job, QPointer<SamplePanel> guard);
    void onJobText(const std::shared_ptr<SampleJob>& job, const QByteArray& bytes);
    void onJobDone(const std::shared_ptr<SampleJob>& job, const QByteArray& rest,
                   const GenerateResult& result, const QString& error);

    QString m_db;
    int64_t m_runId = 0;
    QString m_runTitle;
    bool m_haveCheckpoint = false;
    QString m_outsideQklab;  // the picked run was trained outside qklab: why Generate is off
    bool m_promptEdited = false;
    uint64_t m_readGeneration = 0;
    std::shared_ptr<SampleJob> m_job;
    QThreadPool* m_pool = nullptr;
    QLineEdit* m_prompt = nullptr;
    QSpinBox* m_tokens = nullptr;
    QDoubleSpinBox* m_temperature = nullptr;
    QSpinBox* m_seed = nullptr;
    QComboBox* m_cache = nullptr;
    QPushButton* m_generate = nullptr;
    QPushButton* m_stop = nullptr;
    QLabel* m_notice = nullptr;
    SampleView* m_current = nullptr;
    SampleView* m_previous = nullptr;
};

}  // namespace qklab::gui
