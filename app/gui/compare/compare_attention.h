// compare_attention.h — the attention maps of two compared runs at the same step, layer and
// head, side by side on one colour scale: a collapsed head (one-hot rows) next to a healthy
// one is the picture of blow-up.
#pragma once

#include <QWidget>
#include <vector>

#include "compare/compare_data.h"

class QComboBox;
class QCPColorMap;
class QCustomPlot;
class QLabel;
class QSlider;

namespace qklab::gui {

class CompareAttention : public QWidget {
    Q_OBJECT
  public:
    explicit CompareAttention(QWidget* parent = nullptr);

    void setComparison(const QString& dbPath, const Comparison* comparison);
    // Which two runs (indices into the comparison) and where.
    void choose(int runA, int runB, int layer, int head);
    void setStep(int64_t step);  // the nearest step at or before it that both runs mapped
    int64_t shownStep() const;
    const std::vector<int64_t>& sharedSteps() const { return m_steps; }
    // The maps shown (empty when that run has none there).
    const AttentionMap* shown(int side) const;
    QString infoText() const;

  signals:
    void mapsLoaded();

  private:
    void loadSteps();
    void loadMaps();
    void draw();
    void drawSide(int side);

    QString m_dbPath;
    const Comparison* m_comparison = nullptr;
    std::vector<int64_t> m_steps;         // steps both chosen runs have maps at
    std::vector<AttentionMap> m_maps[2];  // every layer/head of the shown step, per side
    uint64_t m_generation = 0;

    QComboBox* m_run[2] = {nullptr, nullptr};
    QComboBox* m_layer = nullptr;
    QComboBox* m_head = nullptr;
    QSlider* m_step = nullptr;
    QLabel* m_stepLabel = nullptr;
    QLabel* m_info = nullptr;
    QCustomPlot* m_plot[2] = {nullptr, nullptr};
    QCPColorMap* m_map[2] = {nullptr, nullptr};
};

}  // namespace qklab::gui
