// recommend_dialog.h — "Recommend settings": the guide's size table (qklab/config/recommend.h) as a
// dialog. The user gives a size (parameters, or d_model and layers), d_head, precision and
// whether the model must ship without QK-norm; the dialog shows the guide's row and one
// sentence of reason per choice as they type, and "Fill the form" hands the config over.
#pragma once

#include <QDialog>
#include <optional>

#include "common/gui_types.h"

class QButtonGroup;
class QCheckBox;
class QComboBox;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTextBrowser;

namespace qklab::gui {

class RecommendDialog : public QDialog {
    Q_OBJECT
  public:
    explicit RecommendDialog(QWidget* parent = nullptr);

    // The recommendation for the current inputs; nullopt (and the reason shown) when they
    // do not make sense yet.
    std::optional<RunConfig> recommendedConfig() const { return m_config; }
    QString reasonsText() const;  // what the preview shows (tests read it)

    // Test access to the inputs.
    QLineEdit* sizeEdit() const { return m_size; }
    QCheckBox* shipWithoutQkNorm() const { return m_ship; }

  private:
    void update();

    QLineEdit* m_size = nullptr;
    QSpinBox *m_dModel = nullptr, *m_layers = nullptr;
    QButtonGroup* m_by = nullptr;
    QComboBox *m_dHead = nullptr, *m_precision = nullptr;
    QCheckBox* m_ship = nullptr;
    QTextBrowser* m_preview = nullptr;
    QPushButton* m_ok = nullptr;
    std::optional<RunConfig> m_config;
};

}  // namespace qklab::gui
