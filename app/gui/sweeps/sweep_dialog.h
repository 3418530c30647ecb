// sweep_dialog.h — "New sweep from form…": a sweep over the set-up form's config.
//
// The form's config is the base; the user picks config keys (configFields()) as axes — a
// numeric key as a log or linear grid (lo, hi, points) or a comma-separated list, a choice
// key as a checklist of its choices (or a list, with repeats) — plus seeds, a name and the
// number of parallel jobs. An axis may be zipped with the axis above ("zip" in the file: they
// move together, one dimension), and fixed values ("set") give keys one value on every point.
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

#include "qklab/config/run_config.h"
#include "sweeps/sweep_editors.h"

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

class SweepDialog : public QDialog {
    Q_OBJECT
  public:
    SweepDialog(const RunConfig& base, const QString& dbPath, QWidget* parent = nullptr);
    ~SweepDialog() override;

    // Adds (or returns the existing) editor for a dotted key; null for an unknown key.
    SweepAxisEditor* addAxis(const QString& key);
    void removeAxis(const QString& key);
    SweepAxisEditor* axis(const QString& key) const;
    // The zip groups the "zip ↑" ticks make, as the file writes them: axis keys in row order.
    std::vector<std::vector<std::string>> zipGroups() const;
    // Adds (or returns the existing) fixed value for a dotted key; null for an unknown key.
    SweepSetEditor* addSetValue(const QString& key);
    void removeSetValue(const QString& key);
    SweepSetEditor* setValue(const QString& key) const;
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
    QGroupBox* buildSetBox();
    QComboBox* keyPicker(const QString& objectName, const QString& current) const;
    void allowZipBelowTheFirstRow();
    QString rowProblem() const;
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
    QComboBox* m_setKeys = nullptr;
    QVBoxLayout* m_setLayout = nullptr;
    std::vector<SweepSetEditor*> m_sets;
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

}  // namespace qklab::gui
