// replay_bar.h — the controls of a replay: play/pause, speed (recorded wall time x0.5 … x8,
// or a fixed N steps/s), a scrub slider over the run's steps and the position.
//
// A thin view of ReplayPlayer: every control calls the player, and the player's signals keep
// the controls in step (a lesson or a callout may pause the replay too).
#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QPushButton;
class QSlider;

namespace qklab::gui {

class ReplayPlayer;

class ReplayBar : public QWidget {
    Q_OBJECT
  public:
    explicit ReplayBar(ReplayPlayer* player, QWidget* parent = nullptr);

    // Chooses the speed entry: steps/s > 0, or <= 0 for the recorded time times `factor`.
    void setSpeed(double stepsPerSecond, double factor = 1.0);
    QString positionText() const;

  signals:
    void closeRequested();

  private:
    void applySpeed();
    void onReset();
    void onPosition(qint64 step);
    void refreshPlayButton();

    ReplayPlayer* m_player;
    QPushButton* m_play = nullptr;
    QComboBox* m_speed = nullptr;
    QSlider* m_slider = nullptr;
    QLabel* m_position = nullptr;
    QLabel* m_title = nullptr;
};

}  // namespace qklab::gui
