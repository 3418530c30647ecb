// compare_data.cpp — loading a comparison and deriving its series.
#include "compare/compare_data.h"

#include <QElapsedTimer>
#include <QObject>
#include <QStringList>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "common/custom_scalar_points.h"
#include "common/plot_style.h"
#include "qklab/store/record_columns.h"
#include "qklab/store/run_export.h"
#include "qklab/util/error.h"

namespace qklab::gui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The column's value at every step; a step without one (no validation there) has no point.
Series stepSeries(const RunSnapshot& s, const RecordColumn<StepMetrics>& column) {
    Series out;
    for (const StepMetrics& row : s.steps) {
        const std::optional<double> v = numberOf(column.get(row));
        if (!v) continue;
        out.steps << double(row.step);
        out.values << (std::isfinite(*v) ? *v : kNaN);  // a diverged step is a gap, never +inf
    }
    return out;
}

// Layer rows of one probe metric; the worst layer per step when layer < 0.
Series probeSeries(const RunSnapshot& s, const CompareMetricInfo& info, double ProbeStats::*field,
                   int layer) {
    std::map<int64_t, double> byStep;
    for (const ProbeStats& p : s.probes) {
        if (p.head != -1 || (layer >= 0 && p.layer != layer)) continue;
        const double v = p.*field;
        auto [it, fresh] = byStep.emplace(p.step, v);
        if (!fresh)
            it->second = info.worstIsLowest ? std::min(it->second, v) : std::max(it->second, v);
    }
    Series out;
    for (const auto& [step, v] : byStep) {
        out.steps << double(step);
        out.values << (std::isfinite(v) ? v : kNaN);
    }
    return out;
}

}  // namespace

QString CompareRun::label() const {
    return QStringLiteral("%1 %2").arg(snap.runId).arg(QString::fromStdString(snap.info.name));
}

Comparison loadComparison(RunStore& store, const std::vector<int64_t>& runIds) {
    QElapsedTimer timer;
    timer.start();
    Comparison c;
    std::vector<ComparedConfig> configs;  // the user config too: seed groups and the diff
    for (int64_t id : runIds) {
        CompareRun r;
        try {
            r.snap = loadRunSnapshot(store, id);
        } catch (const Error& e) {
            if (e.code() != ErrorCode::NotFound) throw;
            c.missing.push_back(id);  // deleted by another process: a note, not a failure
            continue;
        }
        r.snap.config = configAsTrained(r.snap.info);
        // From the rows just read: summarizeRun(store, id) read the step and probe rows again,
        // 97 of the 220 ms that loading 10 x 20k-step runs took (compare_bench).
        r.summary =
            summarizeRun(r.snap.info, r.snap.config, r.snap.steps, r.snap.probes, r.snap.spikes);
        configs.emplace_back(r.snap.config, comparedUserConfig(r.snap.info),
                             unobservedConfigKeys(r.snap.info));
        c.runs.push_back(std::move(r));
    }
    c.diff = configDiff(configs);
    c.seedGroups = seedGroups(configs);
    c.loadSeconds = timer.nsecsElapsed() / 1e9;
    return c;
}

std::vector<CurveGroup> curveGroups(const Comparison& c, const QString& groupBy) {
    std::vector<CurveGroup> groups;
    if (groupBy.isEmpty()) return groups;
    if (groupBy != QLatin1String(kGroupBySeed)) {
        std::vector<ComparedConfig> configs;
        for (const CompareRun& r : c.runs)
            configs.emplace_back(r.snap.config, comparedUserConfig(r.snap.info),
                                 unobservedConfigKeys(r.snap.info));
        for (const RunGroup& g : groupByKey(configs, groupBy.toStdString()))
            groups.push_back({g.members, QString::fromStdString(g.label)});
        return groups;
    }
    for (const std::vector<size_t>& members : c.seedGroups) {
        QStringList names;
        for (size_t m : members) names << c.runs[m].label();
        const QString label = members.size() < 2 ? names.front()
                                                 : QObject::tr("%1 (%2 seeds)")
                                                       .arg(names.join(QStringLiteral(" + ")))
                                                       .arg(members.size());
        groups.push_back({members, label});
    }
    return groups;
}

QStringList groupByKeys(const Comparison& c) {
    QStringList keys;
    for (const ConfigDiffRow& row : c.diff)
        if (row.differs) keys << QString::fromStdString(row.key);
    return keys;
}

std::vector<ConfigDiffRow> outsideQklabRows(const Comparison& c) {
    bool any = false;
    for (const CompareRun& r : c.runs) any = any || trainedOutsideQklab(r.snap.info);
    if (!any) return {};
    ConfigDiffRow source{"source", {}, false}, user{"user config", {}, false};
    for (const CompareRun& r : c.runs) {
        source.values.push_back(r.snap.info.source);
        // One line, wrapped by the cell: indented JSON took a line per array element.
        user.values.push_back(userConfigLine(r.snap.info, 4000).toStdString());
    }
    for (size_t i = 1; i < c.runs.size(); ++i) {
        source.differs = source.differs || source.values[i] != source.values[0];
        user.differs = user.differs || user.values[i] != user.values[0];
    }
    return {source, user};
}

QColor curveColor(const std::vector<CurveGroup>& groups, size_t run) {
    for (const CurveGroup& g : groups)
        if (std::find(g.members.begin(), g.members.end(), run) != g.members.end())
            return compareColor(g.members.front());
    return compareColor(run);
}

const std::vector<CompareMetricInfo>& compareMetrics() {
    static const std::vector<CompareMetricInfo> metrics{
        {CompareMetric::TrainLoss, "train_loss", QObject::tr("Train loss"), "loss", false, false},
        {CompareMetric::ValLoss, "val_loss", QObject::tr("Validation loss"), "val_loss", false,
         false},
        {CompareMetric::MaxLogit, "max_logit_raw", QObject::tr("Max logit, raw"), "logit_max_raw",
         true, false},
        {CompareMetric::CappedMaxLogit, "max_logit_capped", QObject::tr("Max logit, capped"),
         "logit_max_capped", true, false},
        {CompareMetric::P99Logit, "p99_logit_raw", QObject::tr("p99 logit, raw"), "logit_p99_raw",
         true, false},
        {CompareMetric::QNorm, "q_norm_p90", QObject::tr("q norm p90 (raw)"), "q_raw_norm_p90",
         true, false},
        {CompareMetric::Entropy, "entropy", QObject::tr("Attention entropy (nats)"), "entropy",
         false, true},
        {CompareMetric::GradNorm, "grad_norm", QObject::tr("Gradient norm"), "grad_norm", true,
         false},
        {CompareMetric::Lr, "lr", QObject::tr("Learning rate"), "lr", false, false},
        {CompareMetric::Alpha, "alpha", QObject::tr("QK-norm alpha"), "alpha", false, false},
        {CompareMetric::SoftcapC, "softcap_c", QObject::tr("Softcap C (0 = off)"), "softcap_c",
         false, false},
        // Output-logit divergence (Wortsman et al.): log Z drifting from 0 without z-loss.
        {CompareMetric::LogZMean, "logz_mean", QObject::tr("Mean log Z (LM head)"), "logz_mean",
         false, false},
        // Gated attention's two numbers (Qiu et al.): the attention sink and the residual
        // stream's largest value, both highest in the worst layer.
        {CompareMetric::FirstTokenShare, "first_token_share", QObject::tr("First-token share"),
         "first_token_share", false, false},
        {CompareMetric::MaxActivation, "max_activation", QObject::tr("Largest activation"),
         "max_activation", true, false},
    };
    return metrics;
}

const CompareMetricInfo& compareMetricInfo(CompareMetric m) {
    for (const CompareMetricInfo& info : compareMetrics())
        if (info.metric == m) return info;
    return compareMetrics().front();
}

std::optional<CompareMetric> compareMetricFor(const QString& m) {
    for (const CompareMetricInfo& info : compareMetrics())
        if (m == QLatin1String(info.column)) return info.metric;
    if (m.startsWith(QLatin1String("q_")) || m.startsWith(QLatin1String("k_")))
        return CompareMetric::QNorm;
    if (m.startsWith(QLatin1String("logit_")) || m == QLatin1String("frac_at_cap"))
        return CompareMetric::MaxLogit;
    if (m == QLatin1String("logz_max") || m == QLatin1String("out_logit_max") ||
        m == QLatin1String("z_loss_term") || m == QLatin1String("mu_norm"))
        return CompareMetric::LogZMean;
    if (m == QLatin1String("update_norm")) return CompareMetric::GradNorm;
    return std::nullopt;
}

bool withoutQkNorm(const CompareRun& run) {
    if (run.snap.config.attention.qkNorm != QkNormVariant::None) return false;
    for (const EventRecord& e : run.snap.events)
        if (e.kind == "qk_norm") return false;
    return true;
}

Series seriesOf(const CompareRun& run, CompareMetric metric, int layer) {
    const CompareMetricInfo& info = compareMetricInfo(metric);
    if (const ProbeColumn* probe = findColumn(probeColumns(), info.column))
        return probeSeries(run.snap, info, probe->field, layer);
    return stepSeries(run.snap, stepMetricColumn(info.column));
}

QStringList customScalarNames(const Comparison& c) {
    std::set<QString> names;
    for (const CompareRun& run : c.runs)
        for (const CustomScalar& s : run.snap.customScalars)
            names.insert(QString::fromStdString(s.name));
    return QStringList(names.begin(), names.end());
}

Series customScalarSeries(const CompareRun& run, const QString& name) {
    const ScalarPoints p = customScalarPoints(run.snap.customScalars).value(name);
    return {p.steps, p.values};
}

QVector<double> smoothed(const QVector<double>& values, double weight) {
    if (weight <= 0) return values;
    QVector<double> out(values.size(), kNaN);
    double sum = 0, norm = 0;
    for (int i = 0; i < values.size(); ++i) {
        if (!std::isfinite(values[i])) continue;  // the gap stays; the average does not reset
        sum = weight * sum + (1 - weight) * values[i];
        norm = weight * norm + (1 - weight);
        out[i] = sum / norm;
    }
    return out;
}

// One walk over the members' sorted steps (a map of every step cost 65 ms for 11 metrics of
// 10 x 20k-step runs in compare_bench; the walk 10 ms).
BandSeries groupBand(const std::vector<Series>& members) {
    BandSeries band;
    if (members.empty()) return band;
    std::vector<int> at(members.size(), 0);
    auto ended = [&] {
        for (size_t m = 0; m < members.size(); ++m)
            if (at[m] >= members[m].steps.size()) return true;
        return false;
    };
    while (!ended()) {
        double step = members[0].steps[at[0]];
        for (size_t m = 1; m < members.size(); ++m) step = std::max(step, members[m].steps[at[m]]);
        bool aligned = true;
        for (size_t m = 0; m < members.size(); ++m) {
            while (at[m] < members[m].steps.size() && members[m].steps[at[m]] < step) ++at[m];
            aligned = aligned && at[m] < members[m].steps.size() && members[m].steps[at[m]] == step;
        }
        if (!aligned) continue;
        // A step some member lacks, or holds NaN at (a diverged step), is left out.
        double sum = 0, low = 0, high = 0;
        bool finite = true;
        for (size_t m = 0; m < members.size(); ++m) {
            const double v = members[m].values[at[m]++];
            finite = finite && std::isfinite(v);
            sum += v;
            low = m == 0 ? v : std::min(low, v);
            high = m == 0 ? v : std::max(high, v);
        }
        if (!finite) continue;
        band.steps << step;
        band.mean << sum / double(members.size());
        band.low << low;
        band.high << high;
    }
    return band;
}

BandEdges decimateBand(const QVector<double>& x, const QVector<double>& low,
                       const QVector<double>& high, double lower, double upper, int columns) {
    const int n = int(x.size());
    const int from = std::max(0, int(std::lower_bound(x.begin(), x.end(), lower) - x.begin()) - 1);
    const int to = std::min(n, int(std::upper_bound(x.begin(), x.end(), upper) - x.begin()) + 1);
    if (columns < 1 || !(upper > lower) || to - from <= 4 * columns) return {x, low, high};
    BandEdges out;
    out.x.reserve(4 * columns + 4);
    out.low.reserve(4 * columns + 4);
    out.high.reserve(4 * columns + 4);
    const double perColumn = (upper - lower) / columns;
    auto columnOf = [&](double v) {
        // The points kept outside the range get a column of their own on each side.
        return std::clamp(std::floor((v - lower) / perColumn), -1.0, double(columns));
    };
    for (int i = from; i < to;) {
        const double column = columnOf(x[i]);
        const int first = i;
        double lo = low[i], hi = high[i];
        for (++i; i < to && columnOf(x[i]) == column; ++i) {
            lo = std::min(lo, low[i]);
            hi = std::max(hi, high[i]);
        }
        const int last = i - 1;
        for (int at : {first, last}) {
            out.x << x[at];
            out.low << lo;
            out.high << hi;
            if (last == first) break;  // one point in this column
        }
    }
    return out;
}

namespace {

// A CSV header field: quoted when it holds a comma, a quote or a line break (a name read from
// someone else's file), its quotes doubled.
QString csvHeader(QString name) {
    if (!name.contains(QLatin1Char(',')) && !name.contains(QLatin1Char('"')) &&
        !name.contains(QLatin1Char('\n')) && !name.contains(QLatin1Char('\r')))
        return name;
    return QLatin1Char('"') + name.replace(QLatin1Char('"'), QStringLiteral("\"\"")) +
           QLatin1Char('"');
}

// The series' values as cells of the next column (`column`) of `rows`, by step.
void addCsvColumn(std::map<double, QStringList>& rows, int column, const Series& s) {
    for (int i = 0; i < s.steps.size(); ++i) {
        QStringList& cells = rows[s.steps[i]];
        while (cells.size() < column) cells << QString();
        cells << (std::isfinite(s.values[i]) ? QString::number(s.values[i], 'g', 9)
                                             : QStringLiteral("nan"));
    }
}

}  // namespace

QString comparisonCsv(const Comparison& c, int layer) {
    std::map<double, QStringList> rows;  // step -> cells
    QStringList header{QStringLiteral("step")};
    int column = 0;
    for (const CompareMetricInfo& info : compareMetrics())
        for (const CompareRun& run : c.runs) {
            header << csvHeader(
                QStringLiteral("%1:%2").arg(QString::fromLatin1(info.key), run.label()));
            addCsvColumn(rows, column++, seriesOf(run, info.metric, layer));
        }
    for (const QString& name : customScalarNames(c))
        for (const CompareRun& run : c.runs) {
            const Series s = customScalarSeries(run, name);
            if (s.steps.isEmpty()) continue;  // a run that never logged it
            header << csvHeader(QStringLiteral("custom:%1:%2").arg(name, run.label()));
            addCsvColumn(rows, column++, s);
        }
    QString out = header.join(QLatin1Char(',')) + QLatin1Char('\n');
    for (auto& [step, cells] : rows) {
        while (cells.size() < column) cells << QString();
        out += QString::number(qint64(step)) + QLatin1Char(',') + cells.join(QLatin1Char(',')) +
               QLatin1Char('\n');
    }
    return out;
}

}  // namespace qklab::gui
