// logit_alarms.cpp — the live logit alarms: a layer's raw logits past an intervention line,
// read against the run's changes and the layer's own q/k norm history.
#include <algorithm>
#include <sstream>

#include "qklab/analysis/spikes.h"

namespace qklab {
namespace {

std::string fmt(double v) {
    return diagnosisNumber(v);
}

// "q/k norm p90 24.8: 0.942x its median over the 10 probes before (26.3), 16.7x the layer's
// first probe (step 0, 1.48). " Under QK-norm the lengths are the normalised ones, named so,
// with the projections' beside them.
void writeNorms(std::ostringstream& t, const ProbeStats& row, const AlarmContext& ctx,
                const Change& recent) {
    const bool normed = ctx.qkNormActive;
    const double norm = alarmQkNorm(row, normed), first = alarmQkNorm(ctx.firstRow, normed);
    t << (normed ? "q/k norm p90 after QK-norm (its gains included) " : "q/k norm p90 ")
      << fmt(norm);
    if (!ctx.recentQkNorms.empty())
        t << ": " << fmt(recent.ratio) << "x its median over the " << ctx.recentQkNorms.size()
          << " probes before (" << fmt(recent.baseline) << ", z " << fmt(recent.z) << ")";
    t << (ctx.recentQkNorms.empty() ? ", " : "; ") << fmt(first > 0 ? norm / first : 1.0)
      << "x the layer's first probe (step " << ctx.firstRow.step << ", " << fmt(first) << ")";
    if (normed)
        t << "; out of the projections, before QK-norm: "
          << fmt(std::max(row.qRawNormP90, row.kRawNormP90));
    t << ". ";
}

// What the lengths' history says, in the words of the lengths read: the projections' without
// QK-norm; with it, the normalised q and k, which only QK-norm's gains (or its scale) change.
void writeLengths(std::ostringstream& t, bool relative, bool rising, bool grown, bool qkNorm) {
    const std::string growth = fmt(kChronicNormGrowth);
    if (qkNorm) {
        if (grown && !relative)
            t << "The normalised q/k lengths have grown " << growth << "x or more since the "
              << "layer's first probe: QK-norm's gains grew, and the logits with them. ";
        else if (rising)
            t << "The normalised q/k lengths are rising against the layer's recent probes: "
                 "QK-norm's gains are growing. ";
        else if (grown)
            t << "The normalised q/k lengths are flat over the recent probes but have grown "
              << growth << "x or more since the first: QK-norm's gains grew earlier. ";
        else
            t << "The normalised q/k lengths are neither rising nor grown " << growth
              << "x: QK-norm holds them, so the logits are high because q and k align, not "
                 "because they grew. ";
    } else if (grown && !relative) {  // too few probes to call them flat or rising
        t << "The q/k lengths have grown " << growth
          << "x or more since the layer's first probe: the logits grew with them. ";
    } else if (rising) {
        t << "The q/k lengths are rising against the layer's recent probes: a Q/K length "
             "runaway in progress. ";
    } else if (grown) {
        t << "The q/k lengths are flat over the recent probes but have grown " << growth
          << "x or more since the first: the logits are high because the lengths grew "
             "earlier. ";
    } else {
        t << "The q/k lengths are neither rising nor grown " << growth
          << "x: the logits are high with stable norms. ";
    }
}

// The verdict from the norms alone (no change of the run explains the alarm).
void writeNormVerdict(std::ostringstream& t, LogitAlarm& a, bool relative, bool rising, bool grown,
                      const AlarmContext& ctx) {
    a.kind = rising || grown ? SpikeKind::QkRunaway : SpikeKind::HighLogits;
    writeLengths(t, relative, rising, grown, ctx.qkNormActive);
    if (ctx.qkNormActive) {
        a.tier = 4;
        t << "Tier 4: QK-norm is on already; look at init, LR, batch size and schedule.";
    } else if (a.kind == SpikeKind::QkRunaway) {
        a.tier = 3;
        t << "Tier 3: turn on QK-norm (RMS, s = 1/sqrt(d_head)) and give it 1000 steps before "
             "judging.";
    } else {
        a.tier = 2;
        t << softcapAdvice(ctx.softcapC);
    }
}

// The fuse a change at `changeStep` weakened, read from this row and the layer's previous one.
FuseReading alarmFuseReading(const ProbeStats& row, const AlarmContext& ctx, int64_t changeStep) {
    FuseReading r;
    r.maxRawLogit = row.logitMaxRaw;
    const auto& prev = ctx.previousRow;
    if (prev && prev->step < changeStep) {
        r.maxRawLogit = std::max(r.maxRawLogit, prev->logitMaxRaw);
        r.fracAtCap = prev->fracAtCap;
        r.qkShrink = qkShrinkOf(*prev);
    }
    return r;
}

}  // namespace

double alarmQkNorm(const ProbeStats& row, bool qkNormActive) {
    return qkNormActive ? std::max(row.qNormP90, row.kNormP90)
                        : std::max(row.qRawNormP90, row.kRawNormP90);
}

const std::vector<LogitAlarmRule>& logitAlarmRules() {
    static const std::vector<LogitAlarmRule> rules{
        {"logit_max_raw", kInterveneMaxLogit, &ProbeStats::logitMaxRaw},
        {"logit_p99_raw", kInterveneP99Logit, &ProbeStats::logitP99Raw},
    };
    return rules;
}

LogitAlarm makeLogitAlarm(const LogitAlarmRule& rule, const ProbeStats& row,
                          const AlarmContext& ctx) {
    LogitAlarm a;
    a.step = row.step;
    a.layer = row.layer;
    a.metric = rule.column;
    a.value = row.*rule.field;
    a.threshold = rule.threshold;
    const double norm = alarmQkNorm(row, ctx.qkNormActive);
    const double first = alarmQkNorm(ctx.firstRow, ctx.qkNormActive);
    const Change recent = changeAgainst(norm, ctx.recentQkNorms);
    const bool relative = static_cast<int>(ctx.recentQkNorms.size()) >= kMinBaselineProbes;
    const bool rising = relative && recent.ratio >= kNormRiseRatio && recent.z >= kNormRiseZ;
    const bool grown = first > 0 && norm >= kChronicNormGrowth * first;
    std::ostringstream t;
    t << "Layer " << row.layer << ", step " << row.step << ": " << rule.column << " "
      << fmt(a.value) << " passed the intervention line (" << fmt(rule.threshold) << "); ";
    writeNorms(t, row, ctx, recent);
    std::vector<RunChange> changes = ctx.changes;
    for (RunChange& c : changes) judgeFuse(c, alarmFuseReading(row, ctx, c.step));
    if (const RunChange* cause = likeliestCause(changes)) {
        t << "The run changed just before: " << cause->text << ". That is the likeliest cause"
          << (rising ? ", while the q/k lengths also rose. "
                     : ", not a change in the q/k lengths. ");
        const CauseAdvice advice = adviceFor(*cause);
        a.kind = advice.kind;
        a.tier = advice.tier;
        t << advice.text;
    } else {
        writeNormVerdict(t, a, relative, rising, grown, ctx);
    }
    a.text = t.str();
    return a;
}

}  // namespace qklab
