// config_form.h — the run set-up form, generated from the engine's field registry.
//
// One editor per configFields() entry (so a field added to the engine appears here without
// GUI changes), grouped as the registry groups them, plus a JSON editor for the event list.
// Validation is inline: every edit re-parses the form and shows validationProblems() (plus an
// unreadable data.source and a run too big for memory, qklab/config/resources.h) in red and
// configWarnings() in orange, with the estimated memory of a valid run; labels of fields that
// differ from the defaults are bold so a preset's point is visible at a glance.
#pragma once

#include <QMap>
#include <QStringList>
#include <QWidget>

#include "qklab/config/run_config.h"

class QFormLayout;
class QLabel;
class QPlainTextEdit;
class QTimer;
class QListWidget;
class QStackedWidget;

namespace qklab::gui {

class ConfigForm : public QWidget {
    Q_OBJECT
  public:
    explicit ConfigForm(QWidget* parent = nullptr);

    // The config the form describes; field parse errors are collected into *problems (keys
    // whose editor text is not a valid value keep their previous value).
    RunConfig config(QStringList* problems = nullptr) const;
    void setConfig(const RunConfig& config);

    // Parse errors + validationProblems(); empty when a run may start.
    QStringList problems() const { return m_problems; }
    QStringList warnings() const { return m_warnings; }
    bool isValid() const { return m_problems.isEmpty(); }

    // The editor widget of a dotted key (tests drive the form through it).
    QWidget* editorFor(const QString& key) const { return m_editors.value(key, nullptr); }
    QPlainTextEdit* eventsEditor() const { return m_events; }

  public slots:
    void revalidateNow();

  signals:
    void configChanged();
    void validityChanged(bool valid);

  private:
    QFormLayout* addGroupPage(const QString& group);
    void addField(const FieldInfo& field, QFormLayout* form);
    void addEventsEditor(QFormLayout* form);
    QWidget* createEditor(const FieldInfo& field);
    void setEditorValue(const FieldInfo& field, const nlohmann::json& value);
    // Returns false (and fills *error) when the editor text is not a value of the field's type.
    bool editorValue(const FieldInfo& field, nlohmann::json* value, QString* error) const;
    void scheduleRevalidate();

    QListWidget* m_groups = nullptr;
    QStackedWidget* m_pages = nullptr;
    QMap<QString, QWidget*> m_editors;
    QMap<QString, QLabel*> m_labels;
    QPlainTextEdit* m_events = nullptr;
    QLabel* m_messages = nullptr;
    QTimer* m_revalidateTimer = nullptr;
    QStringList m_problems, m_warnings;
    bool m_lastValid = true;
    bool m_loading = false;
};

}  // namespace qklab::gui
