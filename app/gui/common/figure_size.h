// figure_size.h — the size of an exported figure: its pixels and the dots per inch that the
// PNG carries and that scale its text, chosen from presets (a slide, a paper column, a full
// paper width) or by hand in a small dialog after the file is chosen.
//
// The figure is laid out at the screen's resolution and painted scaled by dpi / screen dpi:
// at 300 dpi its 9 pt text is 9 pt on paper, not a widget's pixels on a huge canvas.
#pragma once

#include <QDialog>
#include <QString>
#include <optional>
#include <vector>

class QComboBox;
class QImage;
class QLabel;
class QSpinBox;

namespace qklab::gui {

struct FigureSize {
    int width = 1920;   // pixels
    int height = 1080;  // pixels; 0: as tall as the figure needs at this width
    int dpi = 144;      // 1920 px at 144 dpi is a 16:9 slide's 13.33 inches
    bool operator==(const FigureSize& o) const {
        return width == o.width && height == o.height && dpi == o.dpi;
    }
};

struct FigurePreset {
    QString title;
    FigureSize size;
};
// The first is the default.
const std::vector<FigurePreset>& figurePresets();

// "slide", "column", "full" (the presets) or WIDTHxHEIGHT@DPI with HEIGHT a number or "auto"
// (--figure-size); nullopt for anything else or a number out of the dialog's ranges.
std::optional<FigureSize> parseFigureSize(const QString& text);

// Stores `dpi` in the image (a PNG's pHYs chunk), as dots per meter.
void setImageDpi(QImage& image, int dpi);

// A preset or a custom width, height (0 = auto) and dpi; the inches they make.
class FigureSizeDialog : public QDialog {
    Q_OBJECT
  public:
    explicit FigureSizeDialog(QWidget* parent = nullptr, const FigureSize& start = {});
    FigureSize size() const;
    // Fills the fields from preset `index`; the last entry of the list is "Custom".
    void choosePreset(int index);
    QComboBox* presetChoice() const { return m_preset; }

  private:
    void showInches();

    QComboBox* m_preset = nullptr;
    QSpinBox *m_width = nullptr, *m_height = nullptr, *m_dpi = nullptr;
    QLabel* m_inches = nullptr;
};

}  // namespace qklab::gui
