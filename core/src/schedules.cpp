// schedules.cpp — LR, QK-norm alpha and softcap C as pure functions of the step, and the
// event replay that yields the settings in effect at any step (llm.c's schedulers.h style).
#include "qklab/schedules.h"

#include <algorithm>
#include <cmath>

#include "qklab/corpus.h"

namespace qklab {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Position of `step` inside [start, end) as t in [0, 1]; fractions of total steps.
double windowProgress(double start, double end, int64_t step, int64_t totalSteps) {
    const double f =
        static_cast<double>(step) / static_cast<double>(std::max<int64_t>(totalSteps, 1));
    if (f < start) return 0.0;
    if (f >= end) return 1.0;
    return (f - start) / (end - start);
}

}  // namespace

double annealAlphaAt(double t, AnnealShape shape) {
    switch (shape) {
        case AnnealShape::Hard:
            return t > 0 ? 0.0 : 1.0;
        case AnnealShape::Cosine:
            return 0.5 * (1.0 + std::cos(kPi * t));
        case AnnealShape::Linear:
            break;
    }
    return 1.0 - t;
}

double scheduledLr(const RunConfig& c, int64_t step) {
    const double peak = c.optim.lr;
    const double floorLr = peak * c.schedule.minLrRatio;
    const int64_t total = c.schedule.steps, warm = c.schedule.warmupSteps;
    if (step < warm) return peak * static_cast<double>(step + 1) / static_cast<double>(warm);
    const LrDecay d = c.schedule.decay;
    if (d == LrDecay::Constant) return peak;
    // Progress through the decay phase; reaches 1 at the last step.
    const int64_t last = std::max<int64_t>(total - 1, warm);
    if (d == LrDecay::Wsd) {
        const int64_t decaySteps = std::max<int64_t>(
            1, static_cast<int64_t>(std::llround(c.schedule.wsdDecayFraction * total)));
        const int64_t decayStart = std::max(warm, last - decaySteps);
        if (step < decayStart) return peak;
        const double t =
            last > decayStart ? static_cast<double>(step - decayStart) / (last - decayStart) : 1.0;
        return peak + (floorLr - peak) * std::min(t, 1.0);
    }
    const double t =
        last > warm ? std::min(1.0, static_cast<double>(step - warm) / (last - warm)) : 1.0;
    if (d == LrDecay::Linear) return peak + (floorLr - peak) * t;
    return floorLr + 0.5 * (peak - floorLr) * (1.0 + std::cos(kPi * t));  // cosine
}

double annealAlpha(const QkNormAnneal& a, int64_t step, int64_t totalSteps) {
    if (a.start >= 1.0) return 1.0;  // the default window [1, 1] means "no anneal"
    const double f =
        static_cast<double>(step) / static_cast<double>(std::max<int64_t>(totalSteps, 1));
    if (f < a.start) return 1.0;
    if (a.shape == AnnealShape::Hard || a.end <= a.start) return 0.0;
    return annealAlphaAt(windowProgress(a.start, a.end, step, totalSteps), a.shape);
}

double annealSoftcapC(const SoftcapConfig& s, const SoftcapAnneal& a, int64_t step,
                      int64_t totalSteps) {
    if (a.start >= 1.0) return s.c;
    const double t =
        a.end <= a.start
            ? (static_cast<double>(step) / std::max<int64_t>(totalSteps, 1) >= a.start ? 1.0 : 0.0)
            : windowProgress(a.start, a.end, step, totalSteps);
    return s.c + (a.cTo - s.c) * t;
}

StepSettings settingsAt(const RunConfig& c, int64_t step) {
    StepSettings s;
    s.qkNorm = c.attention.qkNorm;
    s.softcapKind = c.attention.softcap.kind;
    s.softcapC = annealSoftcapC(c.attention.softcap, c.anneal.softcap, step, c.schedule.steps);
    s.seqLen = c.model.seqLen;
    s.alpha = annealAlpha(c.anneal.qkNorm, step, c.schedule.steps);
    // Inside an anneal window (from its first step, where alpha is still 1) QK gains freeze.
    s.inAnnealWindow =
        c.anneal.qkNorm.start < 1.0 &&
        static_cast<double>(step) >= c.anneal.qkNorm.start * static_cast<double>(c.schedule.steps);
    // Events are sorted by step; later entries override earlier ones.
    for (const auto& e : c.events)
        if (e.step <= step) eventKindInfo(e.kind).apply(s, e, step);
    s.lr = scheduledLr(c, step) * s.lrFactor;
    if (s.qkNorm == QkNormVariant::None) s.alpha = 0.0;  // nothing normalises: the raw path
    s.annealing = s.qkNorm != QkNormVariant::None && (s.inAnnealWindow || s.alpha < 1.0);
    if (s.softcapKind == SoftcapKind::None) s.softcapC = 0.0;
    return s;
}

}  // namespace qklab
