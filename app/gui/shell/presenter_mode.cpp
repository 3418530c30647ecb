// presenter_mode.cpp — fonts, pens, docks and window state in and out of presenter mode.
#include "shell/presenter_mode.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QDockWidget>
#include <QEvent>
#include <QMainWindow>
#include <QMenuBar>
#include <QScreen>
#include <QStatusBar>
#include <QTimer>
#include <functional>

#include "common/theme.h"
#include "compare/compare_panel.h"
#include "live/live_plots_panel.h"

namespace qklab::gui {

namespace {

// The docks a lesson does not need. The Sample dock goes too: at 1080p it took 30 % of the
// width and cut the plots' titles; a lesson that wants text shows it in its own step.
const char* const kHiddenDocks[] = {"setupDock", "interventionDock", "runsDock", "sampleDock"};
// And the parts a class does not use: of the Train strip it keeps Start, Pause, Stop and the
// progress; of Compare the view controls, not saving and exports.
const char* const kHiddenWidgets[] = {"runName", "runQueue", "unqueueButton", "compareSaveRow"};

QFont scaled(QFont f, double k) {
    if (f.pointSizeF() > 0)
        f.setPointSizeF(f.pointSizeF() * k);
    else if (f.pixelSize() > 0)
        f.setPixelSize(std::max(1, int(f.pixelSize() * k + 0.5)));
    return f;
}

// How a walk over the plots treats a font it has not seen: Enter scales it up; Adopt (the
// walks while presenting) takes it as born in presenter mode, from the scaled application
// font, and only records what it would be outside; Leave restores the recorded original.
enum class Walk { Enter, Adopt, Leave };

// One font of one object: the original is kept in a property named after `role`, so leaving
// restores it exactly.
void scaleFont(QObject* o, const char* role, Walk walk, const std::function<QFont()>& get,
               const std::function<void(const QFont&)>& set) {
    const QByteArray key = QByteArray("qklabPresenterFont_") + role;
    const QVariant original = o->property(key.constData());
    if (walk != Walk::Leave) {
        if (original.isValid()) return;  // already scaled
        const QFont f = get();
        if (walk == Walk::Adopt) {
            o->setProperty(key.constData(), scaled(f, 1.0 / PresenterMode::kFontScale));
            return;
        }
        o->setProperty(key.constData(), f);
        set(scaled(f, PresenterMode::kFontScale));
    } else if (original.isValid()) {
        set(original.value<QFont>());
        o->setProperty(key.constData(), QVariant());
    }
}

void scalePen(QCPAbstractPlottable* p, bool presenter) {
    // The live plots draw their curves at curvePenWidth(baseWidth) on every replot.
    if (p->property("baseWidth").isValid()) return;
    const char* key = "qklabPresenterPen";
    const QVariant original = p->property(key);
    QPen pen = p->pen();
    if (presenter) {
        if (!original.isValid()) p->setProperty(key, pen.widthF());
        pen.setWidthF(curvePenWidth(p->property(key).toDouble()));
    } else if (original.isValid()) {
        pen.setWidthF(original.toDouble());
        p->setProperty(key, QVariant());
    } else {
        return;
    }
    if (pen.style() != Qt::NoPen) p->setPen(pen);
}

void scaleAxis(QCPAxis* axis, Walk on) {
    scaleFont(
        axis, "label", on, [axis] { return axis->labelFont(); },
        [axis](const QFont& f) { axis->setLabelFont(f); });
    scaleFont(
        axis, "tick", on, [axis] { return axis->tickLabelFont(); },
        [axis](const QFont& f) { axis->setTickLabelFont(f); });
}

}  // namespace

PresenterMode::PresenterMode(QMainWindow* window) : QObject(window), m_window(window) {
    m_window->installEventFilter(this);
    m_refresh = new QTimer(this);
    m_refresh->setInterval(1000);
    connect(m_refresh, &QTimer::timeout, this, [this] { applyToAllPlots(true); });
}

void PresenterMode::applyToPlot(QCustomPlot* plot, bool presenter, bool adopt) {
    const Walk on = !presenter ? Walk::Leave : adopt ? Walk::Adopt : Walk::Enter;
    for (QCPAxisRect* rect : plot->axisRects())
        for (QCPAxis* axis : rect->axes()) scaleAxis(axis, on);
    // The entries first: QCPLegend::setFont() hands its font to every entry, which must not
    // then be scaled a second time.
    QCPLegend* legend = plot->legend;  // null when a plot removed it
    for (int i = 0; legend && i < legend->itemCount(); ++i)
        if (QCPAbstractLegendItem* item = legend->item(i))
            scaleFont(
                item, "item", on, [item] { return item->font(); },
                [item](const QFont& f) { item->setFont(f); });
    if (legend)
        scaleFont(
            legend, "legend", on, [legend] { return legend->font(); },
            [legend](const QFont& f) { legend->setFont(f); });
    for (int i = 0; i < plot->plotLayout()->elementCount(); ++i) {
        QCPLayoutElement* e = plot->plotLayout()->elementAt(i);
        if (auto* text = qobject_cast<QCPTextElement*>(e))
            scaleFont(
                text, "title", on, [text] { return text->font(); },
                [text](const QFont& f) { text->setFont(f); });
        if (auto* scale = qobject_cast<QCPColorScale*>(e)) scaleAxis(scale->axis(), on);
    }
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* text = qobject_cast<QCPItemText*>(plot->item(i)))
            scaleFont(
                text, "item", on, [text] { return text->font(); },
                [text](const QFont& f) { text->setFont(f); });
    for (int i = 0; i < plot->plottableCount(); ++i) scalePen(plot->plottable(i), presenter);
    plot->replot(QCustomPlot::rpQueuedReplot);
}

void PresenterMode::applyToAllPlots(bool adopt) {
    for (QCustomPlot* plot : m_window->findChildren<QCustomPlot*>())
        applyToPlot(plot, m_active, adopt);
    if (adopt) return;
    for (LivePlotsPanel* live : m_window->findChildren<LivePlotsPanel*>()) {
        live->relayoutPlots();  // presenter mode shows only the plots the lesson step names
        live->replotNow();
    }
    for (ComparePanel* compare : m_window->findChildren<ComparePanel*>())
        compare->presenterChanged();
}

void PresenterMode::setActive(bool on) {
    if (on == m_active) return;
    if (on)
        enter();
    else
        leave();
    emit activeChanged(on);
}

void PresenterMode::enter() {
    m_dockState = m_window->saveState();
    m_geometry = m_window->saveGeometry();
    m_windowState = m_window->windowState();
    m_appFont = QApplication::font();
    m_active = true;
    QApplication::setFont(scaled(m_appFont, kFontScale));
    setPresenterActive(true, m_window);
    for (const char* name : kHiddenDocks)
        if (auto* dock = m_window->findChild<QDockWidget*>(QLatin1String(name))) dock->hide();
    m_hiddenWidgets.clear();
    for (const char* name : kHiddenWidgets)
        if (auto* w = m_window->findChild<QWidget*>(QLatin1String(name)); w && !w->isHidden()) {
            m_hiddenWidgets << w;
            w->hide();
        }
    if (auto* lesson = m_window->findChild<QDockWidget*>(QStringLiteral("lessonDock")))
        lesson->installEventFilter(this);
    // Height is what a 1280x720 projector lacks: no dock title bars, no status bar.
    for (QDockWidget* dock : m_window->findChildren<QDockWidget*>())
        if (!dock->titleBarWidget()) {
            auto* none = new QWidget(dock);
            none->setObjectName(QStringLiteral("presenterTitleBar"));
            dock->setTitleBarWidget(none);
        }
    m_statusBarVisible = !m_window->statusBar()->isHidden();
    m_window->statusBar()->hide();
    // The menu bar too: its actions are the window's as well, so F11 and the lesson keys
    // still work.
    m_menuBarVisible = !m_window->menuBar()->isHidden();
    m_window->menuBar()->hide();
    applyToAllPlots(false);
    m_refresh->start();
    // Without a window manager (a projector's kiosk session, Xvfb) full screen is only a
    // state: the size has to be asked for too.
    if (QScreen* screen = m_window->screen()) m_window->setGeometry(screen->geometry());
    m_window->showFullScreen();
    QTimer::singleShot(0, this, &PresenterMode::fitLessonDock);
}

// The lesson's text gets about a quarter of the width, and at least 300 px: a callout and
// Next must read on a 1024x768 projector. Again whenever the window's size changes or the
// lesson dock appears (a lesson opened while presenting).
void PresenterMode::fitLessonDock() {
    if (!m_active) return;
    // The window grew past the screen while the hidden docks' sizes still counted (the
    // minimum the layout set then stays): back to the screen, now that it fits. (Without a
    // window manager, full screen is not even a state: isFullScreen() stays false.)
    if (QScreen* screen = m_window->screen();
        screen && m_window->geometry() != screen->geometry() &&
        m_window->minimumSizeHint().width() <= screen->geometry().width()) {
        m_window->setMinimumSize(0, 0);
        m_window->setGeometry(screen->geometry());
    }
    auto* lesson = m_window->findChild<QDockWidget*>(QStringLiteral("lessonDock"));
    if (m_active && lesson && lesson->isVisible())
        m_window->resizeDocks({lesson}, {std::max(300, m_window->width() * 26 / 100)},
                              Qt::Horizontal);
}

bool PresenterMode::eventFilter(QObject* watched, QEvent* event) {
    if (m_active && (event->type() == QEvent::Resize || event->type() == QEvent::Show))
        QTimer::singleShot(0, this, &PresenterMode::fitLessonDock);
    return QObject::eventFilter(watched, event);
}

void PresenterMode::leave() {
    m_active = false;
    m_refresh->stop();
    QApplication::setFont(m_appFont);
    setPresenterActive(false, m_window);
    applyToAllPlots(false);  // restores every original font and pen
    for (const QPointer<QWidget>& w : m_hiddenWidgets)
        if (w) w->show();
    m_hiddenWidgets.clear();
    for (QDockWidget* dock : m_window->findChildren<QDockWidget*>())
        if (QWidget* bar = dock->titleBarWidget();
            bar && bar->objectName() == QLatin1String("presenterTitleBar")) {
            dock->setTitleBarWidget(nullptr);
            delete bar;
        }
    m_window->statusBar()->setVisible(m_statusBarVisible);
    m_window->menuBar()->setVisible(m_menuBarVisible);
    m_window->setWindowState(m_windowState);
    m_window->restoreGeometry(m_geometry);
    m_window->restoreState(m_dockState);
}

}  // namespace qklab::gui
