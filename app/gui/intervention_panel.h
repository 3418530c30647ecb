// intervention_panel.h — change the running experiment: LR, QK-norm on / anneal, softcap,
// a dirty batch or a context-length switch.
//
// Each button posts one Event to the trainer, which applies it at the next step and reports
// it back through onEvent (source "user"); the store records it, so the run stays
// reproducible from its config plus event list, and every plot draws it as a marker.
#pragma once

#include <QWidget>

#include "gui_types.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace qklab::gui {

class RunController;

class InterventionPanel : public QWidget {
    Q_OBJECT
  public:
    explicit InterventionPanel(RunController* controller, QWidget* parent = nullptr);

    // Builders (public for tests): the exact events the buttons post.
    Event lrEvent() const;
    Event qkNormEvent() const;
    Event annealEvent() const;
    Event softcapEvent() const;
    Event dirtyBatchEvent() const;
    Event contextEvent() const;

    // Posts and reports in the panel's status line; false when nothing is training.
    bool post(const Event& event);

  signals:
    void posted(const qklab::Event& event);

  private:
    void refreshEnabled();

    RunController* m_controller;
    QDoubleSpinBox* m_lrFactor = nullptr;
    QComboBox* m_qkVariant = nullptr;
    QSpinBox* m_annealSteps = nullptr;
    QComboBox* m_annealShape = nullptr;
    QComboBox* m_capKind = nullptr;
    QDoubleSpinBox* m_capC = nullptr;
    QLineEdit* m_dirtyText = nullptr;
    QSpinBox* m_seqLen = nullptr;
    QLabel* m_status = nullptr;
    QList<QWidget*> m_buttons;
};

}  // namespace qklab::gui
