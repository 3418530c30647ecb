// lesson_test_util.h — a stored run with known rows for the lesson and replay tests, and the
// test lesson's path.
#pragma once

#include <QString>
#include <cmath>

#include "common/hist_bins.h"
#include "gui_test_util.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"

namespace qklab::gui::test {

// `steps` steps; step s took tokens/tokensPerSec = 4*32/(1280 * (1 + s % 2)) seconds (0.1 s
// on even steps, 0.05 s on odd ones); probes every 5 steps on two layers: layer 0's raw max
// logit is 1.5^(s/5) (crosses 30 between probes), layer 1's 2 (never); a user event at step
// 12, a spike at 40 and a logit alarm at the first probe past 30. With `maps`, a histogram
// (layer 0, all heads) and a 2x2 attention map (layer 0, head 0) every 10 steps.
inline int64_t writeKnownRun(const QString& db, const std::string& name, int steps = 100,
                             bool maps = false) {
    RunConfig c = tinyConfig(steps);
    c.model.nLayers = 2;
    NewRun nr;
    nr.name = name;
    nr.configJson = configToJson(c).dump();
    RunWriter w(db.toStdString(), nr);
    bool alarmed = false;
    for (int s = 0; s < steps; ++s) {
        StepMetrics m;
        m.step = s;
        m.loss = 5.0 - s / 100.0;
        m.gradNorm = 1.0;
        m.lr = 1e-3;
        m.seqLen = 32;
        m.tokensPerSec = 1280.0 * (1 + s % 2);
        w.addStep(m);
        if (maps && s % 10 == 0) {
            LogitHistogram h;
            h.step = s;
            h.counts.assign(size_t(histBinsOf(c.probes).count()), 1);
            w.addHistogram(h);
            AttentionMap map;
            map.step = s;
            map.size = 2;
            map.weights = {1, 0, 0.5f, 0.5f};
            w.addAttentionMap(map);
        }
        if (s % 5 != 0) continue;
        for (int layer = 0; layer < 2; ++layer) {
            ProbeStats p;
            p.step = s;
            p.layer = layer;
            p.head = -1;
            p.logitMaxRaw = layer == 0 ? std::pow(1.5, s / 5.0) : 2.0;
            p.logitMaxCapped = p.logitMaxRaw;
            p.entropy = 2.0;
            w.addProbe(p);
            if (layer == 0 && p.logitMaxRaw > 30 && !alarmed) {
                alarmed = true;
                LogitAlarm a;
                a.step = s;
                a.layer = 0;
                a.metric = "logit_max_raw";
                a.value = p.logitMaxRaw;
                a.threshold = 30;
                a.text = "raw max logit passed 30";
                w.addLogitAlarm(a);
            }
        }
    }
    w.addEvent({12, "qk_norm", R"({"variant":"rms"})", "user"});
    Spike sp;
    sp.step = std::min(40, steps - 1);
    sp.metric = "loss";
    sp.value = 6.0;
    sp.zScore = 5;
    sp.diagnosis = "test spike";
    w.addSpike(sp);
    w.finish(RunStatus::Finished);
    return w.runId();
}

inline QString testLessonPath() {
    return sourceDir() + QStringLiteral("/tests/app/gui/lesson_test.json");
}

}  // namespace qklab::gui::test
