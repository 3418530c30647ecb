// schedules.cpp — LR, QK-norm alpha and softcap C as pure functions of the step, and the
// event replay that yields the settings in effect at any step (llm.c's schedulers.h style).
#include "qklab/config/schedules.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "qklab/config/corpus.h"

namespace qklab {
namespace {

constexpr double kPi = 3.14159265358979323846;

// An anneal window in steps. A fraction f of the run means step round(f * steps), and the end
// is clamped to the last step, so a window ending at 1.0 is finished *at* the last step: the
// final step and the final evaluation see the annealed-to value exactly.
struct StepWindow {
    int64_t start = 0, end = 0;
};

StepWindow stepWindow(double start, double end, int64_t totalSteps) {
    const int64_t total = std::max<int64_t>(totalSteps, 1);
    StepWindow w;
    w.start = std::min<int64_t>(std::llround(start * static_cast<double>(total)), total - 1);
    w.end = std::clamp<int64_t>(std::llround(end * static_cast<double>(total)), w.start, total - 1);
    return w;
}

// Progress t in [0, 1] through the window: 0 before or at its start, 1 at and after its end.
// A window whose ends fall on the same step is a switch at that step.
double windowProgress(const StepWindow& w, int64_t step) {
    if (step >= w.end) return 1.0;
    if (step <= w.start) return 0.0;
    return static_cast<double>(step - w.start) / static_cast<double>(w.end - w.start);
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
    const StepWindow w = stepWindow(a.start, a.end, totalSteps);
    if (step < w.start) return 1.0;
    if (a.shape == AnnealShape::Hard) return 0.0;
    const double t = windowProgress(w, step);
    return t >= 1.0 ? 0.0 : annealAlphaAt(t, a.shape);  // exactly 0 from the end on
}

double annealSoftcapC(const SoftcapConfig& s, const SoftcapAnneal& a, int64_t step,
                      int64_t totalSteps) {
    if (a.start >= 1.0) return s.c;
    const double t = windowProgress(stepWindow(a.start, a.end, totalSteps), step);
    return t >= 1.0 ? a.cTo : s.c + (a.cTo - s.c) * t;  // exactly c_to from the end on
}

bool inQkNormAnnealWindow(const QkNormAnneal& a, int64_t step, int64_t totalSteps) {
    return a.start < 1.0 && step >= stepWindow(a.start, a.end, totalSteps).start;
}

StepSettings settingsAt(const RunConfig& c, int64_t step) {
    StepSettings s;
    s.qkNorm = c.attention.qkNorm;
    s.softcap = c.attention.softcap.kind;
    s.softcapC = annealSoftcapC(c.attention.softcap, c.anneal.softcap, step, c.schedule.steps);
    s.seqLen = c.model.seqLen;
    s.qkClipTau = c.attention.qkClip.tau;
    s.alpha = annealAlpha(c.anneal.qkNorm, step, c.schedule.steps);
    // Inside an anneal window (from its first step, where alpha is still 1) QK gains freeze.
    s.inAnnealWindow = inQkNormAnnealWindow(c.anneal.qkNorm, step, c.schedule.steps);
    // Events are sorted by step; later entries override earlier ones.
    for (const auto& e : c.events)
        if (e.step <= step) eventKindInfo(e.kind).apply(s, e, step);
    s.lr = scheduledLr(c, step) * s.lrFactor;
    if (s.qkNorm == QkNormVariant::None) s.alpha = 0.0;  // nothing normalises: the raw path
    s.annealing = s.qkNorm != QkNormVariant::None && (s.inAnnealWindow || s.alpha < 1.0);
    if (s.softcap == SoftcapKind::None) s.softcapC = 0.0;
    return s;
}

AttentionSwitches attentionSwitches(const RunConfig& c, const StepSettings& s) {
    AttentionSwitches sw;
    sw.qkNorm = s.qkNorm;
    sw.normOn = c.attention.qkNormOn;
    sw.normAfterRope = c.attention.qkNormPlacement == QkNormPlacement::AfterRope;
    sw.alpha = s.alpha;
    sw.scale = c.logitScale();
    sw.softcap = s.softcap;
    sw.softcapC = s.softcapC;
    return sw;
}

bool AttentionSwitches::operator==(const AttentionSwitches& o) const {
    // The base layer is C++17: no defaulted comparison. A field added to the struct changes
    // its size, and this assertion asks for it to be compared here too.
    static_assert(sizeof(AttentionSwitches) == 56, "compare the new field below");
    return std::tie(qkNorm, normOn, normAfterRope, alpha, scale, softcap, softcapC, fused) ==
           std::tie(o.qkNorm, o.normOn, o.normAfterRope, o.alpha, o.scale, o.softcap, o.softcapC,
                    o.fused);
}

bool fusedAttentionAllowed(const AttentionSwitches& sw, bool probing) {
    return !probing && sw.softcap == SoftcapKind::None;
}

std::vector<std::string> settingChanges(const RunConfig& c) {
    std::vector<std::string> out;
    RunConfig before = c;
    before.events.clear();
    for (const Event& e : c.events) {
        // Settings just before this event: the earlier events (same step included) applied.
        const StepSettings s = settingsAt(before, e.step);
        out.push_back(eventKindInfo(e.kind).change(s, e.args) + " @" + std::to_string(e.step));
        before.events.push_back(e);
    }
    return out;
}

}  // namespace qklab
