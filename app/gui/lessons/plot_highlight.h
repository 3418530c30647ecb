// plot_highlight.h — a coloured frame drawn over one plot, so that a lesson's callout points
// at the curve it talks about ("raw max logit just passed 30" → the logit plot).
//
// An overlay child widget: it follows the plot's size, lets every mouse event through and
// hides itself after a while (or when cleared: the lesson's next step).
#pragma once

#include <QColor>
#include <QPointer>
#include <QWidget>

class QEvent;
class QPaintEvent;
class QTimer;

namespace qklab::gui {

class PlotHighlight : public QWidget {
    Q_OBJECT
  public:
    explicit PlotHighlight(QObject* owner);

    // Frames `target` for `ms` milliseconds (0: until cleared).
    void show(QWidget* target, int ms = 8000);
    void clear();
    QWidget* target() const { return isHidden() ? nullptr : m_target.data(); }
    static constexpr int kWidth = 6;

  protected:
    void paintEvent(QPaintEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

  private:
    QPointer<QWidget> m_target;
    QTimer* m_timer = nullptr;
    QColor m_color{232, 89, 12};  // the callout's orange
};

}  // namespace qklab::gui
