// run_data.cpp — loading one run's series from the store, and small formatting helpers the
// panels share.
#include "common/run_data.h"

#include <QElapsedTimer>
#include <QObject>
#include <algorithm>
#include <cmath>

#include "common/gui_types.h"
#include "qklab/config/schedules.h"
#include "qklab/store/run_export.h"
#include "qklab/util/error.h"

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
    s.changeReports = store.changeReports(runId);
    s.forecasts = store.forecasts(runId);
    s.customScalars = store.customScalars(runId);
    s.loadSeconds = timer.nsecsElapsed() / 1e9;
    return s;
}

QString formatNumber(double v) {
    if (!std::isfinite(v)) return QString::number(v);
    const double a = std::fabs(v);
    if (a != 0 && (a < 1e-2 || a >= 1e5)) return QString::number(v, 'e', 1);
    return QString::number(v, 'g', 4);
}

// keySettings() of a run trained outside qklab: only the keys it recorded.
QString externalKeySettings(const RunConfig& c, const std::set<std::string>& unknown) {
    const auto known = [&](const char* key) { return unknown.count(key) == 0; };
    QStringList parts;
    if (known("attention.qk_norm"))
        parts << QStringLiteral("qk_norm=%1").arg(QString::fromUtf8(nameOf(c.attention.qkNorm)));
    if (known("attention.softcap.kind") && c.attention.softcap.kind != SoftcapKind::None)
        parts << QStringLiteral("softcap %1 C=%2")
                     .arg(QString::fromUtf8(nameOf(c.attention.softcap.kind)))
                     .arg(formatNumber(c.attention.softcap.c));
    if (known("model.n_layers"))
        parts << QStringLiteral("%1L d%2 h%3")
                     .arg(c.model.nLayers)
                     .arg(c.model.dModel)
                     .arg(c.model.nHeads);
    if (known("attention.kind") && c.attention.kind == AttentionKind::Mla)
        parts << QStringLiteral("MLA c%1 r%2").arg(c.attention.mla.dC).arg(c.attention.mla.dRope);
    if (parts.isEmpty()) return QObject::tr("model not watched");
    return parts.join(QStringLiteral(", "));
}

QString keySettings(const RunConfig& c, bool external, const std::set<std::string>& unknown) {
    if (external) return externalKeySettings(c, unknown);
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
    if (c.attention.gate != AttentionGate::None)
        parts << QStringLiteral("gate %1").arg(QString::fromUtf8(nameOf(c.attention.gate)));
    if (c.attention.sigmaReparam != SigmaReparamScope::None)
        parts << QStringLiteral("sigma_reparam %1")
                     .arg(QString::fromUtf8(nameOf(c.attention.sigmaReparam)));
    if (c.optim.kind != OptimKind::AdamW)
        parts << QString::fromUtf8(nameOf(c.optim.kind));  // "muon"
    if (c.optim.quack) parts << QStringLiteral("quack");
    if (c.optim.outputCentring != OutputCentring::None)
        parts << QString::fromUtf8(nameOf(c.optim.outputCentring));  // "mu_centring"
    if (c.optim.zLoss > 0) parts << QStringLiteral("z_loss %1").arg(formatNumber(c.optim.zLoss));
    if (c.optim.skipStep != SkipStepPolicy::Off)
        parts << QStringLiteral("skip_step %1").arg(QString::fromUtf8(nameOf(c.optim.skipStep)));
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

QString outsideQklabReason(const RunInfo& info, const QString& action) {
    const std::string why = qklab::outsideQklabReason(info, action.toStdString());
    if (why.empty()) return {};
    QString text = QString::fromStdString(why);
    return text.left(1).toUpper() + text.mid(1) + QLatin1Char('.');
}

namespace {

// The user config as JSON, within the store's limits (a file's text may be anything); a
// discarded value when it is not JSON within them.
nlohmann::json userConfigOf(const RunInfo& info) {
    try {
        return parseUserConfig(info);
    } catch (const Error&) {
        return nlohmann::json(nlohmann::json::value_t::discarded);
    }
}

}  // namespace

QString userConfigText(const RunInfo& info) {
    if (info.userConfigJson.empty()) return {};
    const auto parsed = userConfigOf(info);
    if (parsed.is_discarded()) return QString::fromStdString(info.userConfigJson.substr(0, 2000));
    return QString::fromStdString(parsed.dump(2));
}

QString userConfigLine(const RunInfo& info, int maxChars) {
    if (info.userConfigJson.empty()) return {};
    const auto parsed = userConfigOf(info);
    QString line;
    if (parsed.is_object()) {
        QStringList pairs;
        for (const auto& [key, value] : parsed.items())
            pairs << QStringLiteral("%1=%2").arg(
                QString::fromStdString(key),
                QString::fromStdString(value.is_string() ? value.get<std::string>()
                                                         : value.dump()));
        line = pairs.join(QStringLiteral(", "));
    } else {
        line = QString::fromStdString(parsed.is_discarded() ? info.userConfigJson.substr(0, 2000)
                                                            : parsed.dump());
    }
    line.replace(QLatin1Char('\n'), QLatin1Char(' '));
    return line.size() > maxChars ? line.left(maxChars - 1) + QStringLiteral("…") : line;
}

}  // namespace qklab::gui
