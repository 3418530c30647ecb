// logit_alarms.cpp — the live logit alarms: a layer's raw logits past an intervention line,
// read against the run's changes and the layer's own q/k norm history.
#include <algorithm>
#include <sstream>

#include "qklab/spikes.h"

namespace qklab {
namespace {

std::string fmt(double v) {
    return diagnosisNumber(v);
}

double qkNormOf(const ProbeStats& row) {
    return std::max(row.qRawNormP90, row.kRawNormP90);
}

// "q/k norm p90 24.8: 0.942x its median over the 10 probes before (26.3), 16.7x the layer's
// first probe (step 0, 1.48). "
void writeNorms(std::ostringstream& t, const ProbeStats& row, const AlarmContext& ctx,
                const Change& recent) {
    const double norm = qkNormOf(row), first = qkNormOf(ctx.firstRow);
    t << "q/k norm p90 " << fmt(norm);
    if (!ctx.recentQkNorms.empty())
        t << ": " << fmt(recent.ratio) << "x its median over the " << ctx.recentQkNorms.size()
          << " probes before (" << fmt(recent.baseline) << ", z " << fmt(recent.z) << ")";
    t << (ctx.recentQkNorms.empty() ? ", " : "; ") << fmt(first > 0 ? norm / first : 1.0)
      << "x the layer's first probe (step " << ctx.firstRow.step << ", " << fmt(first) << "). ";
}

// The verdict from the norms alone (no change of the run explains the alarm).
void writeNormVerdict(std::ostringstream& t, LogitAlarm& a, bool relative, bool rising, bool grown,
                      bool qkNormActive) {
    if (grown && !relative) {  // too few probes to call them flat or rising
        a.kind = SpikeKind::QkRunaway;
        t << "The q/k lengths have grown " << fmt(kChronicNormGrowth)
          << "x or more since the layer's first probe: the logits grew with them. ";
    } else if (rising) {
        a.kind = SpikeKind::QkRunaway;
        t << "The q/k lengths are rising against the layer's recent probes: a Q/K length "
             "runaway in progress. ";
    } else if (grown) {
        a.kind = SpikeKind::QkRunaway;
        t << "The q/k lengths are flat over the recent probes but have grown "
          << fmt(kChronicNormGrowth) << "x or more since the first: the logits are high because "
          << "the lengths grew earlier. ";
    } else {
        a.kind = SpikeKind::HighLogits;
        t << "The q/k lengths are neither rising nor grown " << fmt(kChronicNormGrowth)
          << "x: the logits are high with stable norms. ";
    }
    if (qkNormActive) {
        a.tier = 4;
        t << "Tier 4: QK-norm is on already; look at init, LR, batch size and schedule.";
    } else if (a.kind == SpikeKind::QkRunaway) {
        a.tier = 3;
        t << "Tier 3: turn on QK-norm (RMS, s = 1/sqrt(d_head)) and give it 1000 steps before "
             "judging.";
    } else {
        a.tier = 2;
        t << "Tier 2: add a tanh softcap with C = 50, then C = 30 and/or grad clip 1.0.";
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
    const double norm = qkNormOf(row), first = qkNormOf(ctx.firstRow);
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
        writeNormVerdict(t, a, relative, rising, grown, ctx.qkNormActive);
    }
    a.text = t.str();
    return a;
}

}  // namespace qklab
