// progress_bar.cpp — see progress_bar.h.
#include "progress_bar.h"

#include <cmath>
#include <cstdio>

namespace qklab::cli {

std::string formatDuration(double seconds) {
    // Past about 31 years the estimate says nothing; past 2^63 s (schedule.steps = 2^63 - 1 on
    // a slow machine) converting it to a long was undefined behaviour (scripts/sanitize.sh).
    if (!std::isfinite(seconds) || seconds < 0 || seconds >= 1e9) return "--:--";
    const auto s = static_cast<long>(seconds + 0.5);
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
    return buf;
}

ProgressBar::ProgressBar(int64_t firstStep, int64_t totalSteps, bool interactive)
    : m_first(firstStep),
      m_total(totalSteps),
      m_interactive(interactive),
      m_start(std::chrono::steady_clock::now()),
      m_lastDraw(m_start - std::chrono::seconds(1)) {}

void ProgressBar::update(int64_t step, double loss, double tokensPerSec, double maxLogit) {
    const auto now = std::chrono::steady_clock::now();
    const int64_t done = step + 1;
    const double frac = static_cast<double>(done) / static_cast<double>(m_total);
    const double elapsed = std::chrono::duration<double>(now - m_start).count();
    const double rate = static_cast<double>(done - m_first) / std::max(elapsed, 1e-9);
    const double eta = static_cast<double>(m_total - done) / std::max(rate, 1e-9);
    char logit[32] = "";
    if (maxLogit > 0) std::snprintf(logit, sizeof logit, " | max logit %.3g", maxLogit);
    if (m_interactive) {
        if (done < m_total && std::chrono::duration<double>(now - m_lastDraw).count() < 0.1) return;
        m_lastDraw = now;
        constexpr int width = 30;
        const int filled = static_cast<int>(frac * width);
        std::string bar(filled, '#');
        bar += std::string(width - filled, '.');
        std::fprintf(stderr, "\r[%s] %lld/%lld loss %.4f | %.0f tok/s%s | ETA %s   ", bar.c_str(),
                     static_cast<long long>(done), static_cast<long long>(m_total), loss,
                     tokensPerSec, logit, formatDuration(eta).c_str());
        std::fflush(stderr);
    } else {
        const int decile = static_cast<int>(frac * 10);
        if (decile == m_lastDecile) return;
        m_lastDecile = decile;
        std::fprintf(stderr, "step %lld/%lld (%d%%) loss %.4f | %.0f tok/s%s | ETA %s\n",
                     static_cast<long long>(done), static_cast<long long>(m_total), decile * 10,
                     loss, tokensPerSec, logit, formatDuration(eta).c_str());
    }
}

void ProgressBar::note(const std::string& line) {
    std::fprintf(stderr, "%s%s\n", m_interactive ? "\r\033[K" : "", line.c_str());
    m_lastDraw = std::chrono::steady_clock::now() - std::chrono::seconds(1);  // redraw next
}

void ProgressBar::finish() {
    if (m_interactive) std::fprintf(stderr, "\n");
}

}  // namespace qklab::cli
