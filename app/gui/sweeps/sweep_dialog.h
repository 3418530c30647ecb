// sweep_dialog.h — "New sweep from form…": a sweep over the set-up form's config.
//
// The form's config is the base; the user picks config keys (configFields()) as axes — a
// numeric key as a log or linear grid (lo, hi, points) or a comma-separated list, a choice
// key as a checklist of its choices — plus seeds, a name and the number of parallel jobs.
// Every edit rebuilds the sweep JSON and runs it through parseSweep and expandSweep, the
// CLI's own checks, so the point count shown is the CLI's and an invalid grid point is named
// (axis, value, point) before anything starts. Start writes <db>.sweeps/<name>.json and runs
// `qklab-cli sweep FILE --db DB --name NAME` detached: the sweep outlives the app.
#pragma once

#include <QDialog>
#include <QString>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "qklab/run_config.h"

class QCheckBox;
class QComboBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTimer;
class QVBoxLayout;

namespace qklab::gui {

class SweepAxisEditor;

class SweepDialog : public QDialog {
    Q_OBJECT
  public:
    SweepDialog(const RunConfig& base, const QString& dbPath, QWidget* parent = nullptr);
    ~SweepDialog() override;

    // Adds (or returns the existing) editor for a dotted key; null for an unknown key.
    SweepAxisEditor* addAxis(const QString& key);
    void removeAxis(const QString& key);
    SweepAxisEditor* axis(const QString& key) const;
    QLineEdit* nameEdit() const { return m_name; }
    QLineEdit* seedsEdit() const { return m_seeds; }
    QSpinBox* jobsBox() const { return m_jobs; }
    QPushButton* startButton() const { return m_start; }

    // The sweep file the dialog describes, and its check (parseSweep + expandSweep + name).
    nlohmann::json sweepJson() const;
    void revalidate();
    int pointCount() const { return m_points; }  // -1 while invalid
    QString errorText() const { return m_error; }
    QString sweepFilePath() const;  // <db>.sweeps/<name>.json

    // Writes the file and starts the CLI; false with *error on failure. The launcher is
    // replaceable (tests); by default startDetachedCli.
    using Launcher = std::function<qint64(const QStringList& args, const QString& log, QString*)>;
    void setLauncher(Launcher launcher) { m_launch = std::move(launcher); }
    bool start(QString* error);
    QString startedName() const { return m_startedName; }

  private:
    QFormLayout* buildDetails();
    QGroupBox* buildAxesBox();
    void buildFooter(QVBoxLayout* v);
    void addChosenAxis();
    void scheduleRevalidate();
    QString checkName() const;
    QString describeGrid(const nlohmann::json& definition) const;

    RunConfig m_base;
    QString m_db;
    QLineEdit* m_name = nullptr;
    QLineEdit* m_why = nullptr;
    QLineEdit* m_seeds = nullptr;
    QSpinBox* m_jobs = nullptr;
    QComboBox* m_keys = nullptr;
    QVBoxLayout* m_axesLayout = nullptr;
    std::vector<SweepAxisEditor*> m_axes;
    QLabel* m_count = nullptr;
    QLabel* m_errorLabel = nullptr;
    QLabel* m_file = nullptr;
    QPushButton* m_start = nullptr;
    QTimer* m_timer = nullptr;
    int m_points = -1;
    QString m_error;
    QString m_startedName;
    Launcher m_launch;
};

// One axis: its key and how its values are given.
class SweepAxisEditor : public QWidget {
    Q_OBJECT
  public:
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

  signals:
    void changed();
    void removeRequested();

  private:
    void showMode();

    FieldInfo m_field;
    QComboBox* m_mode = nullptr;
    QLineEdit* m_lo = nullptr;
    QLineEdit* m_hi = nullptr;
    QSpinBox* m_count = nullptr;
    QLineEdit* m_list = nullptr;
    QWidget* m_gridBox = nullptr;
    std::vector<QCheckBox*> m_choices;
};

}  // namespace qklab::gui
