// spikes.cpp — rolling z-score spike detection and the domain brief's spike diagnosis.
#include "qklab/analysis/spikes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace qklab {
namespace {

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(double v) {
    return diagnosisNumber(v);
}

// Population spread of v around its median, floored at 5% of the median so that a flat
// baseline does not turn noise into a huge z-score (the ratio test guards the rest).
double spreadAround(const std::vector<double>& v, double centre) {
    double sq = 0;
    for (double x : v) sq += (x - centre) * (x - centre);
    const double sd = v.empty() ? 0 : std::sqrt(sq / static_cast<double>(v.size()));
    return std::max({sd, 0.05 * std::fabs(centre), 1e-9});
}

// "20.4 = 1.09x its baseline 18.7 (z 1.2)"
std::string changeText(const Change& c, bool relative) {
    if (!relative) return fmt(c.value);
    return fmt(c.value) + " = " + fmt(c.ratio) + "x its baseline " + fmt(c.baseline) + " (z " +
           fmt(c.z) + ")";
}

std::string levelText(LogitLevel level) {
    switch (level) {
        case LogitLevel::Healthy:
            return "healthy";
        case LogitLevel::Elevated:
            return "above the healthy line, below the intervention line";
        case LogitLevel::Intervene:
            return "beyond the intervention line";
    }
    return {};
}

}  // namespace

Change changeAgainst(double value, const std::vector<double>& baseline) {
    Change c;
    c.value = value;
    if (baseline.empty()) {
        c.baseline = value;
        return c;
    }
    c.baseline = median(baseline);
    c.ratio = c.baseline != 0 ? value / c.baseline : 1.0;
    c.z = (value - c.baseline) / spreadAround(baseline, c.baseline);
    return c;
}

std::string diagnosisNumber(double v) {
    // Three significant digits, but whole numbers from 100 on (1450, not 1.45e+03).
    if (std::isfinite(v) && std::fabs(v) >= 100 && std::fabs(v) < 1e9)
        return std::to_string(std::llround(v));
    std::ostringstream os;
    os.precision(3);
    os << v;
    return os.str();
}

std::string softcapAdvice(double c) {
    constexpr double kFirstCap = 50, kSecondCap = 30;  // the brief's tier-2 steps
    if (!(c > 0))
        return "Tier 2: add a tanh softcap with C = 50, watch 500 steps, then C = 30 and/or grad "
               "clip 1.0.";
    const std::string has = "Tier 2: the run has an attention softcap already, C = " + fmt(c);
    if (c < kSoftcapFlattensBelow)
        return has + ", below the ~" + fmt(kSoftcapFlattensBelow) +
               " under which a softcap flattens attention: do not lower it; set it back to 30-50 "
               "(the brief: C = 5 ruined long-range tasks), add grad clip 1.0, and turn on "
               "QK-norm (tier 3) to bound the logits before the cap.";
    if (c <= kSecondCap)
        return has +
               ", the brief's lowest step (C = 30): rather than a lower cap, add grad clip "
               "1.0 and watch 500 steps; if the logits keep climbing under it, turn on QK-norm "
               "(tier 3).";
    return has + ": lower it to C = " + fmt(c > kFirstCap ? kFirstCap : kSecondCap) +
           ", watch 500 steps, then C = 30 and/or grad clip 1.0; if the logits keep climbing "
           "under the cap, turn on QK-norm (tier 3).";
}

LogitLevel logitLevel(double maxLogit, double p99Logit) {
    if (maxLogit > kInterveneMaxLogit || p99Logit > kInterveneP99Logit)
        return LogitLevel::Intervene;
    if (maxLogit >= kHealthyMaxLogit || p99Logit >= kHealthyP99Logit) return LogitLevel::Elevated;
    return LogitLevel::Healthy;
}

RollingZScore::RollingZScore(int64_t window, int64_t minHistory)
    : m_window(std::max<int64_t>(window, 2)), m_minHistory(std::max<int64_t>(minHistory, 2)) {}

std::optional<double> RollingZScore::push(double x) {
    if (!std::isfinite(x)) return std::nullopt;  // divergence is reported elsewhere
    std::optional<double> z;
    const auto n = static_cast<double>(m_values.size());
    if (static_cast<int64_t>(m_values.size()) >= m_minHistory) {
        const double mean = m_sum / n;
        const double var = std::max(0.0, m_sumSq / n - mean * mean);
        // A perfectly flat history has no spread; a tiny floor keeps z finite and meaningful.
        const double sd = std::sqrt(var) + 1e-12 + 1e-6 * std::fabs(mean);
        z = (x - mean) / sd;
    }
    m_values.push_back(x);
    m_sum += x;
    m_sumSq += x * x;
    if (static_cast<int64_t>(m_values.size()) > m_window) {
        const double old = m_values.front();
        m_values.pop_front();
        m_sum -= old;
        m_sumSq -= old * old;
    }
    return z;
}

double qkShrinkOf(const ProbeStats& row) {
    const double entering = row.qNormP90 * row.kNormP90;
    return entering > 0 ? row.qRawNormP90 * row.kRawNormP90 / entering
                        : std::numeric_limits<double>::quiet_NaN();
}

FuseReading fuseReading(const std::vector<ProbeSummary>& history, int64_t changeStep) {
    FuseReading r;
    size_t from = 0;
    bool before = false;
    for (size_t i = 0; i < history.size(); ++i)
        if (history[i].step < changeStep) {
            from = i;
            before = true;
        }
    if (before) {
        r.fracAtCap = history[from].fracAtCap;
        r.qkShrink = history[from].qkShrink;
    }
    for (size_t i = from; i < history.size(); ++i)
        if (!(r.maxRawLogit >= history[i].maxLogit)) r.maxRawLogit = history[i].maxLogit;
    return r;
}

ProbeSummary summarizeProbes(int64_t step, const std::vector<ProbeStats>& rows) {
    ProbeSummary s;
    s.step = step;
    int layers = 0;
    for (const auto& r : rows) {
        if (r.head != -1) continue;
        ++layers;
        s.maxLogit = std::max(s.maxLogit, r.logitMaxRaw);
        s.maxCapped = std::max(s.maxCapped, r.logitMaxCapped);
        s.entropy += r.entropy;
        s.fracAtCap = std::max(s.fracAtCap, r.fracAtCap);
        const double shrink = qkShrinkOf(r);
        if (std::isfinite(shrink) && !(s.qkShrink >= shrink)) s.qkShrink = shrink;
        s.p99Logit = std::max(s.p99Logit, r.logitP99Raw);
        // Raw projection norms: with QK-norm on, the normalised ones are constant by design,
        // while the runaway the diagnosis looks for happens in the projections.
        s.qkNorm = std::max({s.qkNorm, r.qRawNormP90, r.kRawNormP90});
    }
    if (layers > 0) s.entropy /= layers;
    return s;
}

OutputLogitReading readOutputLogits(double logZ, double outMax, const std::vector<double>& logZs,
                                    const std::vector<double>& outMaxes) {
    OutputLogitReading r;
    const auto finite = [](const std::vector<double>& v) {
        return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
    };
    r.available = static_cast<int>(logZs.size()) >= kMinBaselineProbes && std::isfinite(logZ) &&
                  std::isfinite(outMax) && finite(logZs) && finite(outMaxes);
    if (!r.available) return r;
    r.logZMean = changeAgainst(logZ, logZs);
    r.outLogitMax = changeAgainst(outMax, outMaxes);
    return r;
}

SpikeEvidence spikeEvidence(const std::vector<ProbeSummary>& history, const DiagnosisContext& ctx) {
    SpikeEvidence e;
    const double window = std::max<double>(static_cast<double>(ctx.stepsSoFar), kRareSpikeSteps);
    e.rare = static_cast<double>(ctx.spikesSoFar) * kRareSpikeSteps / window <= 1.0;
    e.output = ctx.outputLogits;
    const Change& z = e.output.logZMean;
    const Change& m = e.output.outLogitMax;
    e.outputJump =
        e.output.available && ((z.value - z.baseline >= kLogZJumpNats && z.z >= kJumpZ) ||
                               (m.ratio >= kJumpRatio && m.z >= kJumpZ));
    if (history.empty()) return e;
    const ProbeSummary& cur = history.back();
    std::vector<double> maxes, norms;
    const size_t first =
        history.size() > kBaselineProbes + 1 ? history.size() - kBaselineProbes - 1 : 0;
    for (size_t i = first; i + 1 < history.size(); ++i) {
        maxes.push_back(history[i].maxLogit);
        norms.push_back(history[i].qkNorm);
    }
    e.probeStep = cur.step;
    e.baselineProbes = static_cast<int>(maxes.size());
    e.relative = e.baselineProbes >= kMinBaselineProbes;
    e.maxLogit = changeAgainst(cur.maxLogit, maxes);
    e.qkNorm = changeAgainst(cur.qkNorm, norms);
    e.p99Logit = cur.p99Logit;
    e.level = logitLevel(cur.maxLogit, cur.p99Logit);
    e.firstQkNorm = history.front().qkNorm;
    e.firstProbeStep = history.front().step;
    e.logitJump = e.relative && e.maxLogit.ratio >= kJumpRatio && e.maxLogit.z >= kJumpZ &&
                  e.level != LogitLevel::Healthy;
    e.normsRising = e.relative && e.qkNorm.ratio >= kNormRiseRatio && e.qkNorm.z >= kNormRiseZ;
    e.normsGrownSinceStart =
        history.size() > 1 && e.firstQkNorm > 0 && cur.qkNorm >= kChronicNormGrowth * e.firstQkNorm;
    return e;
}

namespace {

SpikeKind classify(const SpikeEvidence& e) {
    // The LM head moved while attention did not: QK-norm and softcap cannot help.
    if (!e.logitJump && e.level != LogitLevel::Intervene && e.outputJump)
        return SpikeKind::OutputLogits;
    if (e.logitJump) return e.normsRising ? SpikeKind::QkRunaway : SpikeKind::TokenSpike;
    if (e.level == LogitLevel::Intervene)
        return e.normsRising || e.normsGrownSinceStart ? SpikeKind::QkRunaway
                                                       : SpikeKind::HighLogits;
    return SpikeKind::DataOrAccumulation;
}

int tierOf(SpikeKind kind, const SpikeEvidence& e, bool qkNormActive) {
    if (kind == SpikeKind::DataOrAccumulation) return e.rare ? 1 : 4;
    if (kind == SpikeKind::OutputLogits) return 2;  // a bound on the logits, in the LM head
    if (qkNormActive) return 4;
    return kind == SpikeKind::QkRunaway ? 3 : 2;
}

// The sentences that state the numbers: probe, logits against baseline and thresholds, norms.
void writeEvidence(std::ostringstream& why, const SpikeEvidence& e, int64_t spikeStep) {
    if (e.probeStep == spikeStep)
        why << "Probe read: step " << e.probeStep << ", the spike's own step";
    else if (e.probeStep > spikeStep)
        why << "Probe read: step " << e.probeStep << ", the first at or after the spike";
    else
        why << "No probe at or after the spike was recorded (the run ended first); probe read: "
               "step "
            << e.probeStep << ", the latest before it";
    if (e.relative)
        why << "; baseline = median of the " << e.baselineProbes << " probes before it. ";
    else
        why << "; only " << e.baselineProbes << " earlier probe(s), too few for a baseline, so "
            << "only the absolute thresholds apply. ";
    why << "Max raw logit " << changeText(e.maxLogit, e.relative);
    if (e.relative) {
        const bool up = e.maxLogit.ratio >= kJumpRatio && e.maxLogit.z >= kJumpZ;
        const bool down = e.maxLogit.ratio <= 1 / kJumpRatio && e.maxLogit.z <= -kJumpZ;
        why << (e.logitJump ? ": a jump"
                : up        ? ": up, but still healthy"
                : down      ? ": lower than its baseline, no jump"
                            : ": no jump")
            << " (a jump is >= " << fmt(kJumpRatio) << "x and z >= " << fmt(kJumpZ)
            << " past the healthy line)";
    }
    why << "; p99 " << fmt(e.p99Logit) << ". Healthy is max < " << fmt(kHealthyMaxLogit)
        << " and p99 < " << fmt(kHealthyP99Logit) << ", intervene beyond max "
        << fmt(kInterveneMaxLogit) << " or p99 " << fmt(kInterveneP99Logit) << ": this probe is "
        << levelText(e.level) << ". ";
    why << "q/k norm p90 " << changeText(e.qkNorm, e.relative);
    if (e.relative) {
        const bool falling = e.qkNorm.ratio <= 1 / kNormRiseRatio && e.qkNorm.z <= -kNormRiseZ;
        why << (e.normsRising ? ": rising" : falling ? ": falling" : ": flat");
    }
    if (e.normsGrownSinceStart)
        why << "; " << fmt(e.qkNorm.value / e.firstQkNorm) << "x the run's first probe (step "
            << e.firstProbeStep << ")";
    why << ". ";
}

// "Output logits at the spike: mean log Z 14.3, +0.2 nats on its baseline 14.1 (z 0.5); max
// output logit 23.1 = 1.02x its baseline 22.6 (z 0.4): no jump. "
void writeOutputLogits(std::ostringstream& why, const SpikeEvidence& e) {
    if (!e.output.available) return;
    const Change& z = e.output.logZMean;
    const Change& m = e.output.outLogitMax;
    why << "Output logits at the spike (baseline: the " << kOutputBaselineSteps
        << " steps before, at most): mean log Z " << fmt(z.value) << ", "
        << (z.value >= z.baseline ? "+" : "") << fmt(z.value - z.baseline)
        << " nats on its baseline " << fmt(z.baseline) << " (z " << fmt(z.z)
        << "); max output logit " << changeText(m, true)
        << (e.outputJump ? ": a jump" : ": no jump") << " (a jump is >= " << fmt(kLogZJumpNats)
        << " nat of log Z, or >= " << fmt(kJumpRatio) << "x the max, with z >= " << fmt(kJumpZ)
        << "). ";
}

void writeVerdict(std::ostringstream& why, SpikeKind kind, const SpikeEvidence& e) {
    switch (kind) {
        case SpikeKind::QkRunaway:
            if (e.logitJump)
                why << "Logits jumped and q/k lengths rose with them: Q/K length runaway. ";
            else
                why << "Logits are beyond the intervention line without a new jump and q/k "
                       "lengths have grown: the Q/K lengths ran away earlier, and this spike is "
                       "a symptom of it. ";
            break;
        case SpikeKind::TokenSpike:
            why << "Logits jumped while q/k norms stayed flat: a sporadic token/position spike. ";
            break;
        case SpikeKind::HighLogits:
            why << "Logits are beyond the intervention line but did not jump at this spike, and "
                   "q/k norms are stable: the logits are high, not newly spiking. ";
            break;
        case SpikeKind::DataOrAccumulation:
            why << "Attention shows no jump and the logits are not beyond the intervention "
                   "line: the cause is more likely the data or the loss/gradient accumulation "
                   "than attention. ";
            break;
        case SpikeKind::OutputLogits:
            why << "Attention shows no jump and is not beyond the intervention line, while the "
                   "output logits jumped: output-logit divergence in the LM head (Wortsman et "
                   "al.'s second instability), not attention. ";
            break;
        case SpikeKind::RunChange:  // decided by the timeline: writeProbeUnderCause
        case SpikeKind::Unknown:    // only ever read from a file, never diagnosed
            break;
    }
}

void writeTier(std::ostringstream& why, int tier, SpikeKind kind, double softcapC) {
    switch (tier) {
        case 1:
            why << "Tier 1: change nothing in attention; check the sampler, the data pipeline "
                   "and the loss. Do not touch QK-norm.";
            break;
        case 2:
            if (kind == SpikeKind::OutputLogits) {
                why << "Tier 2, in the LM head: add z-loss 1e-4 (optim.z_loss) or an output "
                       "softcap (model.output_softcap); QK-norm and the attention softcap do not "
                       "act there.";
                break;
            }
            why << softcapAdvice(softcapC);
            break;
        case 3:
            why << "Tier 3: turn on QK-norm (RMS, s = 1/sqrt(d_head)) and give it 1000 steps "
                   "before judging.";
            break;
        default:
            if (kind == SpikeKind::DataOrAccumulation)
                why << "Tier 4: spikes are too frequent for tier 1 and attention is not the "
                       "cause: after the data pipeline and the loss, look at init, LR, batch "
                       "size and schedule. Do not touch QK-norm.";
            else
                why << "Tier 4: still spiking with QK-norm on; look at init, LR, batch size and "
                       "schedule (a head bias initialised to 10 was once the cause).";
    }
}

}  // namespace

namespace {

// "The run changed just before this spike: <cause>. That is the likeliest cause." and the
// other causes in the window.
void writeCause(std::ostringstream& why, const RunChange& cause,
                const std::vector<RunChange>& changes) {
    why << "The run changed just before this spike: " << cause.text
        << ". That is the likeliest cause";
    bool first = true;
    for (const RunChange& c : changes)
        if (c.isCause() && &c != &cause) {
            why << (first ? "; also in the window: " : "; ") << c.text;
            first = false;
        }
    why << ". ";
}

// What the probe shows, when a change of the run is the cause: observations, no second cause.
void writeProbeUnderCause(std::ostringstream& why, const RunChange& cause, const SpikeEvidence& e) {
    if (e.logitJump)
        why << (e.normsRising ? "Logits jumped and q/k lengths rose with them after the change. "
                              : "Logits jumped while q/k norms stayed flat: the lengths did not "
                                "cause it, the change did. ");
    else if (e.level == LogitLevel::Intervene)
        why << "Logits are beyond the intervention line without a jump at this spike. ";
    else
        why << "Attention shows no jump and the logits are not beyond the intervention line. ";
    const bool normCause = cause.fuse == ChangedFuse::QkNorm;
    if (!normCause && e.level == LogitLevel::Intervene && e.normsGrownSinceStart)
        why << "Apart from this spike, q/k norms are " << fmt(e.qkNorm.value / e.firstQkNorm)
            << "x the run's first probe with logits beyond the intervention line: the Q/K "
               "lengths ran away earlier, which tier 3 (QK-norm) addresses. ";
}

// "An earlier change is still in force and moved the run: <its report>." Its effect may last
// long after the cause window (a removed softcap: loss +0.32 to the end of the run).
void writeChangesInForce(std::ostringstream& why, const DiagnosisContext& ctx) {
    for (const std::string& report : ctx.changesInForce)
        why << "An earlier change is still in force and moved the run: " << report << " ";
}

// The observed rate against the guide's tier-1 line (at most one spike per kRareSpikeSteps
// steps; a run shorter than that counts as that long, so its first spike is within it).
void writeFrequency(std::ostringstream& why, const SpikeEvidence& e, const DiagnosisContext& ctx) {
    const auto spikes = [](int n) { return std::to_string(n) + (n == 1 ? " spike" : " spikes"); };
    why << "Rate: " << spikes(ctx.spikesSoFar) << " in " << ctx.stepsSoFar << " steps so far";
    const double rareSteps = kRareSpikeSteps;
    if (e.rare && double(ctx.stepsSoFar) < rareSteps)
        why << ", in a run shorter than the guide's tier-1 window (at most one spike per "
            << fmt(rareSteps) << " steps): within it. ";
    else if (e.rare)
        why << ", one every " << std::llround(double(ctx.stepsSoFar) / ctx.spikesSoFar)
            << " steps: within the guide's tier-1 rate (at most one per " << fmt(rareSteps)
            << " steps). ";
    else
        why << ", about one every " << std::llround(double(ctx.stepsSoFar) / ctx.spikesSoFar)
            << " steps: more often than the guide's tier-1 rate (at most one per " << fmt(rareSteps)
            << " steps). ";
    bool first = true;  // events in the window that are not causes (an LR lowered, ...)
    for (const RunChange& c : ctx.changes)
        if (!c.isCause()) {
            why << (first ? "Also in the window: " : "; ") << c.text;
            first = false;
        }
    if (!first) why << ". ";
}

// The verdict and the advice, then a paragraph of evidence: a reader at a projector reads the
// first lines, so what to do comes before the numbers that show why.
std::string joinDiagnosis(const std::ostringstream& verdict, const std::ostringstream& evidence) {
    const auto trimmed = [](std::string t) {
        while (!t.empty() && t.back() == ' ') t.pop_back();
        return t;
    };
    const std::string v = trimmed(verdict.str()), e = trimmed(evidence.str());
    return e.empty() ? v : v + "\n\nEvidence: " + e;
}

}  // namespace

void diagnoseSpike(Spike& spike, const std::vector<ProbeSummary>& history,
                   const DiagnosisContext& given) {
    DiagnosisContext ctx = given;  // a weakened fuse that was not acting is no cause
    for (RunChange& c : ctx.changes) judgeFuse(c, fuseReading(history, c.step));
    const SpikeEvidence e = spikeEvidence(history, ctx);
    const RunChange* cause = likeliestCause(ctx.changes);
    std::ostringstream verdict, why;  // why: the evidence
    if (cause) writeCause(verdict, *cause, ctx.changes);
    if (history.empty()) {
        spike.kind = SpikeKind::DataOrAccumulation;
        spike.tier = 1;  // nothing says attention is involved: start with the data
        spike.probeStep = -1;
        verdict << "No attention probe was recorded before this spike, so logits and q/k norms "
                   "cannot be read. Turn probes on (probes.every) to diagnose. ";
        writeOutputLogits(why, e);
        if (e.outputJump) {
            spike.kind = SpikeKind::OutputLogits;
            spike.tier = 2;
            verdict << "The output logits jumped: output-logit divergence in the LM head is the "
                       "likelier cause. ";
        }
    } else {
        spike.kind = classify(e);
        spike.tier = tierOf(spike.kind, e, ctx.qkNormActive);
        spike.probeStep = e.probeStep;
        spike.probeMaxLogit = e.maxLogit.value;
        spike.baselineMaxLogit = e.maxLogit.baseline;
        spike.probeQkNorm = e.qkNorm.value;
        spike.baselineQkNorm = e.qkNorm.baseline;
        writeEvidence(why, e, spike.step);
        writeOutputLogits(why, e);
        if (cause)
            writeProbeUnderCause(why, *cause, e);
        else
            writeVerdict(verdict, spike.kind, e);
    }
    writeChangesInForce(why, ctx);
    writeFrequency(why, e, ctx);
    if (cause) {
        const CauseAdvice advice = adviceFor(*cause);
        spike.kind = advice.kind;
        spike.tier = advice.tier;
        verdict << advice.text;
    } else {
        writeTier(verdict, spike.tier, spike.kind, ctx.softcapC);
    }
    spike.diagnosis = joinDiagnosis(verdict, why);
}

}  // namespace qklab
