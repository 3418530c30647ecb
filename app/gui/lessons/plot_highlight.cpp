// plot_highlight.cpp — the overlay frame.
#include "lessons/plot_highlight.h"

#include <QEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QTimer>

namespace qklab::gui {

PlotHighlight::PlotHighlight(QObject* owner) : QWidget(nullptr) {
    setObjectName(QStringLiteral("plotHighlight"));
    setAttribute(Qt::WA_TransparentForMouseEvents);
    setAttribute(Qt::WA_NoSystemBackground);
    // Owned by `owner` until shown over a plot, then a child of that plot.
    connect(owner, &QObject::destroyed, this, [this] {
        if (!parent()) delete this;
    });
    m_timer = new QTimer(this);
    m_timer->setSingleShot(true);
    connect(m_timer, &QTimer::timeout, this, &PlotHighlight::clear);
    hide();
}

void PlotHighlight::show(QWidget* target, int ms) {
    clear();
    if (!target) return;
    m_target = target;
    setParent(target);
    setGeometry(target->rect());
    target->installEventFilter(this);
    QWidget::show();
    raise();
    if (ms > 0) m_timer->start(ms);
}

void PlotHighlight::clear() {
    m_timer->stop();
    if (m_target) m_target->removeEventFilter(this);
    hide();
}

bool PlotHighlight::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_target && event->type() == QEvent::Resize) setGeometry(m_target->rect());
    return QWidget::eventFilter(watched, event);
}

void PlotHighlight::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    QPen pen(m_color, kWidth);
    p.setPen(pen);
    p.setBrush(Qt::NoBrush);
    const int half = kWidth / 2;
    p.drawRoundedRect(rect().adjusted(half, half, -half, -half), 6, 6);
}

}  // namespace qklab::gui
