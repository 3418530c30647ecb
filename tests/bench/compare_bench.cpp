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
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/plot_cursor.h"
#include "common/theme.h"
#include "compare/compare_data.h"
#include "compare/compare_histograms.h"
#include "compare/compare_panel.h"
#include "compare/compare_plots.h"
#include "qklab/config/run_config.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"

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

// One synthetic run, written as the engine writes a default-config run. Every value comes from
// one generator in a fixed order (the database is the same on every machine and in every
// version of this tool): the spike steps first, then step by step the metrics, the loss
// spikes' z-scores and the probes.
class SyntheticRun {
  public:
    SyntheticRun(const RunPlan& plan, int64_t steps);
    int64_t write(const std::string& db);

  private:
    RunConfig config() const;
    StepMetrics metricsAt(int64_t s);
    void addSpikes(RunWriter& w, const StepMetrics& m);
    void addProbes(RunWriter& w, int64_t s);
    ProbeStats headProbe(int64_t s, int l, int h);
    void addHistogram(RunWriter& w, int64_t s, int l, double maxRaw);
    // Blow-up: 0 before `from`, rising to 1 at the last step (diverging runs only).
    double blow(int64_t s, int64_t from) const {
        return m_plan.diverge && s >= from ? double(s - from) / double(m_steps - from) : 0.0;
    }
    static bool isIn(const std::vector<int64_t>& v, int64_t s) {
        return std::find(v.begin(), v.end(), s) != v.end();
    }

    RunPlan m_plan;
    int64_t m_steps;
    RunConfig m_c;  // the default model: 2 layers, 4 heads, d_model 128, T 128
    bool m_rms;
    std::mt19937 m_rng;
    std::normal_distribution<double> m_noise{0, 1};
    int m_layers, m_heads, m_bins;
    double m_binWidth;
    // Logits grow from 80% of the run, the loss follows from 92%, and the last 20 steps are
    // NaN (the engine stops at the first; a deferred readback batch reports more).
    int64_t m_blowStart, m_lossStart, m_nanFrom;
    std::vector<int64_t> m_lossSpikes, m_gradSpikes;
    double m_seedShift;
    bool m_alarmed = false;
};

SyntheticRun::SyntheticRun(const RunPlan& plan, int64_t steps)
    : m_plan(plan),
      m_steps(steps),
      m_c(config()),
      m_rms(plan.qkNorm == QkNormVariant::Rms),
      m_rng(uint32_t(plan.seed * 7919 + (m_rms ? 17 : 0))),
      m_layers(int(m_c.model.nLayers)),
      m_heads(int(m_c.model.nHeads)),
      m_bins(int(m_c.probes.histBins)),
      m_binWidth((m_c.probes.histMax - m_c.probes.histMin) / m_bins),
      m_blowStart(int64_t(0.80 * double(steps))),
      m_lossStart(int64_t(0.92 * double(steps))),
      m_nanFrom(steps - 20),
      m_seedShift(0.02 * double(plan.seed % 3) + (m_rms ? 0.0 : 0.03)) {
    // A few spikes at steps that depend on the seed.
    std::uniform_int_distribution<int64_t> at(steps / 20, steps - steps / 10);
    for (int i = 0; i < 3; ++i) m_lossSpikes.push_back(at(m_rng));
    for (int i = 0; i < 2; ++i) m_gradSpikes.push_back(at(m_rng));
    if (plan.diverge)
        for (int i = 0; i < 4; ++i)
            m_lossSpikes.push_back(m_lossStart + (m_nanFrom - m_lossStart) * i / 4);
}

RunConfig SyntheticRun::config() const {
    RunConfig c;
    c.why = "compare_bench: synthetic run";
    c.schedule.steps = m_steps;
    c.schedule.warmupSteps = 500;
    c.probes.every = 10;
    c.eval.every = 200;
    c.run.seed = m_plan.seed;
    c.attention.qkNorm = m_plan.qkNorm;
    return c;
}

int64_t SyntheticRun::write(const std::string& db) {
    NewRun nr;
    nr.name = m_plan.name;
    nr.configJson = configToJson(m_c).dump();
    nr.seed = m_plan.seed;
    nr.device = "cpu";
    RunWriter w(db, nr);
    for (int64_t s = 0; s < m_steps; ++s) {
        const StepMetrics m = metricsAt(s);
        w.addStep(m);
        addSpikes(w, m);
        if (s % m_c.probes.every != 0) continue;
        addProbes(w, s);
        if (s % 500 == 0) w.flush();
    }
    w.flush();
    if (m_plan.diverge)
        w.finish(RunStatus::Diverged, "loss became nan at step " + std::to_string(m_nanFrom));
    else
        w.finish(RunStatus::Finished);
    return w.runId();
}

StepMetrics SyntheticRun::metricsAt(int64_t s) {
    const double t = double(s) / double(m_steps);
    const double warm = std::min(1.0, double(s + 1) / double(m_c.schedule.warmupSteps));
    StepMetrics m;
    m.step = s;
    m.loss = 1.55 + m_seedShift + 3.9 * std::exp(-12 * t) + 0.35 * std::exp(-2 * t) +
             0.04 * m_noise(m_rng) + 2.5 * std::pow(blow(s, m_lossStart), 2);
    m.gradNorm = (0.35 + 0.6 * std::exp(-30 * t)) * (1 + 0.25 * std::fabs(m_noise(m_rng))) +
                 8 * std::pow(blow(s, m_blowStart), 3);
    if (isIn(m_lossSpikes, s)) m.loss += 1.2 + 0.3 * std::fabs(m_noise(m_rng));
    if (isIn(m_gradSpikes, s)) m.gradNorm *= 12;
    if (m_plan.diverge && s >= m_nanFrom) m.loss = m.gradNorm = std::nan("");
    m.lr = m_c.optim.lr * warm *
           (0.1 + 0.9 * 0.5 *
                      (1 + std::cos(M_PI * std::max(0.0, double(s - 500)) /
                                    double(std::max<int64_t>(1, m_steps - 500)))));
    m.alpha = 1;
    m.seqLen = m_c.model.seqLen;
    m.tokensPerSec = 21000 * (1 + 0.03 * m_noise(m_rng));
    m.attentionPath = m_rms || s % m_c.probes.every ? "fused" : "explicit";
    if (s % m_c.eval.every == m_c.eval.every - 1)
        m.valLoss = std::isfinite(m.loss) ? m.loss + 0.06 + 0.01 * m_noise(m_rng) : m.loss;
    return m;
}

void SyntheticRun::addSpikes(RunWriter& w, const StepMetrics& m) {
    const int64_t s = m.step;
    for (int64_t sp : m_lossSpikes)
        if (sp == s && std::isfinite(m.loss)) {
            Spike k;
            k.step = s;
            k.metric = "loss";
            k.value = m.loss;
            k.zScore = 6 + std::fabs(m_noise(m_rng));
            k.kind = m_plan.diverge && s >= m_lossStart ? SpikeKind::QkRunaway
                                                        : SpikeKind::DataOrAccumulation;
            k.tier = m_plan.diverge && s >= m_lossStart ? 3 : 1;
            k.probeStep = s - s % m_c.probes.every;
            k.diagnosis = "synthetic spike (compare_bench)";
            w.addSpike(k);
        }
    if (isIn(m_gradSpikes, s)) {
        Spike k;
        k.step = s;
        k.metric = "grad_norm";
        k.value = m.gradNorm;
        k.zScore = 7;
        k.diagnosis = "synthetic spike (compare_bench)";
        w.addSpike(k);
    }
}

// Probes: per head, then the layer row as the engine derives it (max of the maxima, mean
// entropy, largest norms), the layer's histogram and the first alarm.
void SyntheticRun::addProbes(RunWriter& w, int64_t s) {
    for (int l = 0; l < m_layers; ++l) {
        ProbeStats layer;
        layer.step = s;
        layer.layer = l;
        layer.head = -1;
        layer.entropy = 0;
        std::vector<ProbeStats> rows;
        for (int h = 0; h < m_heads; ++h) {
            const ProbeStats p = headProbe(s, l, h);
            rows.push_back(p);
            layer.logitMaxRaw = std::max(layer.logitMaxRaw, p.logitMaxRaw);
            layer.logitP99Raw = std::max(layer.logitP99Raw, p.logitP99Raw);
            layer.logitMaxCapped = std::max(layer.logitMaxCapped, p.logitMaxCapped);
            layer.logitP99Capped = std::max(layer.logitP99Capped, p.logitP99Capped);
            layer.qRawNormP90 = std::max(layer.qRawNormP90, p.qRawNormP90);
            layer.kRawNormP90 = std::max(layer.kRawNormP90, p.kRawNormP90);
            layer.qNormP90 = std::max(layer.qNormP90, p.qNormP90);
            layer.kNormP90 = std::max(layer.kNormP90, p.kNormP90);
            layer.entropy += p.entropy / m_heads;
        }
        w.addProbe(layer);  // stored order: head -1 first, as ORDER BY head reads them
        for (const ProbeStats& p : rows) w.addProbe(p);
        addHistogram(w, s, l, layer.logitMaxRaw);
        if (!m_alarmed && layer.logitMaxRaw > 30) {
            LogitAlarm a;
            a.step = s;
            a.layer = l;
            a.metric = "logit_max_raw";
            a.value = layer.logitMaxRaw;
            a.threshold = 30;
            a.text = "synthetic alarm (compare_bench)";
            w.addLogitAlarm(a);
            m_alarmed = true;
        }
    }
}

ProbeStats SyntheticRun::headProbe(int64_t s, int l, int h) {
    const double t = double(s) / double(m_steps);
    ProbeStats p;
    p.step = s;
    p.layer = l;
    p.head = h;
    const double growth = m_rms ? 3 * t : 14 * t + 0.5 * l;
    const double runaway = 250 * std::pow(blow(s, m_blowStart), 2) * (1 + 0.3 * h);
    p.logitMaxRaw = 6 + 0.4 * h + growth + runaway + 0.5 * std::fabs(m_noise(m_rng));
    p.logitP99Raw = 0.45 * p.logitMaxRaw;
    p.logitMeanRaw = 0.05 * m_noise(m_rng);
    p.logitMaxCapped = p.logitMaxRaw;
    p.logitP99Capped = p.logitP99Raw;
    p.logitMeanCapped = p.logitMeanRaw;
    p.qRawNormP90 = 7 + (m_rms ? 2 : 6) * t + 0.1 * h + runaway / 20;
    p.kRawNormP90 = p.qRawNormP90 * 0.95;
    p.qNormP90 = m_rms ? std::sqrt(double(m_c.model.dModel / m_heads)) : p.qRawNormP90;
    p.kNormP90 = m_rms ? p.qNormP90 : p.kRawNormP90;
    p.entropy = std::max(0.02, 3.4 - 0.9 * t - 0.1 * h - 3 * blow(s, m_blowStart));
    return p;
}

// The layer's raw-logit histogram (head -1), as the engine stores it at every probe.
void SyntheticRun::addHistogram(RunWriter& w, int64_t s, int l, double maxRaw) {
    LogitHistogram hist;
    hist.step = s;
    hist.layer = l;
    hist.head = -1;
    hist.counts.assign(size_t(m_bins), 0);
    const double width = 1.5 + maxRaw / 4;
    for (int b = 0; b < m_bins; ++b) {
        const double x = m_c.probes.histMin + (b + 0.5) * m_binWidth;
        hist.counts[size_t(b)] = int64_t(60000 * std::exp(-x * x / (2 * width * width)));
    }
    w.addHistogram(hist);
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

// ---------------------------------------------------------------------------------------
// What is measured, part by part (each part's function says how).

struct Options {
    int runs = 10, reps = 5, sweep = 48;
    int64_t steps = 20000;
    QString db, theme = QStringLiteral("light");
    bool keep = false;
    QString screenshot;  // PNG of the panel as opened, to check what was timed
    QString figure;      // the exported figure (PNG or PDF by suffix) of the panel as opened
    QString profile;     // only this part, reps times, for perf (see the top of the file)
};

// The options, or nothing after printing the usage.
std::optional<Options> parseOptions(const QStringList& args) {
    Options o;
    const std::map<QString, QString*> texts{{"--db", &o.db},
                                            {"--theme", &o.theme},
                                            {"--profile", &o.profile},
                                            {"--screenshot", &o.screenshot},
                                            {"--figure", &o.figure}};
    const std::map<QString, int*> counts{
        {"--runs", &o.runs}, {"--reps", &o.reps}, {"--sweep", &o.sweep}};
    for (int i = 1; i < args.size(); ++i) {
        const QString& a = args[i];
        if (auto t = texts.find(a); t != texts.end()) {
            *t->second = args.value(++i);
        } else if (auto c = counts.find(a); c != counts.end()) {
            *c->second = args.value(++i).toInt();
        } else if (a == "--steps") {
            o.steps = args.value(++i).toLongLong();
        } else if (a == "--keep") {
            o.keep = true;
        } else {
            std::fprintf(stderr,
                         "usage: compare_bench [--runs 2-12] [--steps N] [--reps N] [--sweep N] "
                         "[--db PATH] [--keep] [--theme light|dark] "
                         "[--profile store|replot|replot-thin|groups|hover] [--screenshot PNG] "
                         "[--figure PNG|PDF]\n");
            return std::nullopt;
        }
    }
    o.runs = std::clamp(o.runs, 2, ComparePanel::kMaxRuns);
    o.reps = std::max(1, o.reps);
    o.sweep = std::max(2, o.sweep);
    return o;
}

// The app's look, as main.cpp sets it.
void applyAppLook(const QString& theme) {
    QFile style(QStringLiteral(":/qklab/qklab.qss"));
    if (style.open(QIODevice::ReadOnly)) setBaseStyleSheet(QString::fromUtf8(style.readAll()));
    applyTheme(theme == "dark" ? Theme::Dark : Theme::Light);
}

// The database the bench reads (qklab::Database is the SQLite connection): its path, the runs
// it compares and its size.
struct BenchDatabase {
    std::string path;
    std::vector<int64_t> ids;
    double mib = 0;
};

// The first `runs` runs of --db, or a new database of synthetic runs in `dir`.
BenchDatabase openDatabase(const Options& o, QTemporaryDir& dir) {
    BenchDatabase db;
    double writeSeconds = 0;
    if (!o.db.isEmpty()) {
        db.path = o.db.toStdString();
        RunStore store(db.path, StoreAccess::ReadOnly);
        for (const RunInfo& r : store.listRuns())
            if (int(db.ids.size()) < o.runs) db.ids.push_back(r.id);
        std::sort(db.ids.begin(), db.ids.end());
    } else {
        if (o.keep) dir.setAutoRemove(false);
        db.path = dir.filePath(QStringLiteral("compare-bench.db")).toStdString();
        QElapsedTimer t;
        t.start();
        for (const RunPlan& p : plans(o.runs))
            db.ids.push_back(SyntheticRun(p, o.steps).write(db.path));
        writeSeconds = msSince(t) / 1000;
    }
    db.mib = double(QFileInfo(QString::fromStdString(db.path)).size()) / (1 << 20);
    std::printf("database %s: %d runs x %lld steps, %.1f MiB%s\n", db.path.c_str(),
                int(db.ids.size()), (long long)o.steps, db.mib,
                writeSeconds > 0
                    ? qPrintable(QStringLiteral(", written in %1 s").arg(writeSeconds, 0, 'f', 1))
                    : "");
    std::fflush(stdout);
    return db;
}

// Calls `at` with `sweep` x positions across the plot's axis rect, left to right.
void sweepAcross(QCustomPlot* plot, int sweep, const std::function<void(QPoint)>& at) {
    const QRect rect = plot->axisRect()->rect();
    for (int i = 0; i < sweep; ++i)
        at(QPoint(rect.left() + 1 + (rect.width() - 3) * i / (sweep - 1), rect.center().y()));
}

// --profile: one part alone, reps times (perf record -g compare_bench --profile ...).
int runProfile(const Options& o, const BenchDatabase& db) {
    QElapsedTimer t;
    t.start();
    if (o.profile == "store") {
        for (int r = 0; r < o.reps; ++r) {
            RunStore store(db.path, StoreAccess::ReadOnly);
            loadComparison(store, db.ids);
        }
    } else {
        RunStore store(db.path, StoreAccess::ReadOnly);
        Panel p(1920, 1080);
        p.panel->setComparison(loadComparison(store, db.ids));
        if (o.profile == "groups") p.panel->setGroupSeeds(true);
        if (o.profile == "replot-thin") thinDensePens(p.plots(), true, 0);
        replotAll(p.plots());
        drainEvents();
        t.restart();
        for (int r = 0; r < o.reps; ++r)
            for (QCustomPlot* plot : p.plots()->plots()) {
                if (o.profile != "hover") {
                    plot->replot(QCustomPlot::rpImmediateRefresh);
                    continue;
                }
                sweepAcross(plot, o.sweep, [&](QPoint pos) {
                    p.plots()->hoverCursor()->hover(plot, pos);
                    drainEvents();
                });
            }
    }
    std::printf("profile %s: %d x in %.1f ms\n", qPrintable(o.profile), o.reps, msSince(t));
    return 0;
}

// ---- the store read (the pool thread's part) -------------------------------------------

struct StoreRead {
    std::vector<double> openStore, load, readTotal;
    Comparison loaded;
    size_t stepRows = 0, probeRows = 0, spikes = 0;
    std::map<QString, std::vector<double>> parts;  // the queries inside loadComparison
};

StoreRead timeStoreRead(const BenchDatabase& db, int reps) {
    StoreRead out;
    for (int r = 0; r < reps + 1; ++r) {  // the first read warms SQLite's and the OS's caches
        QElapsedTimer t;
        t.start();
        RunStore store(db.path, StoreAccess::ReadOnly);  // readStoreAsync opens one per job
        const double opened = msSince(t);
        QElapsedTimer l;
        l.start();
        Comparison c = loadComparison(store, db.ids);
        const double loadMs = msSince(l);
        if (r == 0) {
            out.loaded = std::move(c);
            continue;
        }
        out.openStore.push_back(opened);
        out.load.push_back(loadMs);
        out.readTotal.push_back(msSince(t));
    }
    for (const CompareRun& run : out.loaded.runs) {
        out.stepRows += run.snap.steps.size();
        out.probeRows += run.snap.probes.size();
        out.spikes += run.snap.spikes.size();
    }
    return out;
}

// Inside loadComparison, per run: the snapshot's queries, then the summary from the rows they
// returned (summarizeRun(store, id), the CLI's, would read them a second time).
void timeReadParts(const BenchDatabase& db, int reps, StoreRead& out) {
    for (int r = 0; r < reps; ++r) {
        RunStore store(db.path, StoreAccess::ReadOnly);
        std::map<QString, double> sum;
        for (int64_t id : db.ids) {
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
        for (const auto& [k, v] : sum) out.parts[k].push_back(v);
    }
}

// ---- opening: setComparison + the first replot of every plot ---------------------------

constexpr int kWidth = 1920, kHeight = 1080;

struct Opening {
    std::vector<double> setFresh, replotFresh, drainFresh, setReload, replotReload, drainReload,
        setAppLike, drainAppLike, firstHover, redrawMs, perPlotReplot, firstHoverPrecreated,
        viaRunsCurves, viaRunsHistograms;
};

// The first hover after opening creates the cursor line on every plot: one frame, in ms.
double timeFirstHover(ComparePlots* plots) {
    QCustomPlot* loss = plots->plots().front();
    QElapsedTimer h;
    h.start();
    plots->hoverCursor()->hover(loss, loss->axisRect()->center());
    drainEvents();
    return msSince(h);
}

// On a fresh panel, then again on the panel that now shows a comparison (a reload: live runs
// reload every 2 s; Compare pressed again).
void timeOpening(const Comparison& loaded, int reps, Opening& out) {
    for (int r = 0; r < reps; ++r) {
        Panel p(kWidth, kHeight);
        Comparison copy = loaded;  // setComparison takes it by value: copy outside the timer
        QElapsedTimer t;
        t.start();
        p.panel->setComparison(std::move(copy));
        out.setFresh.push_back(msSince(t));
        out.redrawMs.push_back(p.plots()->lastRedrawMs());
        std::vector<double> per;
        out.replotFresh.push_back(replotAll(p.plots(), &per));
        out.perPlotReplot.insert(out.perPlotReplot.end(), per.begin(), per.end());
        out.drainFresh.push_back(drainEvents());  // in the bench: the queued replots again
        out.firstHover.push_back(timeFirstHover(p.plots()));
        copy = loaded;
        t.restart();
        p.panel->setComparison(std::move(copy));
        out.setReload.push_back(msSince(t));
        out.replotReload.push_back(replotAll(p.plots()));
        out.drainReload.push_back(drainEvents());
    }
}

// As the app does it: no explicit replot, the queued replots run in the event loop. Here the
// cursor lines exist before the comparison is shown (a hover and hide on the empty plots), as
// if HoverCursor::addPlot created them: the first hover then redraws the overlay layer only.
void timeOpeningAsTheApp(const Comparison& loaded, int reps, Opening& out) {
    for (int r = 0; r < reps; ++r) {
        Panel p(kWidth, kHeight);
        for (QCustomPlot* plot : p.plots()->plots())
            p.plots()->hoverCursor()->hover(plot, plot->axisRect()->center());
        p.plots()->hoverCursor()->hide();
        drainEvents();
        Comparison copy = loaded;
        QElapsedTimer t;
        t.start();
        p.panel->setComparison(std::move(copy));
        out.setAppLike.push_back(msSince(t));
        out.drainAppLike.push_back(drainEvents());
        out.firstHoverPrecreated.push_back(timeFirstHover(p.plots()));
    }
}

// The whole path, as the Compare button takes it: setRuns() reads on a pool thread, then
// setComparison() on the GUI thread; the histogram tab then reads its layer's histograms on a
// pool thread and draws them.
void timeOpeningViaSetRuns(const BenchDatabase& db, int reps, Opening& out) {
    for (int r = 0; r < reps; ++r) {
        Panel p(kWidth, kHeight);
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
        p.panel->setRuns(QString::fromStdString(db.path), db.ids);
        if (!curves) wait.exec();
        drainEvents();  // the queued replots: the curves are on screen
        out.viaRunsCurves.push_back(msSince(t));
        if (!histograms) wait.exec();
        drainEvents();
        out.viaRunsHistograms.push_back(msSince(t));
    }
}

// ---- the rest on one panel: cursor, smoothing, seed groups, proposals ------------------

struct Cursor {
    std::vector<double> hoverOnly, hoverFrame, textChars, hoverOnlyBusy, hoverFrameBusy;
    int emptyTexts = 0, sweepPaints = 0;
};

// Every plot, `sweep` x positions across its axis rect, reps times: hover() alone and the
// frame (hover() and the events it leaves); the readout's length when asked for.
void sweepCursor(Panel& p, int reps, int sweep, std::vector<double>& hoverOnly,
                 std::vector<double>& frame, std::vector<double>* textChars, int* emptyTexts) {
    for (int r = 0; r < reps; ++r)
        for (QCustomPlot* plot : p.plots()->plots())
            sweepAcross(plot, sweep, [&](QPoint pos) {
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
            });
    p.plots()->hoverCursor()->hide();
    drainEvents();
}

// The first hover creates the cursor lines (timed in timeOpening); the sweep times the moves
// after it, counting the plots' paint events.
void timeCursor(Panel& p, int reps, int sweep, Cursor& out) {
    QCustomPlot* first = p.plots()->plots().front();
    p.plots()->hoverCursor()->hover(first, first->axisRect()->center());
    drainEvents();
    const int paintsBefore = p.counter.paints;
    sweepCursor(p, reps, sweep, out.hoverOnly, out.hoverFrame, &out.textChars, &out.emptyTexts);
    out.sweepPaints = p.counter.paints - paintsBefore;
}

// The cursor again with everything drawn: smoothing 0.6 and seed groups on.
void timeBusyCursor(Panel& p, int reps, int sweep, Cursor& out) {
    p.panel->setSmoothing(0.6);
    p.panel->setGroupSeeds(true);
    replotAll(p.plots());
    drainEvents();
    sweepCursor(p, reps, sweep, out.hoverOnlyBusy, out.hoverFrameBusy, nullptr, nullptr);
    p.panel->setGroupSeeds(false);
    p.panel->setSmoothing(0);
    drainEvents();
}

struct Toggles {
    std::vector<double> smoothOn, smoothOff, groupsOn, groupsOff, redrawSmooth, redrawGroups;
};

// One toggle and the replot of every plot, in ms; then the events it leaves are run.
double timeToggle(Panel& p, const std::function<void()>& toggle,
                  std::vector<double>* redraw = nullptr) {
    QElapsedTimer t;
    t.start();
    toggle();
    if (redraw) redraw->push_back(p.plots()->lastRedrawMs());
    replotAll(p.plots());
    const double ms = msSince(t);
    drainEvents();
    return ms;
}

// setSmoothing(0.6) and back to 0, setGroupSeeds(true) and back, reps times.
Toggles timeToggles(Panel& p, int reps) {
    Toggles out;
    ComparePanel* panel = p.panel.get();
    for (int r = 0; r < reps; ++r) {
        out.smoothOn.push_back(timeToggle(
            p, [panel] { panel->setSmoothing(0.6); }, &out.redrawSmooth));
        out.smoothOff.push_back(timeToggle(p, [panel] { panel->setSmoothing(0); }));
        out.groupsOn.push_back(timeToggle(
            p, [panel] { panel->setGroupSeeds(true); }, &out.redrawGroups));
        out.groupsOff.push_back(timeToggle(p, [panel] { panel->setGroupSeeds(false); }));
    }
    return out;
}

// What the proposals would save, tried on this panel's graphs only (the app's code is
// unchanged). Each: redraw as the app does, change the graphs, then time
// replot(rpImmediateRefresh) of every plot.
struct WhatIf {
    const char* name;
    bool groups;
    std::function<void()> change;
    std::vector<double> ms;
    double smoothing = 0;
};

std::vector<WhatIf> whatIfsOn(ComparePlots* plots) {
    auto thin = [plots](bool aliased, int minPoints) {
        return [plots, aliased, minPoints] { thinDensePens(plots, aliased, minPoints); };
    };
    auto thinAndDecimate = [plots] {
        thinDensePens(plots, true, 0);  // first: decimated graphs are no longer dense
        decimateDense(plots);
    };
    return {
        {"as drawn now", false, [] {}, {}},
        {">= 4000 points: 1 px pen, antialiased", false, thin(false, 4000), {}},
        {">= 4000 points: 1 px pen, aliased (live plots' rule)", false, thin(true, 4000), {}},
        {"> 1 point per pixel column: 1 px pen, antialiased", false, thin(false, 0), {}},
        {"> 1 point per pixel column: 1 px pen, aliased", false, thin(true, 0), {}},
        {"decimated to per-pixel first/min/max/last, pens as now",
         false,
         [plots] { decimateDense(plots); },
         {}},
        {"decimated + 1 px aliased pen (> 1 point per pixel)", false, thinAndDecimate, {}},
        {"smoothing 0.6: as drawn now", false, [] {}, {}, 0.6},
        {"smoothing 0.6: 1 px aliased pen (> 1 point per pixel)", false, thin(true, 0), {}, 0.6},
        {"seed groups: as drawn now", true, [] {}, {}},
        {"seed groups: 1 px aliased pen and fill (> 1 point per pixel)", true, thin(true, 0), {}},
        {"seed groups: decimated + 1 px aliased pen and fill", true, thinAndDecimate, {}},
    };
}

// Each proposal's replot times, by name.
using WhatIfTimes = std::vector<std::pair<const char*, std::vector<double>>>;

WhatIfTimes timeWhatIfs(Panel& p, int reps) {
    std::vector<WhatIf> whatIfs = whatIfsOn(p.plots());
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
    WhatIfTimes out;
    for (WhatIf& w : whatIfs) out.emplace_back(w.name, std::move(w.ms));
    return out;
}

// ---- where the GUI-thread time goes ----------------------------------------------------

struct Breakdown {
    std::vector<double> seriesMs, setDataMs, rescaleMs, smoothedMs, groupBandMs, mergedBandMs;
    bool bandsAgree = true;
};

// seriesOf, smoothed and QCPGraph::setData of every metric and run, and rescaleAxes per
// metric, on a scratch plot of the panel's plot size: one repetition.
void timeSeriesOnce(const Comparison& loaded, QCustomPlot& scratch, Breakdown& out) {
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
    out.seriesMs.push_back(series);
    out.smoothedMs.push_back(smooth);
    out.setDataMs.push_back(setData);
    out.rescaleMs.push_back(rescale);
}

// Seed groups: the members' series, then groupBand (as drawGroup does it) against one merge
// over the sorted series: one repetition.
void timeGroupBandsOnce(const Comparison& loaded, Breakdown& out) {
    double band = 0, bandMerged = 0;
    for (const CompareMetricInfo& info : compareMetrics())
        for (const auto& members : loaded.seedGroups) {
            if (members.size() < 2) continue;
            std::vector<Series> series;
            for (size_t m : members) series.push_back(seriesOf(loaded.runs[m], info.metric, -1));
            QElapsedTimer t;
            t.start();
            const BandSeries b = groupBand(series);
            band += msSince(t);
            t.restart();
            const BandSeries merged = mergedBand(series);
            bandMerged += msSince(t);
            out.bandsAgree = out.bandsAgree && merged.steps == b.steps && merged.low == b.low &&
                             merged.high == b.high && merged.mean.size() == b.mean.size();
        }
    out.groupBandMs.push_back(band);
    out.mergedBandMs.push_back(bandMerged);
}

Breakdown timeBreakdown(const Comparison& loaded, QSize plotSize, int reps) {
    Breakdown out;
    QCustomPlot scratch;
    scratch.resize(plotSize);
    for (int r = 0; r < reps; ++r) {
        timeSeriesOnce(loaded, scratch, out);
        timeGroupBandsOnce(loaded, out);
    }
    return out;
}

// ---- the report ------------------------------------------------------------------------

// Everything measured, for the report.
struct Measured {
    int reps = 0;
    int64_t steps = 0;
    double dbMiB = 0;
    QSize screen, panel;
    int plots = 0;
    size_t graphs = 0, points = 0;
    StoreRead store;
    Opening open;
    Cursor cursor;
    Toggles toggles;
    WhatIfTimes whatIfs;
    Breakdown breakdown;
    std::vector<double> openFresh, openReload, openAppLike;  // read + set + replot or events
};

// The opening totals: the median store read plus each repetition's GUI-thread part.
void addOpeningTotals(Measured& m) {
    const double read = statsOf(m.store.readTotal).median;
    const Opening& o = m.open;
    for (int r = 0; r < m.reps; ++r) {
        m.openFresh.push_back(read + o.setFresh[r] + o.replotFresh[r]);
        m.openReload.push_back(read + o.setReload[r] + o.replotReload[r]);
        m.openAppLike.push_back(read + o.setAppLike[r] + o.drainAppLike[r]);
    }
}

std::vector<Row> targetRows(const Measured& m) {
    const Opening& o = m.open;
    const Cursor& c = m.cursor;
    const Toggles& g = m.toggles;
    return {
        {"open: store read (RunStore + loadComparison)", statsOf(m.store.readTotal), "median", 0},
        {"open: setComparison, fresh panel", statsOf(o.setFresh), "median", 0},
        {"open: replot all 11 plots (rpImmediateRefresh)", statsOf(o.replotFresh), "median", 0},
        {"open: total, fresh panel", statsOf(m.openFresh), "median", 1000},
        {"open: setComparison, panel showing a comparison", statsOf(o.setReload), "median", 0},
        {"open: total, panel showing a comparison", statsOf(m.openReload), "median", 1000},
        {"open as the app does it (read + set + event loop)", statsOf(m.openAppLike), "median",
         1000},
        {"open via setRuns(): curves shown", statsOf(o.viaRunsCurves), "median", 1000},
        {"open via setRuns(): histogram tab loaded too", statsOf(o.viaRunsHistograms), "median", 0},
        {"cursor frame: hover() + its events (median)", statsOf(c.hoverFrame), "median", 16},
        {"cursor frame: hover() + its events (p95)", statsOf(c.hoverFrame), "p95", 16},
        {"cursor frame: hover() + its events (max)", statsOf(c.hoverFrame), "max", 16},
        {"cursor: hover() alone", statsOf(c.hoverOnly), "median", 0},
        {"cursor frame, smoothing 0.6 + groups (p95)", statsOf(c.hoverFrameBusy), "p95", 16},
        {"cursor frame, smoothing 0.6 + groups (max)", statsOf(c.hoverFrameBusy), "max", 16},
        {"first hover after opening (creates the lines)", statsOf(o.firstHover), "median", 16},
        {"first hover, lines made before opening (proposal)", statsOf(o.firstHoverPrecreated),
         "median", 16},
        {"smoothing 0 -> 0.6 + replot all", statsOf(g.smoothOn), "median", 100},
        {"smoothing 0.6 -> 0 + replot all", statsOf(g.smoothOff), "median", 100},
        {"seed groups on + replot all", statsOf(g.groupsOn), "median", 100},
        {"seed groups off + replot all", statsOf(g.groupsOff), "median", 100},
    };
}

void printTable(const Measured& m, const std::vector<Row>& rows) {
    std::printf("\nplatform %s, screen %dx%d, panel %dx%d, Qt %s, %d repetitions\n",
                qPrintable(QGuiApplication::platformName()), m.screen.width(), m.screen.height(),
                m.panel.width(), m.panel.height(), qVersion(), m.reps);
    std::printf(
        "%zu runs, %zu step rows, %zu layer-level probe rows read (of %zu stored with "
        "heads), %zu spikes; %zu graphs, %zu points on %d plots\n",
        m.store.loaded.runs.size(), m.store.stepRows, m.store.probeRows, m.store.probeRows * 5,
        m.store.spikes, m.graphs, m.points, m.plots);
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
}

// Each plot's replot at open: the median and max over all, then per plot over the reps.
void printPerPlotReplot(const Measured& m) {
    const std::vector<double>& all = m.open.perPlotReplot;
    const Stats per = statsOf(all);
    std::printf("  replot of one plot at open: median %.1f, max %.1f\n", per.median, per.max);
    std::printf("  per plot (median over reps):");
    for (int i = 0; i < m.plots; ++i) {
        std::vector<double> v;
        for (int r = 0; r < m.reps; ++r) v.push_back(all[size_t(r * m.plots + i)]);
        std::printf(" %s %.1f%s", compareMetrics()[size_t(i)].key, statsOf(v).median,
                    i + 1 < m.plots ? "," : "\n");
    }
}

void printBreakdown(const Measured& m) {
    const Breakdown& b = m.breakdown;
    const size_t runs = m.store.loaded.runs.size();
    std::printf("\nbreakdown (medians, ms)\n");
    std::printf("  store: RunStore open %.1f, loadComparison %.1f\n",
                statsOf(m.store.openStore).median, statsOf(m.store.load).median);
    for (const auto& [k, v] : m.store.parts)
        std::printf("  store, all runs: %-28s %8.1f\n", qPrintable(k), statsOf(v).median);
    std::printf(
        "  ComparePlots::redraw (series + setData + rescale, no paint): open %.1f, "
        "smoothing on %.1f, groups on %.1f\n",
        statsOf(m.open.redrawMs).median, statsOf(m.toggles.redrawSmooth).median,
        statsOf(m.toggles.redrawGroups).median);
    std::printf("  seriesOf, 11 metrics x %zu runs (worst layer): %.1f\n", runs,
                statsOf(b.seriesMs).median);
    std::printf("  smoothed(0.6), same series: %.1f\n", statsOf(b.smoothedMs).median);
    std::printf(
        "  groupBand, 11 metrics x %zu seed groups: %.1f (one merge over the sorted "
        "series instead: %.1f, %s)\n",
        m.store.loaded.seedGroups.size(), statsOf(b.groupBandMs).median,
        statsOf(b.mergedBandMs).median, b.bandsAgree ? "same bands" : "DIFFERENT bands");
    std::printf("  addGraph + QCPGraph::setData(sorted), same series: %.1f\n",
                statsOf(b.setDataMs).median);
    std::printf("  rescaleAxes, 11 plots: %.1f\n", statsOf(b.rescaleMs).median);
    printPerPlotReplot(m);
    std::printf(
        "  event loop after an explicit replot (the queued replot again): fresh %.1f, "
        "reload %.1f\n",
        statsOf(m.open.drainFresh).median, statsOf(m.open.drainReload).median);
    const Cursor& c = m.cursor;
    std::printf(
        "  cursor sweep: %zu frames, %d plot paint events, tooltip %s (%.0f chars "
        "median, %d empty)\n",
        c.hoverFrame.size(), c.sweepPaints,
        c.emptyTexts < int(c.hoverFrame.size()) ? "shown" : "never", statsOf(c.textChars).median,
        c.emptyTexts);
}

QJsonObject whatIfsJson(const WhatIfTimes& whatIfs) {
    std::printf("\nproposals, tried on the bench's panel: replot of all 11 plots (median ms)\n");
    QJsonObject out;
    for (const auto& [name, ms] : whatIfs) {
        std::printf("  %-62s %8.1f\n", name, statsOf(ms).median);
        out[QString::fromLatin1(name)] = statsOf(ms).median;
    }
    return out;
}

// The compare_bench {...} line: every number (docs/gui-benchmarks.md quotes its keys).
QJsonObject reportJson(const Measured& m) {
    const Opening& o = m.open;
    const Cursor& c = m.cursor;
    const Toggles& g = m.toggles;
    const Breakdown& b = m.breakdown;
    return QJsonObject{
        {"platform", QGuiApplication::platformName()},
        {"qt", QString::fromLatin1(qVersion())},
        {"runs", int(m.store.loaded.runs.size())},
        {"steps", double(m.steps)},
        {"reps", m.reps},
        {"db_mib", m.dbMiB},
        {"step_rows", double(m.store.stepRows)},
        {"probe_rows_read", double(m.store.probeRows)},
        {"graphs", double(m.graphs)},
        {"points", double(m.points)},
        {"store_read_ms", toJson(statsOf(m.store.readTotal))},
        {"load_comparison_ms", toJson(statsOf(m.store.load))},
        {"set_comparison_fresh_ms", toJson(statsOf(o.setFresh))},
        {"replot_all_fresh_ms", toJson(statsOf(o.replotFresh))},
        {"open_fresh_ms", toJson(statsOf(m.openFresh))},
        {"set_comparison_reload_ms", toJson(statsOf(o.setReload))},
        {"open_reload_ms", toJson(statsOf(m.openReload))},
        {"open_app_like_ms", toJson(statsOf(m.openAppLike))},
        {"open_set_runs_curves_ms", toJson(statsOf(o.viaRunsCurves))},
        {"open_set_runs_histograms_ms", toJson(statsOf(o.viaRunsHistograms))},
        {"redraw_ms", toJson(statsOf(o.redrawMs))},
        {"replot_one_plot_ms", toJson(statsOf(o.perPlotReplot))},
        {"first_hover_ms", toJson(statsOf(o.firstHover))},
        {"first_hover_lines_precreated_ms", toJson(statsOf(o.firstHoverPrecreated))},
        {"redraw_smoothing_ms", toJson(statsOf(g.redrawSmooth))},
        {"redraw_groups_ms", toJson(statsOf(g.redrawGroups))},
        {"hover_frame_ms", toJson(statsOf(c.hoverFrame))},
        {"hover_only_ms", toJson(statsOf(c.hoverOnly))},
        {"hover_frame_smoothed_groups_ms", toJson(statsOf(c.hoverFrameBusy))},
        {"smoothing_on_ms", toJson(statsOf(g.smoothOn))},
        {"smoothing_off_ms", toJson(statsOf(g.smoothOff))},
        {"groups_on_ms", toJson(statsOf(g.groupsOn))},
        {"groups_off_ms", toJson(statsOf(g.groupsOff))},
        {"series_of_ms", toJson(statsOf(b.seriesMs))},
        {"set_data_ms", toJson(statsOf(b.setDataMs))},
        {"group_band_ms", toJson(statsOf(b.groupBandMs))},
        {"group_band_merged_ms", toJson(statsOf(b.mergedBandMs))},
    };
}

void report(const Measured& m) {
    const std::vector<Row> rows = targetRows(m);
    printTable(m, rows);
    printBreakdown(m);
    const QJsonObject whatIfs = whatIfsJson(m.whatIfs);
    QJsonObject j = reportJson(m);
    QJsonObject pass;
    for (const Row& row : rows)
        if (row.target > 0) pass[row.what] = row.value() < row.target;
    j["pass"] = pass;
    j["replot_all_what_if_ms"] = whatIfs;
    std::printf("\ncompare_bench %s\n",
                QJsonDocument(j).toJson(QJsonDocument::Compact).constData());
}

// ---- the run -----------------------------------------------------------------------------

// The panel as opened (its screenshot and exported figure when asked for) and what it draws.
void showComparison(Panel& p, const Options& o, const Comparison& loaded, Measured& m) {
    p.panel->setComparison(loaded);
    replotAll(p.plots());
    drainEvents();
    if (!o.screenshot.isEmpty()) p.panel->grab().save(o.screenshot);
    if (!o.figure.isEmpty()) {  // once, not timed as a target: an export is a user's wait
        QElapsedTimer t;
        t.start();
        QString error;
        const bool ok = p.panel->saveFigure(o.figure, &error);
        std::printf("figure %s: %s in %.0f ms, %.0f KiB\n", qPrintable(o.figure),
                    ok ? "written" : qPrintable(error), msSince(t),
                    double(QFileInfo(o.figure).size()) / 1024);
    }
    const QList<QCustomPlot*> plots = p.plots()->plots();
    m.plots = int(plots.size());
    for (QCustomPlot* plot : plots)
        for (int g = 0; g < plot->graphCount(); ++g) {
            ++m.graphs;
            m.points += size_t(plot->graph(g)->dataCount());
        }
}

Measured measure(const Options& o, const BenchDatabase& db) {
    Measured m;
    m.reps = o.reps;
    m.steps = o.steps;
    m.dbMiB = db.mib;
    m.store = timeStoreRead(db, o.reps);
    timeReadParts(db, o.reps, m.store);
    const QScreen* screen = QGuiApplication::primaryScreen();
    m.screen = screen ? screen->size() : QSize();
    timeOpening(m.store.loaded, o.reps, m.open);
    timeOpeningAsTheApp(m.store.loaded, o.reps, m.open);
    timeOpeningViaSetRuns(db, o.reps, m.open);
    Panel p(kWidth, kHeight);
    showComparison(p, o, m.store.loaded, m);
    m.panel = p.panel->size();
    timeCursor(p, o.reps, o.sweep, m.cursor);
    m.toggles = timeToggles(p, o.reps);
    timeBusyCursor(p, o.reps, o.sweep, m.cursor);
    m.whatIfs = timeWhatIfs(p, o.reps);
    m.breakdown = timeBreakdown(m.store.loaded, p.plots()->plots().front()->size(), o.reps);
    addOpeningTotals(m);
    return m;
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("qklab-compare-bench"));
    QTemporaryDir dir;
    // applyTheme() remembers the theme in QSettings: keep that out of the user's settings.
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.path());
    const std::optional<Options> options = parseOptions(app.arguments());
    if (!options) return 2;
    applyAppLook(options->theme);
    const BenchDatabase db = openDatabase(*options, dir);
    if (!options->profile.isEmpty()) return runProfile(*options, db);
    report(measure(*options, db));
    if (options->keep && options->db.isEmpty()) std::printf("kept %s\n", db.path.c_str());
    return 0;
}
