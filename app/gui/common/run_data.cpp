// run_data.cpp — loading one run's series from the store, and small formatting helpers the
// panels share.
#include "common/run_data.h"

#include <QElapsedTimer>
#include <algorithm>
#include <cmath>

#include "common/gui_types.h"
#include "qklab/schedules.h"

namespace qklab::gui {

void registerGuiMetaTypes() {
    qRegisterMetaType<qklab::StepMetrics>();
    qRegisterMetaType<qklab::ProbeStats>();
    qRegisterMetaType<qklab::Spike>();
    qRegisterMetaType<qklab::EventRecord>();
    qRegisterMetaType<qklab::Event>();
    qRegisterMetaType<qklab::RunConfig>();
    qRegisterMetaType<LiveBatch>();
    qRegisterMetaType<RunRequest>();
    qRegisterMetaType<qklab::Callout>();
}

RunConfig configOfRun(const RunInfo& info) {
    try {
        if (!info.configJson.empty()) return configFromJsonText(info.configJson, "run");
    } catch (...) {
        // A run written by another version may carry keys this build does not know; the
        // plots still work from the stored rows, only the derived settings fall back.
    }
    return RunConfig{};
}

RunSnapshot loadRunSnapshot(RunStore& store, int64_t runId) {
    QElapsedTimer timer;
    timer.start();
    RunSnapshot s;
    s.runId = runId;
    s.info = store.run(runId);
    s.config = configOfRun(s.info);
    s.steps = store.stepMetrics(runId);
    s.probes = store.probeStats(runId, -1);
    s.spikes = store.spikes(runId);
    s.alarms = store.logitAlarms(runId);
    s.clips = store.qkClips(runId);
    s.events = store.events(runId);
    s.loadSeconds = timer.nsecsElapsed() / 1e9;
    return s;
}

QString formatNumber(double v) {
    if (!std::isfinite(v)) return QString::number(v);
    const double a = std::fabs(v);
    if (a != 0 && (a < 1e-2 || a >= 1e5)) return QString::number(v, 'e', 1);
    return QString::number(v, 'g', 4);
}

QString keySettings(const RunConfig& c) {
    QStringList parts;
    parts << QStringLiteral("qk_norm=%1").arg(QString::fromUtf8(nameOf(c.attention.qkNorm)));
    if (c.attention.qkNorm != QkNormVariant::None && c.attention.qkNormOn != QkNormTarget::QK)
        parts.back() +=
            QStringLiteral(" on %1").arg(QString::fromUtf8(nameOf(c.attention.qkNormOn)));
    if (c.attention.softcap.kind != SoftcapKind::None) {
        parts << QStringLiteral("softcap %1 C=%2")
                     .arg(QString::fromUtf8(nameOf(c.attention.softcap.kind)))
                     .arg(formatNumber(c.attention.softcap.c));
    }
    if (c.attention.qkClip.tau > 0)
        parts << QStringLiteral("qk_clip tau=%1").arg(formatNumber(c.attention.qkClip.tau));
    if (c.optim.zLoss > 0) parts << QStringLiteral("z_loss %1").arg(formatNumber(c.optim.zLoss));
    parts << QStringLiteral("lr %1").arg(formatNumber(c.optim.lr));
    if (c.anneal.qkNorm.start < c.anneal.qkNorm.end || c.anneal.qkNorm.start < 1.0) {
        parts << QStringLiteral("anneal %1-%2").arg(c.anneal.qkNorm.start).arg(c.anneal.qkNorm.end);
    }
    parts << QStringLiteral("%1L d%2 h%3")
                 .arg(c.model.nLayers)
                 .arg(c.model.dModel)
                 .arg(c.model.nHeads);
    if (c.attention.kind == AttentionKind::Mla)
        parts << QStringLiteral("MLA c%1 r%2").arg(c.attention.mla.dC).arg(c.attention.mla.dRope);
    for (const std::string& change : settingChanges(c)) parts << QString::fromStdString(change);
    return parts.join(QStringLiteral(", "));
}

}  // namespace qklab::gui
