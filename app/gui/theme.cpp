// theme.cpp — the two palettes and how a plot follows them.
#include "theme.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QPalette>
#include <QSettings>
#include <QStyleFactory>
#include <QToolTip>

namespace qklab::gui {
namespace {

Theme g_theme = Theme::Light;
QString g_baseCss;

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

}  // namespace

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
    const QPalette palette =
        theme == Theme::Dark ? darkPalette() : QApplication::style()->standardPalette();
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
    const QColor background = dark ? QColor(30, 31, 34) : Qt::white;
    const QColor ink = dark ? QColor(215, 215, 215) : Qt::black;
    const QColor grid = dark ? QColor(70, 72, 78) : QColor(200, 200, 200);
    plot->setBackground(background);
    for (QCPAxisRect* rect : plot->axisRects()) {
        rect->setBackground(background);
        for (QCPAxis* axis : rect->axes()) {
            axis->setBasePen(QPen(ink, 1));
            axis->setTickPen(QPen(ink, 1));
            axis->setSubTickPen(QPen(ink, 1));
            axis->setTickLabelColor(ink);
            axis->setLabelColor(ink);
            axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
            axis->grid()->setZeroLinePen(Qt::NoPen);
        }
    }
    plot->legend->setTextColor(ink);
    if (plot->legend->brush().style() != Qt::NoBrush)  // an inset legend over the data
        plot->legend->setBrush(dark ? QColor(30, 31, 34, 200) : QColor(255, 255, 255, 200));
    plot->legend->setBorderPen(QPen(dark ? QColor(90, 90, 90) : Qt::black));
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
