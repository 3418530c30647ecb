// schedule_preview.h — small plots of the LR, QK-norm alpha and softcap C over the run's steps.
//
// Drawn from the same pure functions the trainer uses (settingsAt: schedules plus every config
// event), so what the preview shows is exactly what the run will do — including an anneal
// window or an LR multiplier event a preset adds.
#pragma once

#include <QWidget>

#include "qklab/config/run_config.h"

class QCustomPlot;

namespace qklab::gui {

class SchedulePreview : public QWidget {
    Q_OBJECT
  public:
    explicit SchedulePreview(QWidget* parent = nullptr);

    // Samples at most ~400 steps; cheap enough to call on every form edit.
    void setConfig(const RunConfig& config);

    QCustomPlot* plot() const { return m_plot; }

  private:
    QCustomPlot* m_plot = nullptr;
};

}  // namespace qklab::gui
