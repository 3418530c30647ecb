// spike_causes.cpp — the run's own timeline read before a spike: events and anneals.
#include "qklab/analysis/spike_causes.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "qklab/analysis/spikes.h"
#include "qklab/config/events.h"
#include "qklab/config/schedules.h"

namespace qklab {
namespace {

constexpr double kOff = std::numeric_limits<double>::infinity();

// How strongly QK-norm acts at a step: alpha while a variant is on, else 0.
double qkNormStrength(const StepSettings& s) {
    return s.qkNorm == QkNormVariant::None ? 0.0 : s.alpha;
}

// A softcap's or QK-Clip's bound: larger is looser, off is infinite.
double softcapBound(const StepSettings& s) {
    return s.softcap == SoftcapKind::None || s.softcapC <= 0 ? kOff : s.softcapC;
}
double clipBound(const StepSettings& s) {
    return s.qkClipTau > 0 ? s.qkClipTau : kOff;
}

// A bound that went from `before` to `after`: looser is weaker, tighter (or the same bound of
// another kind) reshapes the logits at once.
ChangeEffect boundChange(double before, double after, bool kindChanged) {
    if (after > before) return ChangeEffect::FuseWeakened;
    if (after < before || kindChanged) return ChangeEffect::FuseTightened;
    return ChangeEffect::Neutral;
}

StepSettings settingsBefore(const RunConfig& config, int64_t step) {
    return settingsAt(config, std::max<int64_t>(step - 1, 0));
}

// What event e did, compared with the settings just before it and, for a fuse that moves over
// time (a qk_anneal event), with the settings at the spike.
RunChange eventChange(const RunConfig& config, const Event& e, int64_t spikeStep) {
    const EventKindInfo& info = eventKindInfo(e.kind);
    const StepSettings before = settingsBefore(config, e.step);
    const StepSettings at = settingsAt(config, e.step), now = settingsAt(config, spikeStep);
    RunChange c;
    c.step = e.step;
    c.event = e.kind;
    c.text =
        "step " + std::to_string(e.step) + ", " + info.title + ": " + info.change(before, e.args);
    if (e.step == 0) return c;  // part of the run's start, not a change to it
    switch (e.kind) {
        case EventKind::DirtyBatch:
            c.effect = ChangeEffect::Data;
            break;
        case EventKind::ContextLength:
            c.effect = at.seqLen != before.seqLen ? ChangeEffect::Data : ChangeEffect::Neutral;
            break;
        case EventKind::LrMultiplier:
            c.effect =
                at.lrFactor > before.lrFactor ? ChangeEffect::LrRaised : ChangeEffect::Neutral;
            break;
        case EventKind::QkNorm:
        case EventKind::QkAnneal: {
            c.fuse = ChangedFuse::QkNorm;
            const double from = qkNormStrength(before), to = qkNormStrength(now);
            c.boundBefore = from;
            c.boundAfter = to;
            c.effect = to < from - kAlphaChange      ? ChangeEffect::FuseWeakened
                       : to > from + kAlphaChange    ? ChangeEffect::FuseTightened
                       : now.qkNorm != before.qkNorm ? ChangeEffect::FuseTightened
                                                     : ChangeEffect::Neutral;
            break;
        }
        case EventKind::Softcap:
            c.fuse = ChangedFuse::Softcap;
            c.boundBefore = softcapBound(before);
            c.boundAfter = softcapBound(at);
            c.effect = boundChange(c.boundBefore, c.boundAfter, at.softcap != before.softcap);
            break;
        case EventKind::QkClip:
            c.fuse = ChangedFuse::QkClip;
            c.boundBefore = clipBound(before);
            c.boundAfter = clipBound(at);
            c.effect = boundChange(c.boundBefore, c.boundAfter, false);
            // Kimi K2's name for the pair: the clip is what keeps Muon's logits bounded.
            if (config.optim.kind == OptimKind::Muon)
                c.text += c.boundAfter < kOff ? " (with Muon: MuonClip)" : " (Muon, unclipped)";
            break;
        case EventKind::SkipStep:  // no update: nothing that could cause a spike
            c.effect = ChangeEffect::Neutral;
            break;
    }
    return c;
}

bool eventMoves(const std::vector<Event>& events, EventKind a, EventKind b, int64_t from,
                int64_t to) {
    return std::any_of(events.begin(), events.end(), [&](const Event& e) {
        return (e.kind == a || e.kind == b) && e.step > from && e.step <= to;
    });
}

// "over steps 180-190 (anneal.qk_norm)" or "(the qk_anneal event of step 120)".
std::string annealSource(const RunConfig& config, int64_t step, EventKind kind,
                         const char* configKey) {
    int64_t latest = -1;
    for (const Event& e : config.events)
        if (e.kind == kind && e.step <= step) latest = e.step;
    if (latest >= 0)
        return " (the " + std::string(nameOf(kind)) + " event of step " + std::to_string(latest) +
               ")";
    return std::string(" (") + configKey + ")";
}

// The QK-norm alpha and softcap C moved by an anneal across [from, step], when no event in the
// window did it (an event's own entry says so already).
void addTrajectories(const RunConfig& config, int64_t from, int64_t step,
                     std::vector<RunChange>& out) {
    const StepSettings a = settingsAt(config, from), b = settingsAt(config, step);
    const std::string span = " over steps " + std::to_string(from) + "-" + std::to_string(step);
    const double alphaFrom = qkNormStrength(a), alphaTo = qkNormStrength(b);
    if (std::fabs(alphaTo - alphaFrom) >= kAlphaChange &&
        !eventMoves(config.events, EventKind::QkNorm, EventKind::QkAnneal, from, step)) {
        RunChange c;
        c.step = from;
        c.fuse = ChangedFuse::QkNorm;
        c.effect = alphaTo < alphaFrom ? ChangeEffect::FuseWeakened : ChangeEffect::FuseTightened;
        c.boundBefore = alphaFrom;
        c.boundAfter = alphaTo;
        c.text = std::string("QK-norm alpha ") + (alphaTo < alphaFrom ? "fell" : "rose") +
                 " from " + diagnosisNumber(alphaFrom) + " to " + diagnosisNumber(alphaTo) + span +
                 annealSource(config, step, EventKind::QkAnneal, "anneal.qk_norm");
        out.push_back(c);
    }
    const double capFrom = softcapBound(a), capTo = softcapBound(b);
    if (capFrom != capTo && std::isfinite(capFrom) && std::isfinite(capTo) &&
        !eventMoves(config.events, EventKind::Softcap, EventKind::Softcap, from, step)) {
        RunChange c;
        c.step = from;
        c.fuse = ChangedFuse::Softcap;
        c.effect = boundChange(capFrom, capTo, false);
        c.boundBefore = capFrom;
        c.boundAfter = capTo;
        c.text = std::string("softcap C ") + (capTo > capFrom ? "rose" : "fell") + " from " +
                 diagnosisNumber(capFrom) + " to " + diagnosisNumber(capTo) + span +
                 " (anneal.softcap)";
        out.push_back(c);
    }
}

}  // namespace

RunChange describeChange(const RunConfig& config, const Event& e) {
    return eventChange(config, e, e.step);
}

std::vector<RunChange> changesBefore(const RunConfig& config, int64_t step) {
    const int64_t from = std::max<int64_t>(step - kCauseWindowSteps, 0);
    std::vector<RunChange> out;
    for (const Event& e : config.events)
        if (e.step >= from && e.step <= step) out.push_back(eventChange(config, e, step));
    addTrajectories(config, from, step, out);
    return out;
}

namespace {

// Why a weakened fuse was not acting by `r`, or "" when it was (or `r` cannot tell).
std::string notActingWhy(const RunChange& c, const FuseReading& r) {
    if (c.fuse == ChangedFuse::QkNorm) {
        if (!(r.qkShrink <= 1)) return "";  // shortened q/k, or not measured
        return "QK-norm did not shorten q and k (the projections' q/k lengths were " +
               diagnosisNumber(r.qkShrink) + "x those entering the dot product)";
    }
    if (!std::isfinite(c.boundBefore) || !std::isfinite(r.maxRawLogit)) return "";
    const double near = kFuseNearBound * c.boundBefore;
    if (r.maxRawLogit >= near || r.fracAtCap > 0) return "";
    const bool cap = c.fuse == ChangedFuse::Softcap;
    return "the raw max logit stayed at or below " + diagnosisNumber(r.maxRawLogit) + ", under " +
           diagnosisNumber(near) + " = " + diagnosisNumber(kFuseNearBound) + " x its old " +
           (cap ? "C" : "tau") + (cap && r.fracAtCap == 0 ? ", none at the cap" : "");
}

}  // namespace

void judgeFuse(RunChange& c, const FuseReading& r) {
    if (c.effect != ChangeEffect::FuseWeakened || c.fuse == ChangedFuse::None) return;
    const std::string why = notActingWhy(c, r);
    if (why.empty()) return;
    c.effect = ChangeEffect::Neutral;
    c.notActing = true;
    c.text += " (not acting before it: " + why + ")";
}

const RunChange* likeliestCause(const std::vector<RunChange>& changes) {
    const RunChange* best = nullptr;
    for (const RunChange& c : changes)
        if (c.isCause() && (!best || c.effect <= best->effect)) best = &c;
    return best;
}

namespace {

CauseAdvice adviceText(const RunChange& cause) {
    const std::string what = "the change named above";  // writeCause names it first
    switch (cause.effect) {
        case ChangeEffect::FuseWeakened:
            if (cause.fuse == ChangedFuse::Softcap)
                return {2, "Tier 2: the softcap the run relied on was loosened or removed by " +
                               what +
                               ". Keep it (tanh, C = 50), or loosen it over a long "
                               "anneal rather than at once."};
            if (cause.fuse == ChangedFuse::QkClip)
                return {3,
                        "Tier 3: QK-Clip, which bounded the logits, was loosened or switched "
                        "off by " +
                            what +
                            ". Keep it, or switch QK-norm on before taking it "
                            "off."};
            return {3, "Tier 3: the QK-norm the run relied on was weakened by " + what +
                           ". Keep QK-norm on (alpha > 0), or take it off through a longer anneal "
                           "window (the guide: 5-10 % of the steps, learnable QK scales frozen)."};
        case ChangeEffect::LrRaised:
            return {4, "Tier 4: the LR was raised by " + what +
                           ". Lower it again, or raise it over a warmup instead of at once."};
        case ChangeEffect::Data:
            if (cause.event == EventKind::ContextLength)
                return {1,
                        "Tier 1: the context length changed (the change named above), not "
                        "attention: a transient is expected while the model meets positions "
                        "it has not trained on. Ramp the length over steps next time. Do not "
                        "touch QK-norm."};
            return {1,
                    "Tier 1: the data changed (the change named above), not attention. "
                    "Check that batch, the sampler and the data pipeline. Do not touch "
                    "QK-norm."};
        case ChangeEffect::FuseTightened:
            if (cause.fuse == ChangedFuse::Softcap && cause.boundAfter < kSoftcapFlattensBelow)
                return {2, "Tier 2: " + what + " tightened the softcap to C = " +
                               diagnosisNumber(cause.boundAfter) + ", below the ~" +
                               diagnosisNumber(kSoftcapFlattensBelow) +
                               " under which a softcap flattens attention (docs/CONFIG.md): "
                               "its cost lasts, it is no transient. Set C back to 30-50 "
                               "(Gemma 2: 50)."};
            return {1, "Tier 1: " + what +
                           " reshaped the logits the model had learned in one step; a "
                           "transient is expected. Change nothing unless it lasts; next time "
                           "switch it over an anneal."};
        case ChangeEffect::Neutral:
            break;
    }
    return {1, ""};
}

}  // namespace

CauseAdvice adviceFor(const RunChange& cause) {
    CauseAdvice advice = adviceText(cause);
    advice.kind =
        cause.effect == ChangeEffect::Data ? SpikeKind::DataOrAccumulation : SpikeKind::RunChange;
    return advice;
}

}  // namespace qklab
