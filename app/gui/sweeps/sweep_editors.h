// sweep_editors.h — the rows of the New sweep dialog: an axis (a key and its values, perhaps
// zipped with the axis above) and a fixed value (a key set to one value on every point).
//
// Both only say what the user typed, as the sweep file writes it; whether the sweep is valid
// is the core's to say (parseSweep, expandSweep, applyOverride), never checked again here.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>
#include <nlohmann/json.hpp>
#include <vector>

#include "qklab/config/run_config.h"

class QCheckBox;
class QComboBox;
class QLineEdit;
class QSpinBox;

namespace qklab::gui {

// A typed value: JSON when it parses (3e-4, 30, "x", [1,2]), else the bare text.
nlohmann::json parseSweepValue(const QString& text);
// The value as a user types it: a string bare, anything else as JSON.
QString sweepValueText(const nlohmann::json& v);

// One axis: its key and how its values are given.
class SweepAxisEditor : public QWidget {
    Q_OBJECT
  public:
    // Log and Linear for numbers; Choices (ticks) for a choice or a bool; List for any key
    // (a choice key listed with repeats, "none, none, rms", is how it moves in a zip).
    enum class Mode { Log, Linear, List, Choices };
    SweepAxisEditor(const FieldInfo& field, const nlohmann::json& current,
                    QWidget* parent = nullptr);

    QString key() const { return QString::fromStdString(m_field.key); }
    Mode mode() const;
    void setGrid(Mode mode, double lo, double hi, int points);  // Log or Linear
    void setList(const QString& commaSeparated);                // List
    void setChecked(const QStringList& choices);                // Choices
    // The axis as the sweep file writes it; a value that does not parse is kept as text, so
    // that parseSweep/expandSweep name it.
    nlohmann::json spec(QString* problem) const;

    // "zip ↑": this axis moves together with the axis above it (a zip group is a run of
    // ticked rows and the row above the first). The first row cannot tick it.
    bool zipWithPrevious() const;
    void setZipWithPrevious(bool zip);
    void setZipAllowed(bool allowed);  // false on the first row
    QCheckBox* zipBox() const { return m_zip; }

  signals:
    void changed();
    void removeRequested();

  private:
    void buildChoices(QWidget* box, const nlohmann::json& current);
    void buildGrid(QWidget* box);
    void setMode(Mode mode);
    void showMode();

    FieldInfo m_field;
    QComboBox* m_mode = nullptr;
    QLineEdit* m_lo = nullptr;
    QLineEdit* m_hi = nullptr;
    QSpinBox* m_count = nullptr;
    QLineEdit* m_list = nullptr;
    QWidget* m_gridBox = nullptr;
    QWidget* m_choiceBox = nullptr;
    QCheckBox* m_zip = nullptr;
    std::vector<QCheckBox*> m_choices;
};

// One fixed value ("set" in the sweep file): a key and the value every point gets. The value
// is read by the core's override parser (applyOverride, as `--set key=value`) on the base
// config; text it refuses turns the editor red and is the row's problem.
class SweepSetEditor : public QWidget {
    Q_OBJECT
  public:
    SweepSetEditor(const FieldInfo& field, const RunConfig& base, QWidget* parent = nullptr);

    QString key() const { return QString::fromStdString(m_field.key); }
    QLineEdit* valueEdit() const { return m_value; }
    void setValueText(const QString& text);
    // The value as the sweep file writes it ("set": {key: value}).
    nlohmann::json value() const;
    // Empty when applyOverride takes "key=value"; else its message.
    QString problem() const { return m_problem; }
    bool isInvalid() const { return !m_problem.isEmpty(); }

  signals:
    void changed();
    void removeRequested();

  private:
    void check();

    FieldInfo m_field;
    RunConfig m_base;
    QLineEdit* m_value = nullptr;
    QString m_problem;
};

}  // namespace qklab::gui
