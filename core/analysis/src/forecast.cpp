// forecast.cpp — the growth fit and the forecaster (qklab/analysis/forecast.h).
#include "qklab/analysis/forecast.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace qklab {
namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The least-squares slope of y on x over its standard error (inf when the points lie on it).
double slopeT(const std::vector<double>& x, const std::vector<double>& y) {
    const double n = static_cast<double>(x.size());
    double mx = 0, my = 0;
    for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
    double sxx = 0, sxy = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        sxx += (x[i] - mx) * (x[i] - mx);
        sxy += (x[i] - mx) * (y[i] - my);
    }
    if (sxx <= 0) return 0;
    const double b = sxy / sxx;
    double sse = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double r = y[i] - my - b * (x[i] - mx);
        sse += r * r;
    }
    const double se = std::sqrt(sse / (n - 2) / sxx);
    if (se <= 1e-12 * std::fabs(b)) return b > 0 ? std::numeric_limits<double>::infinity() : 0;
    return b / se;
}

}  // namespace

GrowthFit fitGrowth(const std::vector<std::pair<int64_t, double>>& points) {
    GrowthFit f;
    if (static_cast<int>(points.size()) < kForecastMinProbes) return f;
    std::vector<double> x, y, slopes, levels;
    for (const auto& [step, v] : points) {
        if (!(v > 0) || !std::isfinite(v)) return f;
        x.push_back(static_cast<double>(step));
        y.push_back(std::log(v));
    }
    for (size_t i = 0; i < x.size(); ++i)
        for (size_t j = i + 1; j < x.size(); ++j)
            if (x[j] > x[i]) slopes.push_back((y[j] - y[i]) / (x[j] - x[i]));
    if (slopes.empty()) return f;
    f.ok = true;
    f.rate = median(slopes);
    for (size_t i = 0; i < x.size(); ++i) levels.push_back(y[i] - f.rate * (x[i] - x.back()));
    f.level = median(levels);
    f.t = slopeT(x, y);
    f.rise = std::exp(f.rate * (x.back() - x.front()));
    return f;
}

std::optional<double> stepsToCross(const GrowthFit& fit, double line) {
    if (!fit.ok || !(fit.rate > 0)) return std::nullopt;
    return std::max(0.0, (std::log(line) - fit.level) / fit.rate);
}

std::string forecastText(const Forecast& f) {
    std::ostringstream t;
    t << "at this rate the raw max logit of layer " << f.layer;
    if (f.head >= 0) t << " head " << f.head;
    t << " passes " << diagnosisNumber(f.threshold) << " in about " << f.predictedStep - f.step
      << " steps (step " << f.predictedStep << "; now " << diagnosisNumber(f.value) << ", x"
      << diagnosisNumber(std::exp(f.rate * 10)) << " per 10 steps)";
    return t.str();
}

// The forecast one row's series makes now, if any.
std::optional<Forecast> Forecaster::forecastFor(int64_t step, const ProbeStats& row) {
    auto& s = m_series[{row.layer, row.head}];
    s.emplace_back(step, row.logitMaxRaw);
    if (static_cast<int>(s.size()) > kForecastWindowProbes) s.pop_front();
    if (!(row.logitMaxRaw >= kForecastFloor) || !(row.logitMaxRaw <= m_line)) return std::nullopt;
    const GrowthFit fit = fitGrowth({s.begin(), s.end()});
    const auto eta = stepsToCross(fit, m_line);
    if (!eta || fit.t < kForecastMinT || fit.rise < kForecastMinRise) return std::nullopt;
    if (*eta > static_cast<double>(kForecastHorizonSteps)) return std::nullopt;
    Forecast f;
    f.step = step;
    f.kind = OnsetKind::MaxLogit;
    f.layer = row.layer;
    f.head = row.head;
    f.metric = "logit_max_raw";
    f.value = row.logitMaxRaw;
    f.threshold = m_line;
    f.rate = fit.rate;
    f.predictedStep = step + static_cast<int64_t>(std::ceil(*eta));
    f.text = forecastText(f);
    return f;
}

std::vector<Forecast> Forecaster::addProbes(int64_t step, const std::vector<ProbeStats>& rows) {
    // Per layer, the forecast with the earliest crossing among its rows.
    std::map<int32_t, Forecast> best;
    std::map<int32_t, bool> above;
    for (const ProbeStats& row : rows) {
        above[row.layer] = above[row.layer] || !(row.logitMaxRaw <= m_line);
        auto f = forecastFor(step, row);
        if (!f) continue;
        auto it = best.find(row.layer);
        if (it == best.end() || f->predictedStep < it->second.predictedStep) best[row.layer] = *f;
    }
    std::vector<Forecast> out;
    for (const auto& [layer, isAbove] : above) {
        const bool warns = best.count(layer) > 0;
        if (auto e = m_episodes.find(layer); e != m_episodes.end()) {
            Episode& ep = e->second;
            ep.crossed = ep.crossed || isAbove;
            ep.calm = warns || isAbove ? 0 : ep.calm + 1;
            const bool expired = !ep.crossed && step > ep.warnedAt + kForecastHorizonSteps;
            if (!(ep.calm >= kForecastRearmProbes && (ep.crossed || expired))) continue;
            m_episodes.erase(e);
        }
        if (!warns) continue;
        m_episodes[layer] = Episode{step, false, 0};
        out.push_back(best[layer]);
    }
    return out;
}

}  // namespace qklab
