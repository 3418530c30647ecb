// presenter_mode.h — View > Presenter mode (F11): the window as a class sees it on a
// projector. Full screen; the application font and every plot font at kFontScale (1.5x);
// curves at least 2.5 px (theme.h's curvePenWidth); the high-contrast presenter palette; and
// only what a lesson needs: the lesson player, the views with the plots the lesson step names
// (LivePlotsPanel::setLessonMetrics), the Start/Pause strip (and the replay bar while
// replaying). The set-up form, the intervention dock, the run browser and the Sample dock
// hide, and so do the dock title bars, the menu bar and the status bar: the window fits a
// 1024x768 projector whole (tests/app/gui/lesson_presenter_test.cpp).
//
// Leaving restores everything exactly: the window state and geometry, the dock layout, the
// application font, and each plot font and pen as it was (the originals are kept on the
// objects themselves; a plot element born during presenter mode is scaled back down).
#pragma once

#include <QByteArray>
#include <QFont>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QWidget>
#include <Qt>

class QCustomPlot;
class QMainWindow;
class QTimer;

namespace qklab::gui {

class PresenterMode : public QObject {
    Q_OBJECT
  public:
    static constexpr double kFontScale = 1.5;

    explicit PresenterMode(QMainWindow* window);
    bool isActive() const { return m_active; }

    // Scales (or restores) one plot's fonts and curve pens; idempotent. `adopt`: fonts not
    // seen before were born in presenter mode (already scaled); only their originals are noted.
    static void applyToPlot(QCustomPlot* plot, bool presenter, bool adopt = false);

  public slots:
    void setActive(bool on);
    void toggle() { setActive(!m_active); }

  signals:
    void activeChanged(bool on);

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

  private:
    void fitLessonDock();
    void enter();
    void leave();
    void applyToAllPlots(bool adopt);

    QMainWindow* m_window;
    bool m_active = false;
    QFont m_appFont;
    QByteArray m_dockState;
    QByteArray m_geometry;
    Qt::WindowStates m_windowState;
    QList<QPointer<QWidget>> m_hiddenWidgets;  // hidden on entering, shown on leaving
    bool m_statusBarVisible = true;
    bool m_menuBarVisible = true;
    QTimer* m_refresh = nullptr;  // plots built while presenting (a comparison) follow
};

}  // namespace qklab::gui
