// attention_map_panel.h — the softmax matrix of one sample sequence (query rows x key
// columns) for a chosen layer/head at a probed step.
//
// This is where a blow-up becomes visible to a student: a healthy head spreads weight over
// many keys, a collapsed one puts ~1.0 on a single key per row (one-hot). Next to the map the
// panel reports the mean row maximum and mean row entropy, the numbers behind that picture.
#pragma once

#include <QWidget>
#include <optional>
#include <vector>

#include "qklab/config/run_config.h"
#include "qklab/store/records.h"

class QCheckBox;
class QComboBox;
class QCPColorMap;
class QCPColorScale;
class QCustomPlot;
class QLabel;
class QSlider;
class QTimer;

namespace qklab::gui {

class AttentionMapPanel : public QWidget {
    Q_OBJECT
  public:
    explicit AttentionMapPanel(QWidget* parent = nullptr);

    // runLabel names the run in the view's header ("Run 3 “blowup”"), so that a tab never
    // shows data without saying whose.
    void setRun(int64_t runId, const RunConfig& config, const QString& dbPath,
                const QString& runLabel = QString());
    QString runLabel() const;
    // The header alone (the run ended: "(training)" no longer true).
    void setRunLabel(int64_t runId, const QString& label);
    void clear();
    void notifyNewData(int64_t runId);  // live run stored new maps: refresh the step list
    // A replay: only maps up to `step` exist yet (-1: none); reloads at once. setRun() lifts it.
    void setStepLimit(int64_t step);
    std::optional<int64_t> stepLimit() const { return m_stepLimit; }
    // The step of the map shown (-1: none).
    int64_t shownStep() const;

    int stepCount() const { return int(m_steps.size()); }
    QCustomPlot* plot() const { return m_plot; }

    // A position's byte as a person reads it: 'e', ' ', '\n', 0xc3.
    static QString byteLabel(unsigned char b);
    // The hover text of one cell: both positions with their bytes, and the weight.
    static QString cellText(const AttentionMap& m, int query, int key);

  public slots:
    void jumpToStep(qint64 step);
    void reloadSteps();
    // Shows this layer and head when the run has them (a lesson step's view).
    void selectLayerHead(int layer, int head);

  private:
    QLabel* m_runLabel = nullptr;
    void loadStep();
    void showMap();
    const AttentionMap* shownMap() const;  // the chosen layer/head at the loaded step
    void showCellAt(const QPoint& pos, const QPoint& globalPos);

    int64_t m_runId = 0;
    RunConfig m_config;
    QString m_dbPath;
    std::vector<int64_t> m_steps;
    std::optional<int64_t> m_stepLimit;  // a replay's position; none: every stored map
    std::vector<AttentionMap> m_maps;    // every layer/head of the shown step
    uint64_t m_generation = 0;

    QComboBox* m_layer = nullptr;
    QComboBox* m_head = nullptr;
    QSlider* m_step = nullptr;
    QLabel* m_stepLabel = nullptr;
    QCheckBox* m_logColour = nullptr;
    QLabel* m_info = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QTimer* m_reloadTimer = nullptr;
};

}  // namespace qklab::gui
