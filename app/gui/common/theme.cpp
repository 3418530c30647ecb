// theme.cpp — the two palettes and how a plot follows them.
#include "common/theme.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QPalette>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>
#include <QToolTip>

namespace qklab::gui {
namespace {

Theme g_theme = Theme::Light;
QString g_baseCss;
bool g_presenter = false;

// Colours the stylesheet names: readable on the theme's window colour.
const char* const kDarkCss = R"css(
*[invalid="true"] { background: #6b2b2b; }
QLabel#presetWhy { color: #a9bfe6; }
QLabel#databaseLabel { color: #a0a0a0; }
)css";

QPalette darkPalette() {
    QPalette p;
    const QColor window(45, 47, 51), base(30, 31, 34), text(225, 225, 225);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, QColor(60, 62, 66));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(140, 140, 140));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(255, 90, 90));
    p.setColor(QPalette::Link, QColor(110, 170, 255));
    p.setColor(QPalette::Highlight, QColor(60, 110, 190));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Mid, QColor(120, 120, 120));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, QColor(125, 125, 125));
    return p;
}

// Full contrast for a projector: washed-out greys vanish at the back of a room.
QPalette presenterPalette(Theme theme) {
    QPalette p = theme == Theme::Dark ? darkPalette() : QApplication::style()->standardPalette();
    const bool dark = theme == Theme::Dark;
    const QColor window = dark ? Qt::black : Qt::white, text = dark ? Qt::white : Qt::black;
    for (auto role : {QPalette::Window, QPalette::Base, QPalette::Button, QPalette::AlternateBase})
        p.setColor(QPalette::Active, role, window), p.setColor(QPalette::Inactive, role, window);
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Active, role, text), p.setColor(QPalette::Inactive, role, text);
    p.setColor(QPalette::Highlight, dark ? QColor(0, 110, 255) : QColor(0, 70, 200));
    p.setColor(QPalette::HighlightedText, Qt::white);
    return p;
}

}  // namespace

bool presenterActive() {
    return g_presenter;
}

void setPresenterActive(bool on, QWidget* root) {
    g_presenter = on;
    const QString saved = QSettings().value(QStringLiteral("theme")).toString();
    applyTheme(g_theme, root);  // picks the presenter palette and plot colours
    QSettings().setValue(QStringLiteral("theme"), saved);
}

double curvePenWidth(double base) {
    return g_presenter ? std::max(kPresenterPenWidth, 2 * base) : base;
}

Theme currentTheme() {
    return g_theme;
}

Theme savedTheme() {
    return QSettings().value(QStringLiteral("theme")).toString() == QLatin1String("dark")
               ? Theme::Dark
               : Theme::Light;
}

void setBaseStyleSheet(const QString& css) {
    g_baseCss = css;
}

void applyTheme(Theme theme, QWidget* root) {
    g_theme = theme;
    QSettings().setValue(QStringLiteral("theme"),
                         theme == Theme::Dark ? QStringLiteral("dark") : QStringLiteral("light"));
    // Fusion draws every control from the palette; platform styles may not.
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    const QPalette palette = g_presenter            ? presenterPalette(theme)
                             : theme == Theme::Dark ? darkPalette()
                                                    : QApplication::style()->standardPalette();
    QApplication::setPalette(palette);
    QToolTip::setPalette(palette);  // tooltips keep their own palette otherwise
    if (auto* app = qobject_cast<QApplication*>(QCoreApplication::instance()))
        app->setStyleSheet(g_baseCss +
                           (theme == Theme::Dark ? QString::fromLatin1(kDarkCss) : QString()));
    if (!root) return;
    for (QCustomPlot* plot : root->findChildren<QCustomPlot*>()) {
        themePlot(plot);
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

void themePlot(QCustomPlot* plot) {
    const bool dark = g_theme == Theme::Dark;
    const bool loud = g_presenter;  // full contrast, bolder axes and grid
    const QColor background = dark ? (loud ? QColor(Qt::black) : QColor(30, 31, 34)) : Qt::white;
    const QColor ink = dark ? (loud ? QColor(Qt::white) : QColor(215, 215, 215)) : Qt::black;
    const QColor grid = dark ? (loud ? QColor(105, 105, 110) : QColor(70, 72, 78))
                             : (loud ? QColor(150, 150, 150) : QColor(200, 200, 200));
    const double axisWidth = loud ? 2 : 1;
    plot->setBackground(background);
    for (QCPAxisRect* rect : plot->axisRects()) {
        rect->setBackground(background);
        for (QCPAxis* axis : rect->axes()) {
            axis->setBasePen(QPen(ink, axisWidth));
            axis->setTickPen(QPen(ink, axisWidth));
            axis->setSubTickPen(QPen(ink, 1));
            axis->setTickLabelColor(ink);
            axis->setLabelColor(ink);
            axis->grid()->setPen(QPen(grid, 1, loud ? Qt::SolidLine : Qt::DotLine));
            axis->grid()->setZeroLinePen(Qt::NoPen);
        }
    }
    if (QCPLegend* legend = plot->legend) {  // null in a plot that removed its legend
        legend->setTextColor(ink);
        if (legend->brush().style() != Qt::NoBrush)  // an inset legend over the data
            legend->setBrush(dark ? QColor(30, 31, 34, 200) : QColor(255, 255, 255, 200));
        legend->setBorderPen(QPen(dark ? QColor(90, 90, 90) : Qt::black));
    }
    for (int i = 0; i < plot->plotLayout()->elementCount(); ++i) {
        if (auto* text = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i)))
            text->setTextColor(ink);
        if (auto* scale = qobject_cast<QCPColorScale*>(plot->plotLayout()->elementAt(i))) {
            scale->axis()->setBasePen(QPen(ink, 1));
            scale->axis()->setTickPen(QPen(ink, 1));
            scale->axis()->setTickLabelColor(ink);
            scale->axis()->setLabelColor(ink);
        }
    }
}

// Re-polish to apply a change of the property.
void markInvalid(QWidget* w, bool invalid) {
    if (w->property("invalid").toBool() == invalid) return;
    w->setProperty("invalid", invalid);
    w->style()->unpolish(w);
    w->style()->polish(w);
}

QColor severityTint(int severity) {
    const bool dark = g_theme == Theme::Dark;
    switch (severity) {
        case 2:
            return dark ? QColor(95, 40, 40) : QColor(255, 225, 225);
        case 1:
            return dark ? QColor(90, 70, 30) : QColor(255, 242, 215);
        default:
            return dark ? QColor(35, 70, 40) : QColor(235, 245, 235);
    }
}

}  // namespace qklab::gui
