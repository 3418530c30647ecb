// latency_monitor.h — measures how long the GUI thread's event loop is ever blocked.
//
// A 5 ms repeating timer on the GUI thread notes the gap between its timeouts; a gap much
// longer than 5 ms means the thread was busy (a replot, a store read, a layout pass) and the
// user would have felt it. The benchmark in docs/gui-benchmarks.md reads max and percentiles.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <vector>

class QTimer;

namespace qklab::gui {

struct LatencyStats {
    int samples = 0;
    double maxStallMs = 0;  // longest gap minus the 5 ms period
    double p99StallMs = 0;
    int stallsOver50Ms = 0;
    // CPU time the GUI thread itself used inside the longest gaps: separates "our code was
    // busy" from "the OS ran other processes" (the benchmark machine has 2 shared cores).
    double maxBusyMs = 0;
    int busyOver50Ms = 0;
    double seconds = 0;
};

class LatencyMonitor : public QObject {
    Q_OBJECT
  public:
    explicit LatencyMonitor(QObject* parent = nullptr);

    void start();
    void reset();
    LatencyStats stats() const;
    QString summary() const;  // one line for logs and reports

  private:
    void tick();

    QTimer* m_timer = nullptr;
    QElapsedTimer m_clock;
    qint64 m_lastNs = 0;
    qint64 m_lastCpuNs = 0;
    std::vector<double> m_stallsMs;
    std::vector<double> m_busyMs;
};

}  // namespace qklab::gui
