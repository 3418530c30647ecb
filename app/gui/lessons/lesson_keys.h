// lesson_keys.h — the keys a class uses, whatever has focus. While a lesson is on screen,
// Space, Page Down and Right (a presentation clicker's Next) continue a waiting callout, else
// go to the next step; Page Up and Left go back. Without this, a focused button took Space: the
// Next the teacher had just clicked skipped a step, or Start queued a stray run of the form's
// config. A text field being typed in keeps Space, Left and Right; the page keys are always the
// lesson's.
#pragma once

#include <QObject>

namespace qklab::gui {

class LessonPlayer;

class LessonKeys : public QObject {
    Q_OBJECT
  public:
    // Watches every key of the application (an event filter on qApp) for `player`'s window.
    explicit LessonKeys(LessonPlayer* player);

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

  private:
    enum class Move { None, Forward, Back };
    Move moveFor(QObject* watched, QEvent* event) const;

    LessonPlayer* m_player;
};

}  // namespace qklab::gui
