// change_reports.cpp — what a change to a run did (qklab/analysis/change_reports.h).
#include "qklab/analysis/change_reports.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "qklab/analysis/spike_causes.h"

namespace qklab {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double mean(const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? kNaN : sum / static_cast<double>(v.size());
}

// The loss the steps before a change lead to expect over the steps after it: their
// least-squares line, at the after steps' mean step (a training loss falls: a plain mean of the
// steps before would call every change an improvement). `spread` gets the steps' spread around
// the line.
double expectedLoss(const std::vector<std::pair<double, double>>& before, double atStep,
                    double& spread) {
    double tMean = 0, yMean = 0;
    for (const auto& [t, y] : before) {
        tMean += t;
        yMean += y;
    }
    const auto n = static_cast<double>(before.size());
    tMean /= n;
    yMean /= n;
    double sxy = 0, sxx = 0;
    for (const auto& [t, y] : before) {
        sxy += (t - tMean) * (y - yMean);
        sxx += (t - tMean) * (t - tMean);
    }
    const double slope = before.size() >= 3 && sxx > 0 ? sxy / sxx : 0.0;
    double sq = 0;
    for (const auto& [t, y] : before) {
        const double r = y - (yMean + slope * (t - tMean));
        sq += r * r;
    }
    spread = std::sqrt(sq / n);
    return yMean + slope * (atStep - tMean);
}

double median(std::vector<double> v) {
    if (v.empty()) return kNaN;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(double v) {
    return diagnosisNumber(v);
}

bool ratioMoved(double before, double after) {
    if (!(before > 0) || !(after > 0)) return false;
    const double r = after / before;
    return r >= kJumpRatio || r <= 1 / kJumpRatio;
}

std::string signedText(double v) {
    return (v >= 0 ? "+" : "") + fmt(v);
}

// "2.08 → 1.92, against 1.85 the trend before led to expect: +0.07 (z 1.2)"
std::string lossText(const ChangeReport& r) {
    return fmt(r.lossBefore) + " \u2192 " + fmt(r.lossAfter) + ", against " + fmt(r.lossExpected) +
           " the trend before led to expect: " + signedText(r.lossAfter - r.lossExpected) + " (z " +
           fmt(r.lossZ) + ")";
}

// "2.44 → 0.055 nats (0.0225x)", or "not probed" for a window without a probe.
std::string probeText(double before, double after, const char* unit) {
    if (!std::isfinite(before) || !std::isfinite(after)) return "not probed on both sides";
    return fmt(before) + " \u2192 " + fmt(after) + unit +
           (before > 0 ? " (" + fmt(after / before) + "x)" : std::string());
}

std::string reportText(const ChangeReport& r, const RunChange& what) {
    std::ostringstream t;
    t << what.text << ": over steps " << r.step << "-" << r.reportStep << " against the "
      << kChangeReportSteps << " before, loss " << lossText(r) << "; attention entropy "
      << probeText(r.entropyBefore, r.entropyAfter, " nats") << "; max logit softmax sees "
      << probeText(r.maxLogitBefore, r.maxLogitAfter, "") << ". "
      << (r.moved ? "It moved the run (a loss shift of " + fmt(kJumpZ) +
                        " spreads, or entropy or max logit " + fmt(kJumpRatio) +
                        "x either way, or more)."
                  : "Nothing moved beyond its noise.");
    return t.str();
}

}  // namespace

std::optional<ChangeReport> reportChange(const RunConfig& config, const Event& e,
                                         const RunSeries& series, int64_t lastStep) {
    const int64_t from = e.step - kChangeReportSteps;
    lastStep = std::min(lastStep, e.step + kChangeReportSteps - 1);
    std::vector<std::pair<double, double>> lossBefore;  // (step, loss)
    std::vector<double> lossAfter, afterSteps, entBefore, entAfter, maxBefore, maxAfter;
    for (const auto& [step, loss] : series.losses) {
        if (!std::isfinite(loss)) continue;
        if (step >= from && step < e.step) lossBefore.emplace_back(double(step), loss);
        if (step >= e.step && step <= lastStep) {
            lossAfter.push_back(loss);
            afterSteps.push_back(double(step));
        }
    }
    if (lossBefore.empty() || static_cast<int64_t>(lossAfter.size()) < kMinChangeReportSteps)
        return std::nullopt;
    for (const ProbeSummary& p : series.probes) {
        if (p.step >= from && p.step < e.step) {
            entBefore.push_back(p.entropy);
            maxBefore.push_back(p.maxCapped);
        } else if (p.step >= e.step && p.step <= lastStep) {
            entAfter.push_back(p.entropy);
            maxAfter.push_back(p.maxCapped);
        }
    }
    ChangeReport r;
    r.step = e.step;
    r.kind = nameOf(e.kind);
    r.reportStep = lastStep;
    std::vector<double> before;
    for (const auto& point : lossBefore) before.push_back(point.second);
    r.lossBefore = mean(before);
    r.lossAfter = mean(lossAfter);
    double spread = 0;
    r.lossExpected = expectedLoss(lossBefore, mean(afterSteps), spread);
    r.lossZ = (r.lossAfter - r.lossExpected) / std::max(spread, 1e-9);
    r.entropyBefore = median(entBefore);
    r.entropyAfter = median(entAfter);
    r.maxLogitBefore = median(maxBefore);
    r.maxLogitAfter = median(maxAfter);
    r.moved = std::fabs(r.lossZ) >= kJumpZ || ratioMoved(r.entropyBefore, r.entropyAfter) ||
              ratioMoved(r.maxLogitBefore, r.maxLogitAfter);
    r.text = reportText(r, describeChange(config, e));
    return r;
}

bool changeInForce(const RunConfig& config, const Event& e, int64_t step) {
    if (step < e.step) return false;
    if (e.kind == EventKind::DirtyBatch) return step < e.step + kChangeReportSteps;
    return std::none_of(config.events.begin(), config.events.end(), [&](const Event& later) {
        return later.kind == e.kind && later.step > e.step && later.step <= step;
    });
}

}  // namespace qklab
