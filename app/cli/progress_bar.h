// progress_bar.h — one-line terminal progress with ETA for `qklab-cli run`.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace qklab::cli {

class ProgressBar {
  public:
    ProgressBar(int64_t firstStep, int64_t totalSteps, bool interactive);
    // Redraws at most ~10 times a second on a terminal; prints a line per 10% otherwise.
    void update(int64_t step, double loss, double tokensPerSec, double maxLogit);
    void finish();
    // A line of its own (a forecast): on a terminal it replaces the bar, which the next update
    // draws again below it.
    void note(const std::string& line);

  private:
    int64_t m_first, m_total;
    bool m_interactive;
    int m_lastDecile = -1;
    std::chrono::steady_clock::time_point m_start, m_lastDraw;
};

std::string formatDuration(double seconds);

}  // namespace qklab::cli
