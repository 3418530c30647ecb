// latency_monitor.cpp — timer-gap sampling of GUI-thread stalls.
#include "shell/latency_monitor.h"

#include <time.h>

#include <QTimer>
#include <algorithm>

namespace qklab::gui {

namespace {
constexpr int kPeriodMs = 5;

qint64 threadCpuNs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

LatencyMonitor::LatencyMonitor(QObject* parent) : QObject(parent) {
    m_timer = new QTimer(this);
    m_timer->setTimerType(Qt::PreciseTimer);
    m_timer->setInterval(kPeriodMs);
    connect(m_timer, &QTimer::timeout, this, &LatencyMonitor::tick);
}

void LatencyMonitor::start() {
    reset();
    m_timer->start();
}

void LatencyMonitor::reset() {
    m_stallsMs.clear();
    m_busyMs.clear();
    m_clock.start();
    m_lastNs = 0;
}

void LatencyMonitor::tick() {
    const qint64 now = m_clock.nsecsElapsed();
    const qint64 cpu = threadCpuNs();
    if (m_lastNs > 0) {
        m_stallsMs.push_back(std::max(0.0, (now - m_lastNs) / 1e6 - kPeriodMs));
        m_busyMs.push_back((cpu - m_lastCpuNs) / 1e6);
    }
    m_lastNs = now;
    m_lastCpuNs = cpu;
}

LatencyStats LatencyMonitor::stats() const {
    LatencyStats s;
    s.samples = int(m_stallsMs.size());
    s.seconds = m_clock.isValid() ? m_clock.elapsed() / 1000.0 : 0;
    if (m_stallsMs.empty()) return s;
    std::vector<double> sorted = m_stallsMs;
    std::sort(sorted.begin(), sorted.end());
    s.maxStallMs = sorted.back();
    s.p99StallMs = sorted[std::min(sorted.size() - 1, size_t(sorted.size() * 0.99))];
    s.stallsOver50Ms =
        int(std::count_if(sorted.begin(), sorted.end(), [](double v) { return v > 50; }));
    s.maxBusyMs = *std::max_element(m_busyMs.begin(), m_busyMs.end());
    s.busyOver50Ms =
        int(std::count_if(m_busyMs.begin(), m_busyMs.end(), [](double v) { return v > 50; }));
    return s;
}

QString LatencyMonitor::summary() const {
    const LatencyStats s = stats();
    return QStringLiteral(
               "GUI thread over %1 s: %2 samples, max stall %3 ms, p99 %4 ms, stalls > 50 ms: %5; "
               "max GUI-thread CPU in one gap %6 ms, gaps with > 50 ms CPU: %7")
        .arg(s.seconds, 0, 'f', 1)
        .arg(s.samples)
        .arg(s.maxStallMs, 0, 'f', 1)
        .arg(s.p99StallMs, 0, 'f', 1)
        .arg(s.stallsOver50Ms)
        .arg(s.maxBusyMs, 0, 'f', 1)
        .arg(s.busyOver50Ms);
}

}  // namespace qklab::gui
