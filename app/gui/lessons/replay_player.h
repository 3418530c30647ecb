// replay_player.h — plays a stored run back through the live views: a teacher records runs
// before class and still shows them "live", and a lesson falls back to a replay when the
// machine is too slow.
//
// The run's rows are read once from a read-only store, grouped into one frame per step, and
// emitted in step order as LiveBatch, the same batches the training worker sends, so every
// view that follows a live run follows a replay unchanged. Within a frame the rows keep the
// trainer's order (alarms, probes, spikes, the step's metrics), and a lesson's pause
// conditions are fed with them as a live run would: a firing condition pauses the replay
// right after its step.
//
// Time: each frame has a time on a replay clock, either the recorded wall time (the step's
// tokens / its tokens_per_s, times a speed factor) or a fixed rate (N steps/s). A QTimer
// advances the clock by the real time elapsed; advance() moves it by hand (tests), so no test
// depends on wall time. Scrubbing is a jump: the views are reset and every row up to the
// target step is emitted at once.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <memory>
#include <vector>

#include "common/gui_types.h"
#include "common/run_data.h"

class QTimer;

namespace qklab::gui {

class ReplayPlayer : public QObject {
    Q_OBJECT
  public:
    explicit ReplayPlayer(QObject* parent = nullptr);
    ~ReplayPlayer() override;

    // Reads the run through a read-only store (throws qklab::Error), then setRun().
    void load(const QString& dbPath, int64_t runId);
    // Takes a loaded run, rewinds to before its first step and emits reset(); not playing.
    void setRun(RunSnapshot run, const QString& dbPath = QString());
    void clear();  // stops and forgets the run

    bool hasRun() const { return !m_frames.empty(); }
    const RunSnapshot& run() const { return m_run; }
    int64_t runId() const { return m_run.runId; }
    QString dbPath() const { return m_dbPath; }
    int frameCount() const { return int(m_frames.size()); }
    int64_t firstStep() const;
    int64_t lastStep() const;
    // The last step emitted (-1 before the first).
    int64_t position() const;
    bool isPlaying() const { return m_playing; }
    bool atEnd() const { return m_next >= int(m_frames.size()); }

    // Speed: a fixed rate (steps per second, > 0), or the recorded wall time scaled by
    // `factor` (2 = twice as fast as it trained).
    void setStepsPerSecond(double stepsPerSecond);
    void setRecordedTime(double factor = 1.0);
    double stepsPerSecond() const { return m_stepsPerSecond; }
    // Seconds of replay time from the start to the end of the frame holding `step`.
    double timeAtStep(int64_t step) const;
    double clock() const { return m_clock; }
    int timerIntervalMs() const;

    // Pause conditions watched over the replayed rows (empty: none). Re-armed by a rewind.
    void setPauseConditions(std::vector<PauseCondition> conditions);

  public slots:
    void play();  // from the start again when at the end
    void pause();
    void togglePlay();
    // Resets the views and emits every row up to `step` at once; keeps playing if it was.
    void seek(qint64 step);
    // Moves the replay clock by `seconds` and emits every frame now due (one batch).
    void advance(double seconds);

  signals:
    // The views must start over for this run (load, rewind, scrub); batches follow.
    void reset(qint64 runId, const QString& name, const qklab::RunConfig& config);
    void batchReady(const qklab::gui::LiveBatch& batch);
    void positionChanged(qint64 step);
    void playingChanged(bool playing);
    void finished();
    // A pause condition fired at callout.step; the replay paused right after that step.
    void calloutFired(qint64 runId, const qklab::Callout& callout);

  private:
    struct Frame {
        int64_t step = 0;
        double seconds = 0;  // recorded duration of the step
        size_t probesEnd = 0, spikesEnd = 0, alarmsEnd = 0, eventsEnd = 0;  // exclusive ends
        size_t forecastsEnd = 0;
        size_t clipsEnd = 0;
    };
    void buildFrames();
    double frameTime(int index) const;  // replay time at the end of frame `index`
    void rebaseClock();
    bool feedWatcher(int index, Callout* fired);
    void appendFrame(int index, LiveBatch& batch) const;
    void emitUpTo(int endFrame, bool watch);
    void onTick();

    RunSnapshot m_run;
    QString m_dbPath;
    std::vector<Frame> m_frames;
    std::vector<double> m_cumulative;  // recorded seconds at the end of each frame
    int m_next = 0;                    // the first frame not yet emitted
    double m_clock = 0;
    double m_stepsPerSecond = 0;  // <= 0: recorded time
    double m_factor = 1.0;
    bool m_playing = false;
    std::vector<PauseCondition> m_conditions;
    std::unique_ptr<PauseWatcher> m_watcher;
    QTimer* m_timer = nullptr;
    QElapsedTimer m_wall;
};

}  // namespace qklab::gui
