// replay_player.cpp — frames from a stored run, the replay clock and the emission of rows.
#include "lessons/replay_player.h"

#include <QTimer>
#include <algorithm>
#include <cmath>

namespace qklab::gui {

namespace {

constexpr int kTickMs = 40;              // 25 updates per second, as smooth as the live views get
constexpr double kMaxTickSeconds = 0.5;  // a stalled event loop does not dump the whole run
constexpr double kEpsilon = 1e-9;

template <class Row>
int64_t stepOf(const Row& r) {
    return r.step;
}
// A spike joins the frame the live run reported it in: that of the probe it waited for.
int64_t stepOf(const Spike& s) {
    return spikeReportStep(s);
}

template <class Row>
void sortByStep(std::vector<Row>& rows) {
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Row& a, const Row& b) { return stepOf(a) < stepOf(b); });
}

template <class Row>
size_t endOfStep(const std::vector<Row>& rows, int64_t step) {
    return size_t(std::upper_bound(rows.begin(), rows.end(), step,
                                   [](int64_t s, const Row& r) { return s < stepOf(r); }) -
                  rows.begin());
}

}  // namespace

ReplayPlayer::ReplayPlayer(QObject* parent) : QObject(parent) {
    m_timer = new QTimer(this);
    m_timer->setInterval(kTickMs);
    m_timer->setTimerType(Qt::PreciseTimer);
    connect(m_timer, &QTimer::timeout, this, &ReplayPlayer::onTick);
}

ReplayPlayer::~ReplayPlayer() = default;

void ReplayPlayer::load(const QString& dbPath, int64_t runId) {
    RunStore store(dbPath.toStdString(), StoreAccess::ReadOnly);
    setRun(loadRunSnapshot(store, runId), dbPath);
}

void ReplayPlayer::setRun(RunSnapshot run, const QString& dbPath) {
    pause();
    m_run = std::move(run);
    m_dbPath = dbPath;
    buildFrames();
    seek(-1);
}

void ReplayPlayer::clear() {
    pause();
    m_run = RunSnapshot{};
    m_frames.clear();
    m_cumulative.clear();
    m_next = 0;
    m_clock = 0;
}

// One frame per stored step; probes, spikes, alarms, forecasts, QK-Clips and events join the frame
// of their step (rows of a step that has no metrics row join the next frame, those past the end the
// last).
void ReplayPlayer::buildFrames() {
    sortByStep(m_run.steps);
    sortByStep(m_run.probes);
    sortByStep(m_run.spikes);
    sortByStep(m_run.alarms);
    sortByStep(m_run.forecasts);
    sortByStep(m_run.clips);
    sortByStep(m_run.events);
    m_frames.clear();
    m_cumulative.clear();
    const double batch = double(std::max<int64_t>(1, m_run.config.data.batchSize));
    std::vector<double> known;
    for (const StepMetrics& m : m_run.steps) {
        Frame f;
        f.step = m.step;
        const double tokens = batch * double(m.seqLen > 0 ? m.seqLen : m_run.config.model.seqLen);
        f.seconds =
            std::isfinite(m.tokensPerSec) && m.tokensPerSec > 0 ? tokens / m.tokensPerSec : -1;
        if (f.seconds >= 0) known.push_back(f.seconds);
        f.probesEnd = endOfStep(m_run.probes, m.step);
        f.spikesEnd = endOfStep(m_run.spikes, m.step);
        f.alarmsEnd = endOfStep(m_run.alarms, m.step);
        f.forecastsEnd = endOfStep(m_run.forecasts, m.step);
        f.clipsEnd = endOfStep(m_run.clips, m.step);
        f.eventsEnd = endOfStep(m_run.events, m.step);
        m_frames.push_back(f);
    }
    if (m_frames.empty()) return;
    Frame& last = m_frames.back();
    last.probesEnd = m_run.probes.size();
    last.spikesEnd = m_run.spikes.size();
    last.alarmsEnd = m_run.alarms.size();
    last.forecastsEnd = m_run.forecasts.size();
    last.clipsEnd = m_run.clips.size();
    last.eventsEnd = m_run.events.size();
    // A step without a speed (a diverged one) lasts as long as a typical step.
    std::sort(known.begin(), known.end());
    const double typical = known.empty() ? 0.05 : known[known.size() / 2];
    double total = 0;
    for (Frame& f : m_frames) {
        if (f.seconds < 0) f.seconds = typical;
        total += f.seconds;
        m_cumulative.push_back(total);
    }
}

int64_t ReplayPlayer::firstStep() const {
    return m_frames.empty() ? -1 : m_frames.front().step;
}

int64_t ReplayPlayer::lastStep() const {
    return m_frames.empty() ? -1 : m_frames.back().step;
}

int64_t ReplayPlayer::position() const {
    return m_next > 0 ? m_frames[size_t(m_next - 1)].step : -1;
}

int ReplayPlayer::timerIntervalMs() const {
    return m_timer->interval();
}

double ReplayPlayer::frameTime(int index) const {
    if (index < 0) return 0;
    if (m_stepsPerSecond > 0) return double(index + 1) / m_stepsPerSecond;
    return m_cumulative[size_t(index)] / m_factor;
}

double ReplayPlayer::timeAtStep(int64_t step) const {
    int index = -1;
    for (int i = 0; i < frameCount() && m_frames[size_t(i)].step <= step; ++i) index = i;
    return frameTime(index);
}

// The clock stands at the end of the last emitted frame: a change of speed neither skips
// frames nor replays any.
void ReplayPlayer::rebaseClock() {
    m_clock = frameTime(m_next - 1);
    m_wall.restart();
}

void ReplayPlayer::setStepsPerSecond(double stepsPerSecond) {
    m_stepsPerSecond = std::max(1e-3, stepsPerSecond);
    rebaseClock();
}

void ReplayPlayer::setRecordedTime(double factor) {
    m_stepsPerSecond = 0;
    m_factor = std::max(1e-3, factor);
    rebaseClock();
}

void ReplayPlayer::setPauseConditions(std::vector<PauseCondition> conditions) {
    m_conditions = std::move(conditions);
    m_watcher = m_conditions.empty() ? nullptr : std::make_unique<PauseWatcher>(m_conditions);
}

void ReplayPlayer::play() {
    if (!hasRun()) return;
    if (atEnd()) seek(-1);
    m_playing = true;
    m_wall.restart();
    m_timer->start();
    emit playingChanged(true);
}

void ReplayPlayer::pause() {
    m_timer->stop();
    if (!m_playing) return;
    m_playing = false;
    emit playingChanged(false);
}

void ReplayPlayer::togglePlay() {
    if (m_playing)
        pause();
    else
        play();
}

void ReplayPlayer::seek(qint64 step) {
    if (!hasRun()) return;
    if (!m_conditions.empty()) m_watcher = std::make_unique<PauseWatcher>(m_conditions);
    m_next = 0;
    emit reset(m_run.runId, QString::fromStdString(m_run.info.name), m_run.config);
    int end = 0;
    while (end < frameCount() && m_frames[size_t(end)].step <= step) ++end;
    // A condition the jump passes over is spent, as it would have fired on the way.
    for (int i = 0; i < end; ++i) {
        Callout ignored;
        feedWatcher(i, &ignored);
    }
    emitUpTo(end, false);
    rebaseClock();
}

void ReplayPlayer::advance(double seconds) {
    if (!hasRun() || atEnd()) return;
    m_clock += std::max(0.0, seconds);
    int end = m_next;
    while (end < frameCount() && frameTime(end) <= m_clock + kEpsilon) ++end;
    if (end > m_next) emitUpTo(end, true);
}

void ReplayPlayer::onTick() {
    const double elapsed = double(m_wall.restart()) / 1000.0;
    advance(std::min(elapsed, kMaxTickSeconds));
}

// Feeds frame `index` to the watcher in the trainer's order; true when a condition fired.
bool ReplayPlayer::feedWatcher(int index, Callout* fired) {
    if (!m_watcher) return false;
    const Frame& f = m_frames[size_t(index)];
    const Frame* prev = index > 0 ? &m_frames[size_t(index - 1)] : nullptr;
    std::optional<Callout> c;
    for (size_t i = prev ? prev->alarmsEnd : 0; !c && i < f.alarmsEnd; ++i)
        c = m_watcher->onLogitAlarm(m_run.alarms[i]);
    for (size_t k = prev ? prev->forecastsEnd : 0; !c && k < f.forecastsEnd; ++k)
        c = m_watcher->onForecast(m_run.forecasts[k]);
    size_t i = prev ? prev->probesEnd : 0;
    while (!c && i < f.probesEnd) {  // one call per probed step
        const int64_t step = m_run.probes[i].step;
        std::vector<ProbeStats> rows;
        for (; i < f.probesEnd && m_run.probes[i].step == step; ++i)
            rows.push_back(m_run.probes[i]);
        c = m_watcher->onProbes(step, rows);
    }
    for (size_t k = prev ? prev->spikesEnd : 0; !c && k < f.spikesEnd; ++k)
        c = m_watcher->onSpike(m_run.spikes[k]);
    if (!c) c = m_watcher->onStep(m_run.steps[size_t(index)]);
    if (c) *fired = *c;
    return c.has_value();
}

void ReplayPlayer::appendFrame(int index, LiveBatch& batch) const {
    const Frame& f = m_frames[size_t(index)];
    const Frame* prev = index > 0 ? &m_frames[size_t(index - 1)] : nullptr;
    for (size_t i = prev ? prev->eventsEnd : 0; i < f.eventsEnd; ++i)
        batch.events.push_back(m_run.events[i]);
    for (size_t i = prev ? prev->alarmsEnd : 0; i < f.alarmsEnd; ++i)
        batch.alarms.push_back(m_run.alarms[i]);
    for (size_t i = prev ? prev->forecastsEnd : 0; i < f.forecastsEnd; ++i)
        batch.forecasts.push_back(m_run.forecasts[i]);
    for (size_t i = prev ? prev->clipsEnd : 0; i < f.clipsEnd; ++i)
        batch.clips.push_back(m_run.clips[i]);
    for (size_t i = prev ? prev->probesEnd : 0; i < f.probesEnd; ++i)
        batch.probes.push_back(m_run.probes[i]);
    for (size_t i = prev ? prev->spikesEnd : 0; i < f.spikesEnd; ++i)
        batch.spikes.push_back(m_run.spikes[i]);
    batch.steps.push_back(m_run.steps[size_t(index)]);
}

// Emits frames [m_next, endFrame) as one batch; with `watch`, stops after a frame at which a
// pause condition fires, pauses and reports the callout.
void ReplayPlayer::emitUpTo(int endFrame, bool watch) {
    LiveBatch batch;
    batch.runId = m_run.runId;
    bool fired = false;
    Callout callout;
    while (m_next < endFrame && !fired) {
        appendFrame(m_next, batch);
        fired = watch && feedWatcher(m_next, &callout);
        ++m_next;
    }
    if (!batch.empty()) emit batchReady(batch);
    emit positionChanged(position());
    if (fired) {
        pause();
        rebaseClock();
        emit calloutFired(m_run.runId, callout);
    }
    if (watch && atEnd()) {
        pause();
        emit finished();
    }
}

}  // namespace qklab::gui
