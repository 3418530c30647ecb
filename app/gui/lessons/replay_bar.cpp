// replay_bar.cpp — the replay controls and how they follow the player.
#include "lessons/replay_bar.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <QStyle>

#include "lessons/replay_player.h"

namespace qklab::gui {

namespace {
// The speed menu: recorded wall time scaled (data < 0 holds -factor), or steps per second.
struct SpeedChoice {
    const char* label;
    double value;
};
const SpeedChoice kSpeeds[] = {
    {"recorded time ×0.5", -0.5}, {"recorded time", -1.0},    {"recorded time ×2", -2.0},
    {"recorded time ×4", -4.0},   {"recorded time ×8", -8.0}, {"5 steps/s", 5},
    {"10 steps/s", 10},           {"25 steps/s", 25},         {"50 steps/s", 50},
    {"100 steps/s", 100},         {"250 steps/s", 250},
};
}  // namespace

ReplayBar::ReplayBar(ReplayPlayer* player, QWidget* parent) : QWidget(parent), m_player(player) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(4, 2, 4, 2);
    m_title = new QLabel;
    m_title->setObjectName(QStringLiteral("replayTitle"));
    m_title->setWordWrap(true);  // a long run name must not widen the window
    m_title->setMinimumWidth(120);
    m_play = new QPushButton;
    m_play->setObjectName(QStringLiteral("replayPlay"));
    m_speed = new QComboBox;
    m_speed->setObjectName(QStringLiteral("replaySpeed"));
    m_speed->setToolTip(
        tr("Recorded time replays each step as long as it took to train "
           "(its tokens / tokens per second)"));
    for (const SpeedChoice& s : kSpeeds) m_speed->addItem(tr(s.label), s.value);
    m_speed->setCurrentIndex(1);
    m_slider = new QSlider(Qt::Horizontal);
    m_slider->setObjectName(QStringLiteral("replaySlider"));
    m_slider->setToolTip(tr("Drag to jump to a step: the views show every row up to it"));
    m_position = new QLabel;
    m_position->setObjectName(QStringLiteral("replayPosition"));
    m_position->setMinimumWidth(
        m_position->fontMetrics().horizontalAdvance(QStringLiteral("step 000000 / 000000")));
    auto* close = new QPushButton(tr("End replay"));
    close->setObjectName(QStringLiteral("replayClose"));
    layout->addWidget(m_title, 1);
    layout->addWidget(m_play);
    layout->addWidget(m_speed);
    layout->addWidget(m_slider, 2);
    layout->addWidget(m_position);
    layout->addWidget(close);

    connect(m_play, &QPushButton::clicked, m_player, &ReplayPlayer::togglePlay);
    connect(m_speed, qOverload<int>(&QComboBox::currentIndexChanged), this,
            [this] { applySpeed(); });
    // Scrubbing jumps while the handle moves; the emission is one batch, cheap for lesson runs.
    connect(m_slider, &QSlider::valueChanged, this, [this](int value) {
        if (m_slider->isSliderDown() || m_slider->hasFocus()) m_player->seek(value);
    });
    connect(close, &QPushButton::clicked, this, &ReplayBar::closeRequested);
    connect(m_player, &ReplayPlayer::reset, this, [this] { onReset(); });
    connect(m_player, &ReplayPlayer::positionChanged, this, &ReplayBar::onPosition);
    connect(m_player, &ReplayPlayer::playingChanged, this, [this] { refreshPlayButton(); });
    refreshPlayButton();
}

void ReplayBar::setSpeed(double stepsPerSecond, double factor) {
    const double wanted = stepsPerSecond > 0 ? stepsPerSecond : -factor;
    int index = m_speed->findData(wanted);
    if (index < 0) {
        m_speed->addItem(stepsPerSecond > 0 ? tr("%1 steps/s").arg(stepsPerSecond)
                                            : tr("recorded time ×%1").arg(factor),
                         wanted);
        index = m_speed->count() - 1;
    }
    if (index == m_speed->currentIndex())
        applySpeed();
    else
        m_speed->setCurrentIndex(index);
}

void ReplayBar::applySpeed() {
    const double v = m_speed->currentData().toDouble();
    if (v > 0)
        m_player->setStepsPerSecond(v);
    else
        m_player->setRecordedTime(-v);
}

QString ReplayBar::positionText() const {
    return m_position->text();
}

void ReplayBar::onReset() {
    const RunSnapshot& run = m_player->run();
    const QString name = QString::fromStdString(run.info.name);
    // Short: the live header names the run in full.
    m_title->setText(tr("Replay of run %1").arg(run.runId));
    m_title->setToolTip(name.isEmpty() ? QStringLiteral("run-%1").arg(run.runId) : name);
    QSignalBlocker block(m_slider);
    m_slider->setRange(int(std::max<int64_t>(0, m_player->firstStep())),
                       int(std::max<int64_t>(0, m_player->lastStep())));
    m_slider->setValue(m_slider->minimum());
}

void ReplayBar::onPosition(qint64 step) {
    if (!m_slider->isSliderDown()) {
        QSignalBlocker block(m_slider);
        m_slider->setValue(int(std::max<qint64>(m_slider->minimum(), step)));
    }
    m_position->setText(step < 0 ? tr("step – / %1").arg(m_player->lastStep())
                                 : tr("step %1 / %2").arg(step).arg(m_player->lastStep()));
}

void ReplayBar::refreshPlayButton() {
    const bool playing = m_player->isPlaying();
    m_play->setText(playing ? tr("Pause") : tr("Play"));
    m_play->setIcon(style()->standardIcon(playing ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
}

}  // namespace qklab::gui
