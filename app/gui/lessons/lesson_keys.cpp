// lesson_keys.cpp — see lesson_keys.h.
#include "lessons/lesson_keys.h"

#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QKeyEvent>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTextEdit>

#include "lessons/lesson_player.h"

namespace qklab::gui {

namespace {

// A widget the user types into: it keeps Space and the arrows.
bool takesText(const QWidget* w) {
    if (const auto* e = qobject_cast<const QLineEdit*>(w)) return !e->isReadOnly();
    if (const auto* e = qobject_cast<const QTextEdit*>(w)) return !e->isReadOnly();
    if (const auto* e = qobject_cast<const QPlainTextEdit*>(w)) return !e->isReadOnly();
    if (const auto* c = qobject_cast<const QComboBox*>(w)) return c->isEditable();
    return qobject_cast<const QAbstractSpinBox*>(w) != nullptr;
}

}  // namespace

LessonKeys::LessonKeys(LessonPlayer* player) : QObject(player), m_player(player) {
    qApp->installEventFilter(this);
}

LessonKeys::Move LessonKeys::moveFor(QObject* watched, QEvent* event) const {
    if (event->type() != QEvent::KeyPress && event->type() != QEvent::ShortcutOverride)
        return Move::None;
    auto* widget = qobject_cast<QWidget*>(watched);
    if (!widget || !m_player->hasLesson() || !m_player->isVisible() ||
        widget->window() != m_player->window())
        return Move::None;  // no lesson, or a dialog over it: keys are the dialog's
    const auto* key = static_cast<QKeyEvent*>(event);
    if ((key->modifiers() & ~Qt::KeypadModifier) != Qt::NoModifier) return Move::None;
    const bool typing = takesText(QApplication::focusWidget());
    switch (key->key()) {
        case Qt::Key_PageDown:
            return Move::Forward;
        case Qt::Key_PageUp:
            return Move::Back;
        case Qt::Key_Space:
        case Qt::Key_Right:
            return typing ? Move::None : Move::Forward;
        case Qt::Key_Left:
            return typing ? Move::None : Move::Back;
        default:
            return Move::None;
    }
}

bool LessonKeys::eventFilter(QObject* watched, QEvent* event) {
    const Move move = moveFor(watched, event);
    if (move == Move::None) return false;
    // Claiming the override keeps every shortcut (Run > Pause / resume on Space) from firing;
    // the key press that follows is the lesson's and goes no further.
    event->accept();
    if (event->type() == QEvent::KeyPress) {
        if (static_cast<QKeyEvent*>(event)->isAutoRepeat()) return true;  // a held key: once
        if (move == Move::Forward)
            m_player->forward();
        else
            m_player->backward();
    }
    return true;
}

}  // namespace qklab::gui
