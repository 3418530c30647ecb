// spikes.cpp — rolling z-score spike detection and the domain brief's spike diagnosis.
#include "qklab/spikes.h"

#include <algorithm>
#include <cmath>
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
    std::ostringstream os;
    os.precision(3);
    os << v;
    return os.str();
}

}  // namespace

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

ProbeSummary summarizeProbes(int64_t step, const std::vector<ProbeStats>& rows) {
    ProbeSummary s;
    s.step = step;
    for (const auto& r : rows) {
        if (r.head != -1) continue;
        s.maxLogit = std::max(s.maxLogit, r.logitMaxRaw);
        s.p99Logit = std::max(s.p99Logit, r.logitP99Raw);
        // Raw projection norms: with QK-norm on, the normalised ones are constant by design,
        // while the runaway the diagnosis looks for happens in the projections.
        s.qkNorm = std::max({s.qkNorm, r.qRawNormP90, r.kRawNormP90});
    }
    return s;
}

void diagnoseSpike(Spike& spike, const std::vector<ProbeSummary>& history,
                   const DiagnosisContext& ctx) {
    if (history.empty()) {
        spike.kind = SpikeKind::DataOrAccumulation;
        spike.tier = 1;
        spike.probeStep = -1;
        spike.diagnosis =
            "No attention probe was recorded before this spike, so logits and q/k "
            "norms cannot be read. Turn probes on (probes.every) to diagnose.";
        return;
    }
    const ProbeSummary& cur = history.back();
    // Baseline: the median of up to 10 probes before the latest one (the latest alone if none).
    std::vector<double> maxes, norms;
    const size_t first = history.size() > 11 ? history.size() - 11 : 0;
    for (size_t i = first; i + 1 < history.size(); ++i) {
        maxes.push_back(history[i].maxLogit);
        norms.push_back(history[i].qkNorm);
    }
    const double baseMax = maxes.empty() ? cur.maxLogit : median(maxes);
    const double baseNorm = norms.empty() ? cur.qkNorm : median(norms);
    spike.probeStep = cur.step;
    spike.probeMaxLogit = cur.maxLogit;
    spike.baselineMaxLogit = baseMax;
    spike.probeQkNorm = cur.qkNorm;
    spike.baselineQkNorm = baseNorm;

    const bool logitJump = cur.maxLogit >= std::max(1.5 * baseMax, baseMax + 5.0);
    const bool logitsHigh = cur.maxLogit >= kHealthyMaxLogit || cur.p99Logit >= kHealthyP99Logit;
    const bool normsRising = baseNorm > 0 && cur.qkNorm >= 1.15 * baseNorm;
    // A run whose logits were already past the intervention line before this spike, with q/k
    // lengths grown several-fold since the run's first probe, ran away earlier: the spike is
    // a symptom of that runaway, not a one-off token spike.
    const double firstNorm = history.front().qkNorm;
    const bool chronicRunaway = history.size() > 1 && baseMax >= kInterveneMaxLogit &&
                                firstNorm > 0 && baseNorm >= 2.0 * firstNorm;

    std::ostringstream why;
    why << "Latest probe (step " << cur.step << "): max raw logit " << fmt(cur.maxLogit)
        << " (baseline " << fmt(baseMax) << "), p99 " << fmt(cur.p99Logit) << ", q/k norm p90 "
        << fmt(cur.qkNorm) << " (baseline " << fmt(baseNorm) << "). ";
    if ((logitsHigh || logitJump) && normsRising) {
        spike.kind = SpikeKind::QkRunaway;
        why << "Logits are large and q/k lengths grew with them: Q/K length runaway. ";
    } else if (chronicRunaway) {
        spike.kind = SpikeKind::QkRunaway;
        why << "Logits were already beyond " << fmt(kInterveneMaxLogit) << " before this spike and "
            << "q/k lengths are " << fmt(baseNorm / firstNorm) << "x their first probe (step "
            << history.front().step << "): the Q/K lengths ran away earlier. ";
    } else if (logitsHigh || logitJump) {
        spike.kind = SpikeKind::TokenSpike;
        why << "Logits jumped while q/k norms stayed flat: a sporadic token/position spike. ";
    } else {
        spike.kind = SpikeKind::DataOrAccumulation;
        why << "Logits and norms look normal: the cause is more likely the data or the loss/"
               "gradient accumulation than attention. ";
    }

    if (spike.kind == SpikeKind::DataOrAccumulation) {
        spike.tier = 1;
        why << "Tier 1: change nothing in attention; check the sampler, the data pipeline and "
               "the loss. Do not touch QK-norm.";
    } else if (ctx.qkNormActive) {
        spike.tier = 4;
        why << "Tier 4: still spiking with QK-norm on; look at init, LR, batch size and "
               "schedule (a head bias initialised to 10 was once the cause).";
    } else if (spike.kind == SpikeKind::TokenSpike) {
        spike.tier = 2;
        why << "Tier 2: add a tanh softcap with C = 50, watch 500 steps, then C = 30 and/or grad "
               "clip 1.0.";
    } else {
        spike.tier = 3;
        why << "Tier 3: turn on QK-norm (RMS, s = 1/sqrt(d_head)) and give it 1000 steps before "
               "judging.";
    }
    spike.diagnosis = why.str();
}

}  // namespace qklab
