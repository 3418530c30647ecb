// preset_picker.h — choose one of experiments/*.json, read its "why", save the form as a preset.
//
// Presets only override defaults (nanoGPT's config/*.py idea), so saving writes the keys that
// differ from RunConfig{} and nothing else: the file stays short and says what it changes.
#pragma once

#include <QString>
#include <QWidget>
#include <functional>

#include "common/gui_types.h"

class QComboBox;
class QLabel;
class QPushButton;

namespace qklab::gui {

class PresetPicker : public QWidget {
    Q_OBJECT
  public:
    explicit PresetPicker(QWidget* parent = nullptr);

    // A preset, embedded or a file (readAppFile: regular files within the limit). Throws
    // qklab::Error.
    static RunConfig readPreset(const QString& path);
    void setDirectory(const QString& dir);
    QString directory() const { return m_dir; }

    // Loads a preset file, or a listed preset by name; emits presetLoaded or error.
    bool loadPath(const QString& pathOrName);
    QString currentPath() const { return m_currentPath; }
    // The form now holds a stored run's config, not a preset: the picker says so instead of
    // naming whatever preset was chosen before.
    void showReusedRun(const QString& runLabel, const RunConfig& config);
    QString whyText() const;
    // The form now holds a recommendation ("Recommend…"): its reasons become the why.
    void showRecommendation(const RunConfig& config);

    // Where "Save as preset…" gets the config to write.
    void setConfigSource(std::function<RunConfig(QStringList*)> source) {
        m_source = std::move(source);
    }

    // The keys of `config` that differ from the defaults, as nested JSON (plus "why").
    static nlohmann::json presetJson(const RunConfig& config);
    static bool savePreset(const RunConfig& config, const QString& path, QString* error);

  signals:
    void presetLoaded(const qklab::RunConfig& config, const QString& path);
    void error(const QString& title, const QString& message);

  private:
    void recommend();
    void rescan();
    QString resolve(const QString& pathOrName) const;
    void saveAs();

    QString m_dir;
    QString m_currentPath;
    QComboBox* m_combo = nullptr;
    QLabel* m_why = nullptr;
    QPushButton* m_save = nullptr;
    std::function<RunConfig(QStringList*)> m_source;
};

}  // namespace qklab::gui
