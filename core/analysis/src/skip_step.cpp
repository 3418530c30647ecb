// skip_step.cpp — the sigma skip-step rule (see qklab/analysis/skip_step.h).
#include "qklab/analysis/skip_step.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace qklab {
namespace {

struct MeanSd {
    double mean = 0, sd = 0;
};

template <class Get>
MeanSd meanSd(const std::deque<std::pair<double, double>>& w, Get get) {
    double sum = 0;
    for (const auto& v : w) sum += get(v);
    const double n = static_cast<double>(w.size());
    MeanSd m;
    m.mean = sum / n;
    double sq = 0;
    for (const auto& v : w) sq += (get(v) - m.mean) * (get(v) - m.mean);
    m.sd = std::sqrt(sq / (n - 1));
    return m;
}

std::string over(const char* what, double value, const MeanSd& m, double k) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s %.4g > mean %.4g + %g x %.3g = %.4g", what, value, m.mean, k,
                  m.sd, m.mean + k * m.sd);
    return buf;
}

}  // namespace

SkipStepDetector::SkipStepDetector(int64_t window, double sigma)
    : m_size(std::max<int64_t>(window, 2)), m_sigma(sigma) {}

SkipVerdict SkipStepDetector::observe(double loss, double gradNorm) {
    SkipVerdict v;
    if (static_cast<int64_t>(m_window.size()) >= std::max<int64_t>(2, m_size / 2)) {
        const MeanSd l = meanSd(m_window, [](const auto& p) { return p.first; });
        const MeanSd g = meanSd(m_window, [](const auto& p) { return p.second; });
        // Written as "not within" so that a NaN skips, as OLMo-core's comparison does.
        const bool lossOver = !(loss - l.mean <= m_sigma * l.sd);
        const bool gradOver = !(gradNorm - g.mean <= m_sigma * g.sd);
        v.skip = lossOver || gradOver;
        if (lossOver) v.why = over("loss", loss, l, m_sigma);
        if (gradOver)
            v.why += (v.why.empty() ? "" : "; ") + over("grad norm", gradNorm, g, m_sigma);
    }
    m_window.emplace_back(loss, gradNorm);
    while (static_cast<int64_t>(m_window.size()) > m_size) m_window.pop_front();
    return v;
}

std::vector<std::pair<double, double>> SkipStepDetector::window() const {
    return {m_window.begin(), m_window.end()};
}

void SkipStepDetector::restore(const std::vector<std::pair<double, double>>& window) {
    m_window.assign(window.begin(), window.end());
    while (static_cast<int64_t>(m_window.size()) > m_size) m_window.pop_front();
}

}  // namespace qklab
