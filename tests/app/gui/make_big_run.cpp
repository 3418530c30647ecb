// make_big_run.cpp — writes a synthetic 100k-step run (metrics every step, probes and
// histograms every 10 steps, 2 layers x 4 heads) with RunWriter, for the GUI responsiveness
// benchmark in docs/gui-benchmarks.md. Training that many steps for real would take hours;
// the GUI only cares about the row counts and shapes, which match a real run of that length.
//
//   make_big_run OUT.db [steps]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "qklab/config/run_config.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"

using namespace qklab;

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: make_big_run OUT.db [steps]\n");
        return 2;
    }
    const int64_t steps = argc > 2 ? std::atoll(argv[2]) : 100000;
    RunConfig c;
    c.schedule.steps = steps;
    c.probes.every = 10;
    NewRun nr;
    nr.name = "synthetic-" + std::to_string(steps);
    nr.configJson = configToJson(c).dump();
    nr.seed = c.run.seed;
    RunWriter w(argv[1], nr);
    std::mt19937 rng(1);
    std::normal_distribution<double> noise(0, 1);
    const int layers = int(c.model.nLayers), heads = int(c.model.nHeads),
              bins = int(c.probes.histBins);
    for (int64_t s = 0; s < steps; ++s) {
        const double t = double(s) / steps;
        StepMetrics m;
        m.step = s;
        m.loss = 2.0 + 3.0 * std::exp(-20 * t) + 0.05 * noise(rng);
        m.gradNorm = 0.5 + 0.1 * std::fabs(noise(rng));
        m.lr = 3e-3 * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * t)));
        m.alpha = 1;
        m.seqLen = c.model.seqLen;
        m.tokensPerSec = 20000;
        if (s % 1000 == 999) m.valLoss = m.loss + 0.05;
        w.addStep(m);
        if (s % c.probes.every == 0) {
            for (int l = 0; l < layers; ++l) {
                for (int h = -1; h < heads; ++h) {
                    ProbeStats p;
                    p.step = s;
                    p.layer = l;
                    p.head = h;
                    p.logitMaxRaw = 5 + 10 * t + std::fabs(noise(rng));
                    p.logitP99Raw = 3 + 5 * t;
                    p.logitMaxCapped = p.logitMaxRaw;
                    p.qRawNormP90 = p.qNormP90 = 8 + 4 * t;
                    p.kRawNormP90 = p.kNormP90 = 8 + 4 * t;
                    p.entropy = 3 - t;
                    w.addProbe(p);
                }
                LogitHistogram hist;
                hist.step = s;
                hist.layer = l;
                hist.head = -1;
                hist.counts.assign(bins, 0);
                for (int b = 0; b < bins; ++b) {
                    const double x = (b - bins / 2.0) / (4 + 8 * t);
                    hist.counts[b] = int64_t(60000 * std::exp(-x * x / 2));
                }
                w.addHistogram(hist);
            }
            if (s % 5000 == 0) w.flush();
        }
    }
    w.flush();
    w.finish(RunStatus::Finished);
    std::printf("wrote run %lld with %lld steps to %s\n", (long long)w.runId(), (long long)steps,
                argv[1]);
    return 0;
}
