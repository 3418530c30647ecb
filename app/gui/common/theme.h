// theme.h — light and dark looks for the whole app: the widget palette, the stylesheet's
// colours and every plot's background, axes, grid and text (presenter mode builds on it).
//
// Plots are themed through themePlot(), which stylePlot() calls, so a plot created after a
// switch is born in the current theme; applyTheme() re-themes the plots that exist.
#pragma once

#include <QColor>
#include <QString>

class QCustomPlot;
class QWidget;

namespace qklab::gui {

enum class Theme { Light, Dark };

Theme currentTheme();
// Sets the application palette and stylesheet (baseStyleSheet + the theme's overrides),
// re-themes and replots every plot under `root` (may be null), and remembers the choice.
void applyTheme(Theme theme, QWidget* root = nullptr);
// The theme saved by the last applyTheme() (QSettings "theme"), for start-up.
Theme savedTheme();
void setBaseStyleSheet(const QString& css);

// Background, axes, ticks, grid, legend and text elements of one plot.
void themePlot(QCustomPlot* plot);
// Marks an editor as holding text its field refuses: the stylesheet's *[invalid="true"] rule
// (resources/qklab.qss, the dark theme's override) paints it red.
void markInvalid(QWidget* w, bool invalid);
// A row tint that keeps the palette's text readable: severity 0 (fine) to 2 (bad).
QColor severityTint(int severity);

// Presenter mode (View > Presenter mode): the theme's colours pushed to full contrast (pure
// black on white, or white on black), bolder axes and grid, and curves at least
// kPresenterPenWidth wide. PresenterMode (shell/presenter_mode.h) does the rest (fonts, full
// screen, which controls show).
constexpr double kPresenterPenWidth = 2.5;
bool presenterActive();
// Re-applies the palette and re-themes every plot under `root` (may be null).
void setPresenterActive(bool on, QWidget* root = nullptr);
// The width a curve drawn at `base` gets now: base, or in presenter mode twice base and at
// least kPresenterPenWidth.
double curvePenWidth(double base);

}  // namespace qklab::gui
