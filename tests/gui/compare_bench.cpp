// compare_bench.cpp — times the comparison view (Compare tab) for docs/gui-benchmarks.md,
// "Comparison view". Not a test: a tool, like make_big_run.
//
// It writes a temporary database with RunWriter: 10 runs of 20,000 steps (5 with qk_norm
// none, 5 with rms, seeds 1-5 each; 2 of the "none" runs blow up and end in NaN losses),
// every one stored as the engine stores a default-config run: a metrics row per step, a
// validation loss every 200 steps, probes every 10 steps for 2 layers x (layer row + 4 head
// rows) and a 128-bin logit histogram per layer, a few loss and grad-norm spikes, a logit
// alarm where the raw max passes 30. Then it
// shows a ComparePanel at 1920x1080 and times, several times each:
//
//   open      loadComparison() (the pool-thread store read, with the RunStore it opens) plus
//             ComparePanel::setComparison() and the first replot(rpImmediateRefresh) of every
//             plot on the GUI thread; on a fresh panel and again on a panel that already
//             shows a comparison (a reload). Also the whole path of the app, setRuns() until
//             the curves and then the histogram tab are shown.
//   cursor    HoverCursor::hover(plot, point) across a sweep of x positions on every plot,
//             then the events it leaves (overlay repaint, tooltip): one GUI-thread frame.
//   smoothing ComparePanel::setSmoothing(0.6) and back to 0, setGroupSeeds(true) and back,
//             each with a replot(rpImmediateRefresh) of every plot.
//
// and the sub-steps where the time goes (seriesOf, QCPGraph::setData, replot per plot). It
// prints a table and one JSON line ("compare_bench {...}").
//
//   QT_QPA_PLATFORM=offscreen compare_bench [--runs N] [--steps N] [--reps N] [--sweep N]
//                                           [--db PATH] [--keep] [--theme light|dark]
//   xvfb-run -a -s "-screen 0 1920x1080x24" compare_bench ...
//
// --figure PATH also exports the panel as opened with ComparePanel::saveFigure (PNG or PDF).
// --db PATH reuses a database this tool wrote before (its first N runs) instead of writing a
// new one; --keep leaves the temporary database in place and prints its path.
// --profile store|replot|replot-thin|groups|hover runs one part alone, --reps times, and
// prints nothing else: for `perf record --call-graph dwarf compare_bench --profile replot`.
// replot-thin: the replot with the proposed 1 px aliased pens on graphs with more points than
// pixel columns.
#include <qcustomplot.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QScreen>
#include <QSettings>
#include <QTemporaryDir>
#include <QTimer>
#include <QWindow>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/plot_cursor.h"
#include "common/theme.h"
#include "compare/compare_data.h"
#include "compare/compare_histograms.h"
#include "compare/compare_panel.h"
#include "compare/compare_plots.h"
#include "qklab/run_config.h"
#include "qklab/run_store.h"
#include "qklab/run_writer.h"

using namespace qklab;
using namespace qklab::gui;

namespace {

double msSince(const QElapsedTimer& t) {
    return double(t.nsecsElapsed()) / 1e6;
}

struct Stats {
    double median = 0, p95 = 0, max = 0, min = 0;
    size_t n = 0;
};

// Nearest-rank percentiles.
Stats statsOf(std::vector<double> v) {
    Stats s;
    s.n = v.size();
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    auto rank = [&](double q) {
        const size_t i = size_t(std::ceil(q * double(v.size())));
        return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
    };
    s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    s.p95 = rank(0.95);
    s.max = v.back();
    s.min = v.front();
    return s;
}

QJsonObject toJson(const Stats& s) {
    return QJsonObject{
        {"median", s.median}, {"p95", s.p95}, {"max", s.max}, {"min", s.min}, {"n", double(s.n)}};
}

// ---------------------------------------------------------------------------------------
// The runs.

struct RunPlan {
    std::string name;
    QkNormVariant qkNorm;
    int64_t seed;
    bool diverge;
};

std::vector<RunPlan> plans(int runs) {
    std::vector<RunPlan> out;
    for (int i = 0; i < runs; ++i) {
        const bool rms = i >= (runs + 1) / 2;
        const int64_t seed = 1 + (rms ? i - (runs + 1) / 2 : i);
        // The last two seeds without QK-norm blow up (5 and 4 in the default 10).
        const bool diverge = !rms && seed > (runs + 1) / 2 - 2;
        out.push_back({std::string(rms ? "rms" : "none") + "-seed" + std::to_string(seed),
                       rms ? QkNormVariant::Rms : QkNormVariant::None, seed, diverge});
    }
    return out;
}

int64_t writeRun(const std::string& db, const RunPlan& plan, int64_t steps) {
    RunConfig c;  // the default model: 2 layers, 4 heads, d_model 128, T 128
    c.why = "compare_bench: synthetic run";
    c.schedule.steps = steps;
    c.schedule.warmupSteps = 500;
    c.probes.every = 10;
    c.eval.every = 200;
    c.run.seed = plan.seed;
    c.attention.qkNorm = plan.qkNorm;
    NewRun nr;
    nr.name = plan.name;
    nr.configJson = configToJson(c).dump();
    nr.seed = plan.seed;
    nr.device = "cpu";
    RunWriter w(db, nr);

    std::mt19937 rng(uint32_t(plan.seed * 7919 + (plan.qkNorm == QkNormVariant::Rms ? 17 : 0)));
    std::normal_distribution<double> noise(0, 1);
    const bool rms = plan.qkNorm == QkNormVariant::Rms;
    const int layers = int(c.model.nLayers), heads = int(c.model.nHeads),
              bins = int(c.probes.histBins);
    const double binWidth = (c.probes.histMax - c.probes.histMin) / bins;
    // Blow-up: logits grow from 80% of the run, the loss follows from 92%, and the last 20
    // steps are NaN (the engine stops at the first; a deferred readback batch reports more).
    const int64_t blowStart = int64_t(0.80 * double(steps)),
                  lossStart = int64_t(0.92 * double(steps)), nanFrom = steps - 20;
    auto blow = [&](int64_t s, int64_t from) {
        return plan.diverge && s >= from ? double(s - from) / double(steps - from) : 0.0;
    };
    // A few spikes at steps that depend on the seed.
    std::vector<int64_t> lossSpikes, gradSpikes;
    std::uniform_int_distribution<int64_t> at(steps / 20, steps - steps / 10);
    for (int i = 0; i < 3; ++i) lossSpikes.push_back(at(rng));
    for (int i = 0; i < 2; ++i) gradSpikes.push_back(at(rng));
    if (plan.diverge)
        for (int i = 0; i < 4; ++i) lossSpikes.push_back(lossStart + (nanFrom - lossStart) * i / 4);
    auto isIn = [](const std::vector<int64_t>& v, int64_t s) {
        return std::find(v.begin(), v.end(), s) != v.end();
    };
    const double seedShift = 0.02 * double(plan.seed % 3) + (rms ? 0.0 : 0.03);
    bool alarmed = false;

    for (int64_t s = 0; s < steps; ++s) {
        const double t = double(s) / double(steps);
        const double warm = std::min(1.0, double(s + 1) / double(c.schedule.warmupSteps));
        StepMetrics m;
        m.step = s;
        m.loss = 1.55 + seedShift + 3.9 * std::exp(-12 * t) + 0.35 * std::exp(-2 * t) +
                 0.04 * noise(rng) + 2.5 * std::pow(blow(s, lossStart), 2);
        m.gradNorm = (0.35 + 0.6 * std::exp(-30 * t)) * (1 + 0.25 * std::fabs(noise(rng))) +
                     8 * std::pow(blow(s, blowStart), 3);
        if (isIn(lossSpikes, s)) m.loss += 1.2 + 0.3 * std::fabs(noise(rng));
        if (isIn(gradSpikes, s)) m.gradNorm *= 12;
        if (plan.diverge && s >= nanFrom) m.loss = m.gradNorm = std::nan("");
        m.lr = c.optim.lr * warm *
               (0.1 + 0.9 * 0.5 *
                          (1 + std::cos(M_PI * std::max(0.0, double(s - 500)) /
                                        double(std::max<int64_t>(1, steps - 500)))));
        m.alpha = 1;
        m.seqLen = c.model.seqLen;
        m.tokensPerSec = 21000 * (1 + 0.03 * noise(rng));
        m.attentionPath = rms || s % c.probes.every ? "fused" : "explicit";
        if (s % c.eval.every == c.eval.every - 1)
            m.valLoss = std::isfinite(m.loss) ? m.loss + 0.06 + 0.01 * noise(rng) : m.loss;
        w.addStep(m);
        for (int64_t sp : lossSpikes)
            if (sp == s && std::isfinite(m.loss)) {
                Spike k;
                k.step = s;
                k.metric = "loss";
                k.value = m.loss;
                k.zScore = 6 + std::fabs(noise(rng));
                k.kind = plan.diverge && s >= lossStart ? SpikeKind::QkRunaway
                                                        : SpikeKind::DataOrAccumulation;
                k.tier = plan.diverge && s >= lossStart ? 3 : 1;
                k.probeStep = s - s % c.probes.every;
                k.diagnosis = "synthetic spike (compare_bench)";
                w.addSpike(k);
            }
        if (isIn(gradSpikes, s)) {
            Spike k;
            k.step = s;
            k.metric = "grad_norm";
            k.value = m.gradNorm;
            k.zScore = 7;
            k.diagnosis = "synthetic spike (compare_bench)";
            w.addSpike(k);
        }
        if (s % c.probes.every != 0) continue;
        // Probes: per head, then the layer row as the engine derives it (max of the maxima,
        // mean entropy, largest norms).
        for (int l = 0; l < layers; ++l) {
            ProbeStats layer;
            layer.step = s;
            layer.layer = l;
            layer.head = -1;
            layer.entropy = 0;
            std::vector<ProbeStats> rows;
            for (int h = 0; h < heads; ++h) {
                ProbeStats p;
                p.step = s;
                p.layer = l;
                p.head = h;
                const double growth = rms ? 3 * t : 14 * t + 0.5 * l;
                const double runaway = 250 * std::pow(blow(s, blowStart), 2) * (1 + 0.3 * h);
                p.logitMaxRaw = 6 + 0.4 * h + growth + runaway + 0.5 * std::fabs(noise(rng));
                p.logitP99Raw = 0.45 * p.logitMaxRaw;
                p.logitMeanRaw = 0.05 * noise(rng);
                p.logitMaxCapped = p.logitMaxRaw;
                p.logitP99Capped = p.logitP99Raw;
                p.logitMeanCapped = p.logitMeanRaw;
                p.qRawNormP90 = 7 + (rms ? 2 : 6) * t + 0.1 * h + runaway / 20;
                p.kRawNormP90 = p.qRawNormP90 * 0.95;
                p.qNormP90 = rms ? std::sqrt(double(c.model.dModel / heads)) : p.qRawNormP90;
                p.kNormP90 = rms ? p.qNormP90 : p.kRawNormP90;
                p.entropy = std::max(0.02, 3.4 - 0.9 * t - 0.1 * h - 3 * blow(s, blowStart));
                rows.push_back(p);
                layer.logitMaxRaw = std::max(layer.logitMaxRaw, p.logitMaxRaw);
                layer.logitP99Raw = std::max(layer.logitP99Raw, p.logitP99Raw);
                layer.logitMaxCapped = std::max(layer.logitMaxCapped, p.logitMaxCapped);
                layer.logitP99Capped = std::max(layer.logitP99Capped, p.logitP99Capped);
                layer.qRawNormP90 = std::max(layer.qRawNormP90, p.qRawNormP90);
                layer.kRawNormP90 = std::max(layer.kRawNormP90, p.kRawNormP90);
                layer.qNormP90 = std::max(layer.qNormP90, p.qNormP90);
                layer.kNormP90 = std::max(layer.kNormP90, p.kNormP90);
                layer.entropy += p.entropy / heads;
            }
            w.addProbe(layer);  // stored order: head -1 first, as ORDER BY head reads them
            for (const ProbeStats& p : rows) w.addProbe(p);
            // The layer's raw-logit histogram (head -1), as the engine stores it at every probe.
            LogitHistogram hist;
            hist.step = s;
            hist.layer = l;
            hist.head = -1;
            hist.counts.assign(size_t(bins), 0);
            const double width = 1.5 + layer.logitMaxRaw / 4;
            for (int b = 0; b < bins; ++b) {
                const double x = c.probes.histMin + (b + 0.5) * binWidth;
                hist.counts[size_t(b)] = int64_t(60000 * std::exp(-x * x / (2 * width * width)));
            }
            w.addHistogram(hist);
            if (!alarmed && layer.logitMaxRaw > 30) {
                LogitAlarm a;
                a.step = s;
                a.layer = l;
                a.metric = "logit_max_raw";
                a.value = layer.logitMaxRaw;
                a.threshold = 30;
                a.text = "synthetic alarm (compare_bench)";
                w.addLogitAlarm(a);
                alarmed = true;
            }
        }
        if (s % 500 == 0) w.flush();
    }
    w.flush();
    if (plan.diverge)
        w.finish(RunStatus::Diverged, "loss became nan at step " + std::to_string(nanFrom));
    else
        w.finish(RunStatus::Finished);
    return w.runId();
}

// ---------------------------------------------------------------------------------------
// The GUI side.

// Runs the event loop until nothing is left to do (queued replots, paints, the tooltip).
double drainEvents() {
    QElapsedTimer t;
    t.start();
    QCoreApplication::sendPostedEvents();
    QCoreApplication::processEvents(QEventLoop::AllEvents);
    QCoreApplication::sendPostedEvents();
    QCoreApplication::processEvents(QEventLoop::AllEvents);
    return msSince(t);
}

// Counts paint events of every plot, so the frames can be checked to include painting.
class PaintCounter : public QObject {
  public:
    int paints = 0;
    bool eventFilter(QObject* o, QEvent* e) override {
        if (e->type() == QEvent::Paint) ++paints;
        return QObject::eventFilter(o, e);
    }
};

struct Panel {
    PaintCounter counter;  // outlives the panel it watches
    std::unique_ptr<ComparePanel> panel;
    explicit Panel(int width, int height) : panel(std::make_unique<ComparePanel>()) {
        panel->resize(width, height);
        panel->show();
        QElapsedTimer t;
        t.start();
        while ((!panel->windowHandle() || !panel->windowHandle()->isExposed()) &&
               t.elapsed() < 3000)
            QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        drainEvents();
        for (QCustomPlot* p : panel->plots()->plots()) p->installEventFilter(&counter);
    }
    ComparePlots* plots() const { return panel->plots(); }
};

// Replots every plot at once (rpImmediateRefresh: rendered and painted); per-plot times.
double replotAll(ComparePlots* plots, std::vector<double>* perPlot = nullptr) {
    QElapsedTimer all;
    all.start();
    for (QCustomPlot* p : plots->plots()) {
        QElapsedTimer t;
        t.start();
        p->replot(QCustomPlot::rpImmediateRefresh);
        if (perPlot) perPlot->push_back(msSince(t));
    }
    return msSince(all);
}

// The proposals, tried on the bench's own panel (the app's code is unchanged): dense graphs
// get a 1 px cosmetic pen (QPainter's fast stroker instead of stroking the polyline as a
// polygon), optionally aliased as the live plots already do. Dense: at least `minPoints`
// points (the live plots use 4000), or with minPoints 0 more points than the axis rect has
// pixel columns.
void thinDensePens(ComparePlots* plots, bool aliased, int minPoints) {
    for (QCustomPlot* p : plots->plots()) {
        const int dense = minPoints > 0 ? minPoints : p->axisRect()->width() + 1;
        for (int i = 0; i < p->graphCount(); ++i) {
            QCPGraph* g = p->graph(i);
            if (g->dataCount() < dense) continue;
            QPen pen = g->pen();
            if (pen.style() != Qt::NoPen) pen.setWidthF(0);
            g->setPen(pen);
            if (aliased) g->setAntialiased(false);
            if (aliased) g->setAntialiasedFill(false);
        }
    }
}

// ... and data decimated to the axis rect's pixel columns (graphs with over 4 points per
// column): per column the first and last
// point, the lowest and the highest (spikes survive) and a NaN where the column has one (a
// divergence gap stays a gap), in key order.
void decimateDense(ComparePlots* plots) {
    for (QCustomPlot* p : plots->plots()) {
        const int pixels = std::max(1, p->axisRect()->width());
        for (int i = 0; i < p->graphCount(); ++i) {
            QCPGraph* g = p->graph(i);
            if (g->dataCount() < 4 * pixels) continue;  // fewer: nothing to gain
            const QCPRange r = g->keyAxis()->range();
            const double perPixel = r.size() / pixels;
            QVector<QCPGraphData> out;
            auto column = [&](double key) { return std::floor((key - r.lower) / perPixel); };
            auto it = g->data()->constBegin();
            const auto end = g->data()->constEnd();
            while (it != end) {
                const double col = column(it->key);
                QCPGraphDataContainer::const_iterator first = it, last = it, lo = end, hi = end,
                                                      gap = end;
                for (; it != end && column(it->key) == col; ++it) {
                    if (!std::isfinite(it->value)) {
                        if (gap == end) gap = it;
                        continue;
                    }
                    if (lo == end || it->value < lo->value) lo = it;
                    if (hi == end || it->value > hi->value) hi = it;
                    last = it;
                }
                std::vector<QCPGraphDataContainer::const_iterator> keep{first, last};
                for (auto k : {lo, hi, gap})
                    if (k != end) keep.push_back(k);
                std::sort(keep.begin(), keep.end());
                keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
                for (auto k : keep) out.push_back(*k);
            }
            g->data()->set(out, true);
        }
    }
}

// groupBand's result by one merge over the members' series, which are sorted by step: the
// proposal for seed groups (groupBand builds a std::map of vectors, one node per step).
BandSeries mergedBand(const std::vector<Series>& members) {
    BandSeries band;
    if (members.empty()) return band;
    std::vector<int> at(members.size(), 0);
    const double inf = std::numeric_limits<double>::infinity();
    for (;;) {
        double step = inf;  // the smallest step still to come with a finite value
        for (size_t m = 0; m < members.size(); ++m) {
            const Series& s = members[m];
            while (at[m] < s.steps.size() && !std::isfinite(s.values[at[m]])) ++at[m];
            if (at[m] < s.steps.size()) step = std::min(step, s.steps[at[m]]);
        }
        if (step == inf) break;
        double sum = 0, lo = inf, hi = -inf;
        size_t have = 0;
        for (size_t m = 0; m < members.size(); ++m) {
            const Series& s = members[m];
            if (at[m] < s.steps.size() && s.steps[at[m]] == step) {
                const double v = s.values[at[m]++];
                sum += v;
                lo = std::min(lo, v);
                hi = std::max(hi, v);
                ++have;
            }
        }
        if (have != members.size()) continue;  // a step some member lacks
        band.steps << step;
        band.mean << sum / double(have);
        band.low << lo;
        band.high << hi;
    }
    return band;
}

struct Row {
    QString what;
    Stats stats;
    QString statName;   // which statistic is compared with the target
    double target = 0;  // ms; 0 = information only
    double value() const {
        return statName == "max" ? stats.max : statName == "p95" ? stats.p95 : stats.median;
    }
};

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("qklab-compare-bench"));
    QTemporaryDir dir;
    // applyTheme() remembers the theme in QSettings: keep that out of the user's settings.
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.path());

    int runs = 10, reps = 5, sweep = 48;
    int64_t steps = 20000;
    QString dbArg, theme = QStringLiteral("light");
    bool keep = false;
    QString screenshot;  // PNG of the panel as opened, to check what was timed
    QString figure;      // the exported figure (PNG or PDF by suffix) of the panel as opened
    QString profile;     // only this part, reps times, for perf (see the top of the file)
    const QStringList args = app.arguments();
    for (int i = 1; i < args.size(); ++i) {
        const QString& a = args[i];
        auto value = [&] { return args.value(++i); };
        if (a == "--runs") {
            runs = value().toInt();
        } else if (a == "--steps") {
            steps = value().toLongLong();
        } else if (a == "--reps") {
            reps = value().toInt();
        } else if (a == "--sweep") {
            sweep = value().toInt();
        } else if (a == "--db") {
            dbArg = value();
        } else if (a == "--theme") {
            theme = value();
        } else if (a == "--profile") {
            profile = value();
        } else if (a == "--screenshot") {
            screenshot = value();
        } else if (a == "--figure") {
            figure = value();
        } else if (a == "--keep") {
            keep = true;
        } else {
            std::fprintf(stderr,
                         "usage: compare_bench [--runs 2-12] [--steps N] [--reps N] [--sweep N] "
                         "[--db PATH] [--keep] [--theme light|dark] "
                         "[--profile store|replot|replot-thin|groups|hover] [--screenshot PNG] "
                         "[--figure PNG|PDF]\n");
            return 2;
        }
    }
    runs = std::clamp(runs, 2, ComparePanel::kMaxRuns);
    reps = std::max(1, reps);
    sweep = std::max(2, sweep);

    QFile style(QStringLiteral(":/qklab/qklab.qss"));  // the app's look, as main.cpp sets it
    if (style.open(QIODevice::ReadOnly)) setBaseStyleSheet(QString::fromUtf8(style.readAll()));
    applyTheme(theme == "dark" ? Theme::Dark : Theme::Light);

    // --- The database --------------------------------------------------------------------
    std::string db;
    std::vector<int64_t> ids;
    double writeSeconds = 0;
    if (!dbArg.isEmpty()) {
        db = dbArg.toStdString();
        RunStore store(db, StoreAccess::ReadOnly);
        for (const RunInfo& r : store.listRuns())
            if (int(ids.size()) < runs) ids.push_back(r.id);
        std::sort(ids.begin(), ids.end());
    } else {
        if (keep) dir.setAutoRemove(false);
        db = dir.filePath(QStringLiteral("compare-bench.db")).toStdString();
        QElapsedTimer t;
        t.start();
        for (const RunPlan& p : plans(runs)) ids.push_back(writeRun(db, p, steps));
        writeSeconds = msSince(t) / 1000;
    }
    const double dbMiB = double(QFileInfo(QString::fromStdString(db)).size()) / (1 << 20);
    std::printf("database %s: %d runs x %lld steps, %.1f MiB%s\n", db.c_str(), int(ids.size()),
                (long long)steps, dbMiB,
                writeSeconds > 0
                    ? qPrintable(QStringLiteral(", written in %1 s").arg(writeSeconds, 0, 'f', 1))
                    : "");
    std::fflush(stdout);

    // --- Profiling: one part alone, reps times (perf record -g compare_bench --profile ...) ---
    if (!profile.isEmpty()) {
        QElapsedTimer t;
        t.start();
        if (profile == "store") {
            for (int r = 0; r < reps; ++r) {
                RunStore store(db, StoreAccess::ReadOnly);
                loadComparison(store, ids);
            }
        } else {
            RunStore store(db, StoreAccess::ReadOnly);
            Panel p(1920, 1080);
            p.panel->setComparison(loadComparison(store, ids));
            if (profile == "groups") p.panel->setGroupSeeds(true);
            if (profile == "replot-thin") thinDensePens(p.plots(), true, 0);
            replotAll(p.plots());
            drainEvents();
            t.restart();
            for (int r = 0; r < reps; ++r)
                for (QCustomPlot* plot : p.plots()->plots()) {
                    if (profile != "hover") {
                        plot->replot(QCustomPlot::rpImmediateRefresh);
                        continue;
                    }
                    const QRect rect = plot->axisRect()->rect();
                    for (int i = 0; i < sweep; ++i) {
                        p.plots()->hoverCursor()->hover(
                            plot, QPoint(rect.left() + 1 + (rect.width() - 3) * i / (sweep - 1),
                                         rect.center().y()));
                        drainEvents();
                    }
                }
        }
        std::printf("profile %s: %d x in %.1f ms\n", qPrintable(profile), reps, msSince(t));
        return 0;
    }

    // --- Store read (the pool thread's part) ----------------------------------------------
    std::vector<double> openStore, load, readTotal;
    Comparison loaded;
    for (int r = 0; r < reps + 1; ++r) {  // the first read warms SQLite's and the OS's caches
        QElapsedTimer t;
        t.start();
        RunStore store(db, StoreAccess::ReadOnly);  // readStoreAsync opens one per job
        const double opened = msSince(t);
        QElapsedTimer l;
        l.start();
        Comparison c = loadComparison(store, ids);
        const double loadMs = msSince(l);
        if (r == 0) {
            loaded = std::move(c);
            continue;
        }
        openStore.push_back(opened);
        load.push_back(loadMs);
        readTotal.push_back(msSince(t));
    }
    size_t stepRows = 0, probeRows = 0, spikes = 0;
    for (const CompareRun& run : loaded.runs) {
        stepRows += run.snap.steps.size();
        probeRows += run.snap.probes.size();
        spikes += run.snap.spikes.size();
    }
    // Inside loadComparison, per run: the snapshot's queries, then the summary from the rows
    // they returned (summarizeRun(store, id), the CLI's, would read them a second time).
    std::map<QString, std::vector<double>> readParts;
    for (int r = 0; r < reps; ++r) {
        RunStore store(db, StoreAccess::ReadOnly);
        std::map<QString, double> sum;
        for (int64_t id : ids) {
            QElapsedTimer t;
            t.restart();
            const RunInfo info = store.run(id);
            sum["run info"] += msSince(t);
            t.restart();
            const auto steps = store.stepMetrics(id);
            sum["stepMetrics"] += msSince(t);
            t.restart();
            const auto probes = store.probeStats(id, -1);
            sum["probeStats(head -1)"] += msSince(t);
            t.restart();
            const auto spikes = store.spikes(id);
            store.logitAlarms(id);
            store.events(id);
            sum["spikes+alarms+events"] += msSince(t);
            t.restart();
            summarizeRun(info, configAsTrained(info), steps, probes, spikes);
            sum["summarizeRun from those rows"] += msSince(t);
        }
        for (const auto& [k, v] : sum) readParts[k].push_back(v);
    }

    const QSize screen =
        QGuiApplication::primaryScreen() ? QGuiApplication::primaryScreen()->size() : QSize();
    const int width = 1920, height = 1080;

    // --- Opening: setComparison + the first replot of every plot --------------------------
    std::vector<double> setFresh, replotFresh, drainFresh, setReload, replotReload, drainReload,
        setAppLike, drainAppLike, firstHover, redrawMs;
    std::vector<double> perPlotReplot;
    for (int r = 0; r < reps; ++r) {
        Panel p(width, height);
        Comparison copy = loaded;  // setComparison takes it by value: copy outside the timer
        QElapsedTimer t;
        t.start();
        p.panel->setComparison(std::move(copy));
        setFresh.push_back(msSince(t));
        redrawMs.push_back(p.plots()->lastRedrawMs());
        std::vector<double> per;
        replotFresh.push_back(replotAll(p.plots(), &per));
        perPlotReplot.insert(perPlotReplot.end(), per.begin(), per.end());
        drainFresh.push_back(drainEvents());  // in the bench: the queued replots again
        // The first hover after opening creates the cursor line on every plot.
        QCustomPlot* loss = p.plots()->plots().front();
        QElapsedTimer h;
        h.start();
        p.plots()->hoverCursor()->hover(loss, loss->axisRect()->center());
        drainEvents();
        firstHover.push_back(msSince(h));
        // A reload (live runs reload every 2 s; Compare pressed again): the panel already
        // shows a comparison.
        copy = loaded;
        t.restart();
        p.panel->setComparison(std::move(copy));
        setReload.push_back(msSince(t));
        replotReload.push_back(replotAll(p.plots()));
        drainReload.push_back(drainEvents());
    }
    // As the app does it: no explicit replot, the queued replots run in the event loop.
    // Here the cursor lines exist before the comparison is shown (a hover and hide on the
    // empty plots), as if HoverCursor::addPlot created them: the first hover then redraws the
    // overlay layer only.
    std::vector<double> firstHoverPrecreated;
    for (int r = 0; r < reps; ++r) {
        Panel p(width, height);
        for (QCustomPlot* plot : p.plots()->plots())
            p.plots()->hoverCursor()->hover(plot, plot->axisRect()->center());
        p.plots()->hoverCursor()->hide();
        drainEvents();
        Comparison copy = loaded;
        QElapsedTimer t;
        t.start();
        p.panel->setComparison(std::move(copy));
        setAppLike.push_back(msSince(t));
        drainAppLike.push_back(drainEvents());
        QCustomPlot* loss = p.plots()->plots().front();
        QElapsedTimer h;
        h.start();
        p.plots()->hoverCursor()->hover(loss, loss->axisRect()->center());
        drainEvents();
        firstHoverPrecreated.push_back(msSince(h));
    }

    // The whole path, as the Compare button takes it: setRuns() reads on a pool thread, then
    // setComparison() on the GUI thread; the histogram tab then reads its layer's histograms
    // on a pool thread and draws them.
    std::vector<double> viaRunsCurves, viaRunsHistograms;
    for (int r = 0; r < reps; ++r) {
        Panel p(width, height);
        bool curves = false, histograms = false;
        QEventLoop wait;
        QObject::connect(p.panel.get(), &ComparePanel::loaded, &wait, [&] {
            curves = true;
            wait.quit();
        });
        QObject::connect(p.panel->histograms(), &CompareHistograms::loadedLayer, &wait, [&] {
            histograms = true;
            wait.quit();
        });
        QTimer::singleShot(60000, &wait, &QEventLoop::quit);
        QElapsedTimer t;
        t.start();
        p.panel->setRuns(QString::fromStdString(db), ids);
        if (!curves) wait.exec();
        drainEvents();  // the queued replots: the curves are on screen
        viaRunsCurves.push_back(msSince(t));
        if (!histograms) wait.exec();
        drainEvents();
        viaRunsHistograms.push_back(msSince(t));
    }

    // --- The rest on one panel ------------------------------------------------------------
    Panel p(width, height);
    p.panel->setComparison(loaded);
    replotAll(p.plots());
    drainEvents();
    if (!screenshot.isEmpty()) p.panel->grab().save(screenshot);
    if (!figure.isEmpty()) {  // once, not timed as a target: an export is a user's wait
        QElapsedTimer t;
        t.start();
        QString error;
        const bool ok = p.panel->saveFigure(figure, &error);
        std::printf("figure %s: %s in %.0f ms, %.0f KiB\n", qPrintable(figure),
                    ok ? "written" : qPrintable(error), msSince(t),
                    double(QFileInfo(figure).size()) / 1024);
    }
    const QList<QCustomPlot*> plots = p.plots()->plots();
    size_t graphs = 0, points = 0;
    for (QCustomPlot* plot : plots)
        for (int g = 0; g < plot->graphCount(); ++g) {
            ++graphs;
            points += size_t(plot->graph(g)->dataCount());
        }

    // Cursor sweep: every plot, `sweep` x positions across its axis rect, reps times.
    auto sweepAll = [&](std::vector<double>& hoverOnly, std::vector<double>& frame,
                        std::vector<double>* textChars, int* emptyTexts) {
        for (int r = 0; r < reps; ++r)
            for (QCustomPlot* plot : plots) {
                const QRect rect = plot->axisRect()->rect();
                for (int i = 0; i < sweep; ++i) {
                    const QPoint pos(rect.left() + 1 + (rect.width() - 3) * i / (sweep - 1),
                                     rect.center().y());
                    QElapsedTimer t;
                    t.start();
                    p.plots()->hoverCursor()->hover(plot, pos);
                    const double h = msSince(t);
                    drainEvents();
                    hoverOnly.push_back(h);
                    frame.push_back(msSince(t));
                    const QString text = p.plots()->hoverCursor()->lastText();
                    if (textChars) textChars->push_back(text.size());
                    if (emptyTexts && text.isEmpty()) ++*emptyTexts;
                }
            }
        p.plots()->hoverCursor()->hide();
        drainEvents();
    };
    // The first hover creates the cursor lines (timed above as "first hover after opening");
    // the sweep times the moves after it.
    p.plots()->hoverCursor()->hover(plots.front(), plots.front()->axisRect()->center());
    drainEvents();
    std::vector<double> hoverOnly, hoverFrame, textChars;
    int emptyTexts = 0;
    const int paintsBefore = p.counter.paints;
    sweepAll(hoverOnly, hoverFrame, &textChars, &emptyTexts);
    const int sweepPaints = p.counter.paints - paintsBefore;

    // Smoothing and seed groups.
    std::vector<double> smoothOn, smoothOff, groupsOn, groupsOff, smoothDrain, redrawSmooth,
        redrawGroups;
    for (int r = 0; r < reps; ++r) {
        QElapsedTimer t;
        t.start();
        p.panel->setSmoothing(0.6);
        redrawSmooth.push_back(p.plots()->lastRedrawMs());
        replotAll(p.plots());
        smoothOn.push_back(msSince(t));
        smoothDrain.push_back(drainEvents());
        t.restart();
        p.panel->setSmoothing(0);
        replotAll(p.plots());
        smoothOff.push_back(msSince(t));
        smoothDrain.push_back(drainEvents());
        t.restart();
        p.panel->setGroupSeeds(true);
        redrawGroups.push_back(p.plots()->lastRedrawMs());
        replotAll(p.plots());
        groupsOn.push_back(msSince(t));
        smoothDrain.push_back(drainEvents());
        t.restart();
        p.panel->setGroupSeeds(false);
        replotAll(p.plots());
        groupsOff.push_back(msSince(t));
        smoothDrain.push_back(drainEvents());
    }
    // The cursor again with everything drawn: smoothing 0.6 and seed groups on.
    p.panel->setSmoothing(0.6);
    p.panel->setGroupSeeds(true);
    replotAll(p.plots());
    drainEvents();
    std::vector<double> hoverOnlyBusy, hoverFrameBusy;
    sweepAll(hoverOnlyBusy, hoverFrameBusy, nullptr, nullptr);
    p.panel->setGroupSeeds(false);
    p.panel->setSmoothing(0);
    drainEvents();

    // --- What the proposals would save (tried on this panel's graphs only) -----------------
    // Each: redraw as the app does, change the graphs, then time replot(rpImmediateRefresh)
    // of every plot.
    struct WhatIf {
        const char* name;
        bool groups;
        std::function<void()> change;
        std::vector<double> ms;
        double smoothing = 0;
    };
    auto thin = [&](bool aliased, int minPoints) {
        return [&p, aliased, minPoints] { thinDensePens(p.plots(), aliased, minPoints); };
    };
    auto thinAndDecimate = [&p] {
        thinDensePens(p.plots(), true, 0);  // first: decimated graphs are no longer dense
        decimateDense(p.plots());
    };
    std::vector<WhatIf> whatIfs{
        {"as drawn now", false, [] {}, {}},
        {">= 4000 points: 1 px pen, antialiased", false, thin(false, 4000), {}},
        {">= 4000 points: 1 px pen, aliased (live plots' rule)", false, thin(true, 4000), {}},
        {"> 1 point per pixel column: 1 px pen, antialiased", false, thin(false, 0), {}},
        {"> 1 point per pixel column: 1 px pen, aliased", false, thin(true, 0), {}},
        {"decimated to per-pixel first/min/max/last, pens as now",
         false,
         [&p] { decimateDense(p.plots()); },
         {}},
        {"decimated + 1 px aliased pen (> 1 point per pixel)", false, thinAndDecimate, {}},
        {"smoothing 0.6: as drawn now", false, [] {}, {}, 0.6},
        {"smoothing 0.6: 1 px aliased pen (> 1 point per pixel)", false, thin(true, 0), {}, 0.6},
        {"seed groups: as drawn now", true, [] {}, {}},
        {"seed groups: 1 px aliased pen and fill (> 1 point per pixel)", true, thin(true, 0), {}},
        {"seed groups: decimated + 1 px aliased pen and fill", true, thinAndDecimate, {}},
    };
    for (int r = 0; r < reps; ++r)
        for (WhatIf& w : whatIfs) {
            p.panel->setGroupSeeds(w.groups);
            p.panel->setSmoothing(w.smoothing);
            p.plots()->redraw();
            w.change();
            w.ms.push_back(replotAll(p.plots()));
            drainEvents();
        }
    p.panel->setGroupSeeds(false);
    p.panel->setSmoothing(0);
    p.plots()->redraw();
    replotAll(p.plots());
    drainEvents();

    // --- Where the GUI-thread time goes ---------------------------------------------------
    std::vector<double> seriesMs, setDataMs, rescaleMs, smoothedMs, groupBandMs, mergedBandMs;
    bool bandsAgree = true;
    {
        QCustomPlot scratch;
        scratch.resize(plots.front()->size());
        for (int r = 0; r < reps; ++r) {
            double series = 0, setData = 0, rescale = 0, smooth = 0;
            for (const CompareMetricInfo& info : compareMetrics()) {
                scratch.clearGraphs();
                for (const CompareRun& run : loaded.runs) {
                    QElapsedTimer t;
                    t.start();
                    const Series s = seriesOf(run, info.metric, -1);
                    series += msSince(t);
                    t.restart();
                    const QVector<double> sm = smoothed(s.values, 0.6);
                    smooth += msSince(t);
                    t.restart();
                    QCPGraph* g = scratch.addGraph();
                    g->setData(s.steps, s.values, true);
                    setData += msSince(t);
                }
                QElapsedTimer t;
                t.start();
                scratch.rescaleAxes();
                rescale += msSince(t);
            }
            // Seed groups: the members' series, then groupBand (as drawGroup does it).
            double band = 0, bandMerged = 0;
            for (const CompareMetricInfo& info : compareMetrics())
                for (const auto& members : loaded.seedGroups) {
                    if (members.size() < 2) continue;
                    std::vector<Series> series;
                    for (size_t m : members)
                        series.push_back(seriesOf(loaded.runs[m], info.metric, -1));
                    QElapsedTimer t;
                    t.start();
                    const BandSeries b = groupBand(series);
                    band += msSince(t);
                    t.restart();
                    const BandSeries merged = mergedBand(series);
                    bandMerged += msSince(t);
                    bandsAgree = bandsAgree && merged.steps == b.steps && merged.low == b.low &&
                                 merged.high == b.high && merged.mean.size() == b.mean.size();
                }
            groupBandMs.push_back(band);
            mergedBandMs.push_back(bandMerged);
            seriesMs.push_back(series);
            smoothedMs.push_back(smooth);
            setDataMs.push_back(setData);
            rescaleMs.push_back(rescale);
        }
    }

    // --- Report ---------------------------------------------------------------------------
    const Stats loadS = statsOf(load), readS = statsOf(readTotal);
    std::vector<double> openFresh, openReload, openAppLike;
    for (int r = 0; r < reps; ++r) {
        openFresh.push_back(readS.median + setFresh[r] + replotFresh[r]);
        openReload.push_back(readS.median + setReload[r] + replotReload[r]);
        openAppLike.push_back(readS.median + setAppLike[r] + drainAppLike[r]);
    }
    std::vector<Row> rows{
        {"open: store read (RunStore + loadComparison)", readS, "median", 0},
        {"open: setComparison, fresh panel", statsOf(setFresh), "median", 0},
        {"open: replot all 11 plots (rpImmediateRefresh)", statsOf(replotFresh), "median", 0},
        {"open: total, fresh panel", statsOf(openFresh), "median", 1000},
        {"open: setComparison, panel showing a comparison", statsOf(setReload), "median", 0},
        {"open: total, panel showing a comparison", statsOf(openReload), "median", 1000},
        {"open as the app does it (read + set + event loop)", statsOf(openAppLike), "median", 1000},
        {"open via setRuns(): curves shown", statsOf(viaRunsCurves), "median", 1000},
        {"open via setRuns(): histogram tab loaded too", statsOf(viaRunsHistograms), "median", 0},
        {"cursor frame: hover() + its events (median)", statsOf(hoverFrame), "median", 16},
        {"cursor frame: hover() + its events (p95)", statsOf(hoverFrame), "p95", 16},
        {"cursor frame: hover() + its events (max)", statsOf(hoverFrame), "max", 16},
        {"cursor: hover() alone", statsOf(hoverOnly), "median", 0},
        {"cursor frame, smoothing 0.6 + groups (p95)", statsOf(hoverFrameBusy), "p95", 16},
        {"cursor frame, smoothing 0.6 + groups (max)", statsOf(hoverFrameBusy), "max", 16},
        {"first hover after opening (creates the lines)", statsOf(firstHover), "median", 16},
        {"first hover, lines made before opening (proposal)", statsOf(firstHoverPrecreated),
         "median", 16},
        {"smoothing 0 -> 0.6 + replot all", statsOf(smoothOn), "median", 100},
        {"smoothing 0.6 -> 0 + replot all", statsOf(smoothOff), "median", 100},
        {"seed groups on + replot all", statsOf(groupsOn), "median", 100},
        {"seed groups off + replot all", statsOf(groupsOff), "median", 100},
    };

    std::printf("\nplatform %s, screen %dx%d, panel %dx%d, Qt %s, %d repetitions\n",
                qPrintable(QGuiApplication::platformName()), screen.width(), screen.height(),
                p.panel->width(), p.panel->height(), qVersion(), reps);
    std::printf(
        "%zu runs, %zu step rows, %zu layer-level probe rows read (of %zu stored with "
        "heads), %zu spikes; %zu graphs, %zu points on %d plots\n",
        loaded.runs.size(), stepRows, probeRows, probeRows * 5, spikes, graphs, points,
        int(plots.size()));
    std::printf("\n%-52s %9s %9s %9s %9s %8s  %s\n", "what (ms)", "median", "p95", "max", "min",
                "target", "");
    for (const Row& row : rows) {
        QString verdict;
        if (row.target > 0)
            verdict = row.value() < row.target ? QStringLiteral("pass (%1)").arg(row.statName)
                                               : QStringLiteral("FAIL (%1 %2x)")
                                                     .arg(row.statName)
                                                     .arg(row.value() / row.target, 0, 'f', 1);
        std::printf("%-52s %9.1f %9.1f %9.1f %9.1f %8s  %s\n", qPrintable(row.what),
                    row.stats.median, row.stats.p95, row.stats.max, row.stats.min,
                    row.target > 0 ? qPrintable(QString::number(row.target)) : "",
                    qPrintable(verdict));
    }
    std::printf("\nbreakdown (medians, ms)\n");
    std::printf("  store: RunStore open %.1f, loadComparison %.1f\n", statsOf(openStore).median,
                loadS.median);
    for (const auto& [k, v] : readParts)
        std::printf("  store, all runs: %-28s %8.1f\n", qPrintable(k), statsOf(v).median);
    std::printf(
        "  ComparePlots::redraw (series + setData + rescale, no paint): open %.1f, "
        "smoothing on %.1f, groups on %.1f\n",
        statsOf(redrawMs).median, statsOf(redrawSmooth).median, statsOf(redrawGroups).median);
    std::printf("  seriesOf, 11 metrics x %zu runs (worst layer): %.1f\n", loaded.runs.size(),
                statsOf(seriesMs).median);
    std::printf("  smoothed(0.6), same series: %.1f\n", statsOf(smoothedMs).median);
    std::printf(
        "  groupBand, 11 metrics x %zu seed groups: %.1f (one merge over the sorted "
        "series instead: %.1f, %s)\n",
        loaded.seedGroups.size(), statsOf(groupBandMs).median, statsOf(mergedBandMs).median,
        bandsAgree ? "same bands" : "DIFFERENT bands");
    std::printf("  addGraph + QCPGraph::setData(sorted), same series: %.1f\n",
                statsOf(setDataMs).median);
    std::printf("  rescaleAxes, 11 plots: %.1f\n", statsOf(rescaleMs).median);
    {
        const Stats per = statsOf(perPlotReplot);
        std::printf("  replot of one plot at open: median %.1f, max %.1f\n", per.median, per.max);
        std::printf("  per plot (median over reps):");
        for (int i = 0; i < int(plots.size()); ++i) {
            std::vector<double> v;
            for (int r = 0; r < reps; ++r) v.push_back(perPlotReplot[size_t(r * plots.size() + i)]);
            std::printf(" %s %.1f%s", compareMetrics()[size_t(i)].key, statsOf(v).median,
                        i + 1 < int(plots.size()) ? "," : "\n");
        }
    }
    std::printf(
        "  event loop after an explicit replot (the queued replot again): fresh %.1f, "
        "reload %.1f\n",
        statsOf(drainFresh).median, statsOf(drainReload).median);
    std::printf(
        "  cursor sweep: %zu frames, %d plot paint events, tooltip %s (%.0f chars "
        "median, %d empty)\n",
        hoverFrame.size(), sweepPaints, emptyTexts < int(hoverFrame.size()) ? "shown" : "never",
        statsOf(textChars).median, emptyTexts);

    std::printf("\nproposals, tried on the bench's panel: replot of all 11 plots (median ms)\n");
    QJsonObject whatIfJson;
    for (const WhatIf& w : whatIfs) {
        std::printf("  %-62s %8.1f\n", w.name, statsOf(w.ms).median);
        whatIfJson[QString::fromLatin1(w.name)] = statsOf(w.ms).median;
    }

    QJsonObject j{
        {"platform", QGuiApplication::platformName()},
        {"qt", QString::fromLatin1(qVersion())},
        {"runs", int(loaded.runs.size())},
        {"steps", double(steps)},
        {"reps", reps},
        {"db_mib", dbMiB},
        {"step_rows", double(stepRows)},
        {"probe_rows_read", double(probeRows)},
        {"graphs", double(graphs)},
        {"points", double(points)},
        {"store_read_ms", toJson(readS)},
        {"load_comparison_ms", toJson(loadS)},
        {"set_comparison_fresh_ms", toJson(statsOf(setFresh))},
        {"replot_all_fresh_ms", toJson(statsOf(replotFresh))},
        {"open_fresh_ms", toJson(statsOf(openFresh))},
        {"set_comparison_reload_ms", toJson(statsOf(setReload))},
        {"open_reload_ms", toJson(statsOf(openReload))},
        {"open_app_like_ms", toJson(statsOf(openAppLike))},
        {"open_set_runs_curves_ms", toJson(statsOf(viaRunsCurves))},
        {"open_set_runs_histograms_ms", toJson(statsOf(viaRunsHistograms))},
        {"redraw_ms", toJson(statsOf(redrawMs))},
        {"replot_one_plot_ms", toJson(statsOf(perPlotReplot))},
        {"first_hover_ms", toJson(statsOf(firstHover))},
        {"first_hover_lines_precreated_ms", toJson(statsOf(firstHoverPrecreated))},
        {"redraw_smoothing_ms", toJson(statsOf(redrawSmooth))},
        {"redraw_groups_ms", toJson(statsOf(redrawGroups))},
        {"hover_frame_ms", toJson(statsOf(hoverFrame))},
        {"hover_only_ms", toJson(statsOf(hoverOnly))},
        {"hover_frame_smoothed_groups_ms", toJson(statsOf(hoverFrameBusy))},
        {"smoothing_on_ms", toJson(statsOf(smoothOn))},
        {"smoothing_off_ms", toJson(statsOf(smoothOff))},
        {"groups_on_ms", toJson(statsOf(groupsOn))},
        {"groups_off_ms", toJson(statsOf(groupsOff))},
        {"series_of_ms", toJson(statsOf(seriesMs))},
        {"set_data_ms", toJson(statsOf(setDataMs))},
        {"group_band_ms", toJson(statsOf(groupBandMs))},
        {"group_band_merged_ms", toJson(statsOf(mergedBandMs))},
    };
    QJsonObject pass;
    for (const Row& row : rows)
        if (row.target > 0) pass[row.what] = row.value() < row.target;
    j["pass"] = pass;
    j["replot_all_what_if_ms"] = whatIfJson;
    std::printf("\ncompare_bench %s\n",
                QJsonDocument(j).toJson(QJsonDocument::Compact).constData());
    if (keep && dbArg.isEmpty()) std::printf("kept %s\n", db.c_str());
    return 0;
}
