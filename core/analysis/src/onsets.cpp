// onsets.cpp — the onsets of a stored run (qklab/analysis/onsets.h).
#include "qklab/analysis/onsets.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace qklab {
namespace {

// The first probed step where a row's raw max logit passes `line`: of that step's rows, the
// head row with the largest logit (the layer row when the run stored no head rows).
std::optional<Onset> maxLogitOnset(const std::vector<ProbeStats>& probes, double line) {
    std::optional<Onset> out;
    for (const ProbeStats& p : probes) {
        if (out && p.step != out->step) break;
        if (!(p.logitMaxRaw > line)) continue;
        const bool better = !out || (p.head >= 0 && out->head < 0) ||
                            ((p.head >= 0) == (out->head >= 0) && p.logitMaxRaw > out->value);
        if (better) out = Onset{p.step, OnsetKind::MaxLogit, p.layer, p.head, p.logitMaxRaw};
    }
    return out;
}

// The first non-finite loss, and the first loss and grad-norm spikes before it.
void stepOnsets(const std::vector<StepMetrics>& steps, const SpikeConfig& c,
                std::vector<Onset>& out) {
    RollingZScore lossZ(c.window, c.minHistory), gradZ(c.window, c.minHistory);
    bool lossSpike = false, gradSpike = false;
    for (const StepMetrics& m : steps) {
        if (!std::isfinite(m.loss)) {
            out.push_back({m.step, OnsetKind::Divergence, -1, -1, m.loss});
            return;  // nothing after a diverged step is read
        }
        const auto zl = lossZ.push(m.loss);
        const auto zg = gradZ.push(m.gradNorm);
        if (!lossSpike && zl && *zl > c.zThreshold) {
            lossSpike = true;
            out.push_back({m.step, OnsetKind::LossSpike, -1, -1, m.loss});
        }
        if (!gradSpike && zg && *zg > c.zThreshold) {
            gradSpike = true;
            out.push_back({m.step, OnsetKind::GradSpike, -1, -1, m.gradNorm});
        }
    }
}

}  // namespace

std::vector<Onset> onsetsOf(const std::vector<StepMetrics>& steps,
                            const std::vector<ProbeStats>& probes, const SpikeConfig& spikes,
                            double line) {
    std::vector<Onset> out;
    if (auto o = maxLogitOnset(probes, line)) out.push_back(*o);
    stepOnsets(steps, spikes, out);
    std::stable_sort(out.begin(), out.end(), [](const Onset& a, const Onset& b) {
        return std::tie(a.step, a.kind) < std::tie(b.step, b.kind);
    });
    return out;
}

std::optional<Onset> runOnset(const std::vector<StepMetrics>& steps,
                              const std::vector<ProbeStats>& probes, const SpikeConfig& spikes,
                              double line) {
    const std::vector<Onset> all = onsetsOf(steps, probes, spikes, line);
    if (all.empty()) return std::nullopt;
    return all.front();
}

}  // namespace qklab
