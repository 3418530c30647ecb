// intervention_panel.h — change the running experiment: one row per event kind of the
// registry (qklab/config/events.h): LR, QK-norm on / anneal, softcap, a dirty batch, a context
// switch.
//
// The rows, their editors, ranges, defaults and tooltips come from the event registry, so a
// new kind of event appears here without code in this panel. Each button posts one Event to
// the trainer, which applies it at the next step and reports it back through onEvent (source
// "user"); the store records it, so the run stays reproducible from its config plus event
// list, and every plot draws it as a marker.
#pragma once

#include <QWidget>
#include <vector>

#include "common/gui_types.h"
#include "qklab/store/run_store.h"

class QGridLayout;
class QLabel;
class QPushButton;

namespace qklab::gui {

class RunController;

class InterventionPanel : public QWidget {
    Q_OBJECT
  public:
    explicit InterventionPanel(RunController* controller, QWidget* parent = nullptr);

    // The exact event the row of `kind` posts now (public for tests).
    Event eventFor(EventKind kind) const;
    // Sets a parameter editor of a row, as a user would (public for tests and automation).
    void setParam(EventKind kind, const std::string& key, const nlohmann::json& value);

    // The run the views show. A run trained outside qklab disables every row, with the reason
    // as the status line and the buttons' tooltips: qklab does not have its model. The next
    // run qklab starts (shown live) enables them again.
    void setShownRun(const RunInfo& info);
    QString statusText() const;
    QPushButton* button(EventKind kind) const;  // the row's action button (tests)

    // Posts and reports in the panel's status line; false when nothing is training.
    bool post(const Event& event);

  signals:
    void posted(const qklab::Event& event);

  private:
    struct Row {
        EventKind kind;
        std::vector<QWidget*> editors;  // one per registry parameter, in its order
        QPushButton* button = nullptr;
    };
    void addRow(const EventKindInfo& info, QGridLayout* grid, int row);
    void limitToModel(const RunConfig& config);
    void refreshEnabled();

    RunController* m_controller;
    std::vector<Row> m_rows;
    QString m_outsideQklab;  // why the shown run cannot be intervened in, or ""
    QString m_statusBefore;  // the status line the reason replaced
    QLabel* m_status = nullptr;
};

}  // namespace qklab::gui
