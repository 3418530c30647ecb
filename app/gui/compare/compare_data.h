// compare_data.h — the runs of a comparison as the comparison view draws them: each run's
// rows, summary and config as trained, the config diff and seed groups, and the series of
// every compared metric (one table, compareMetrics(), drives the plots, the cursor readout
// and the CSV export).
//
// loadComparison() runs on a pool thread (readStoreAsync); the rest is plain computation on
// the GUI thread.
#pragma once

#include <QColor>
#include <QString>
#include <QStringList>
#include <QVector>
#include <optional>
#include <vector>

#include "common/run_data.h"
#include "qklab/analysis/compare.h"

namespace qklab::gui {

struct CompareRun {
    RunSnapshot snap;  // config = the config as trained (interventions as events)
    RunSummary summary;
    QString label() const;  // "3 blowup" (id and name)
};

struct Comparison {
    std::vector<CompareRun> runs;
    std::vector<int64_t> missing;  // asked for but not in the store (deleted meanwhile)
    std::vector<ConfigDiffRow> diff;
    std::vector<std::vector<size_t>> seedGroups;  // indices into runs
    double loadSeconds = 0;
};

// Reads every run (a reader: never writes). Runs not found are listed in `missing`.
Comparison loadComparison(RunStore& store, const std::vector<int64_t>& runIds);

// Runs drawn as one: their mean in a min-max band, one colour (the first member's) and one
// entry in the legends. Every run is in exactly one group; a group may hold one run.
struct CurveGroup {
    std::vector<size_t> members;  // indices into Comparison::runs, ascending
    QString label;                // the legend's text, e.g. "1 a + 2 b (2 seeds)"
};

// "Group by" seeds: runs whose configs (user config included) differ only in run.seed
// (Comparison::seedGroups).
inline const char* const kGroupBySeed = "seed";

// The groups for a "Group by" choice: "" none (empty result), kGroupBySeed, or a config key
// (groupByKey: "optim.lr=0.003 (2 runs)").
std::vector<CurveGroup> curveGroups(const Comparison& c, const QString& groupBy);

// The keys a comparison can be grouped by: those whose values differ among its runs (the
// config diff's differing rows, in its order).
QStringList groupByKeys(const Comparison& c);

// When a run of the comparison was trained outside qklab: rows "source" and "user config"
// ("lr=0.03, model=llama", "" for qklab's runs) for the config diff, above qklab's keys, whose
// training settings for such a run are defaults it never trained with. None otherwise.
std::vector<ConfigDiffRow> outsideQklabRows(const Comparison& c);

// A run's colour in the curves and legends: its own (compareColor(run)) ungrouped, its group's
// when grouped.
QColor curveColor(const std::vector<CurveGroup>& groups, size_t run);

enum class CompareMetric {
    TrainLoss,
    ValLoss,
    MaxLogit,
    CappedMaxLogit,
    P99Logit,
    QNorm,
    Entropy,
    GradNorm,
    Lr,
    Alpha,
    SoftcapC,
    LogZMean,
    FirstTokenShare,
    MaxActivation
};

struct CompareMetricInfo {
    CompareMetric metric;
    const char* key;  // CSV column prefix, e.g. "max_logit_raw"
    QString title;    // plot title / readout
    // The record column plotted: a probe column (per layer) or a step-metric column
    // (qklab/store/record_columns.h), e.g. "logit_max_raw".
    const char* column;
    bool logScale;
    // Worst layer: the highest value (logits, norms) or the lowest (entropy).
    bool worstIsLowest;
};
const std::vector<CompareMetricInfo>& compareMetrics();
const CompareMetricInfo& compareMetricInfo(CompareMetric m);
// The compared metric that draws a lesson step's plot name (a record column, as the live
// plots' plotForMetric takes it): its own column, else the plot telling the same story (q_*
// and k_* the q norm, other logit_* the raw max logit, the LM head's columns mean log Z,
// update_norm the gradient norm); none for a name no compared plot draws.
std::optional<CompareMetric> compareMetricFor(const QString& lessonMetric);
// A run that never had QK-norm on (its config none, no qk_norm event): its stored alpha 0 is
// "no QK-norm", not an anneal's end, and is not drawn.
bool withoutQkNorm(const CompareRun& run);

struct Series {
    QVector<double> steps, values;  // NaN values are gaps (a diverged step)
};

// layer >= 0: that layer (empty when the run has fewer); -1: the worst layer at each step.
Series seriesOf(const CompareRun& run, CompareMetric metric, int layer);

// The custom scalars of the compared runs (what a run trained outside qklab logged besides the
// step metrics): every name any run logged, sorted; and one name's series in one run, as the
// live view's Custom scalars plot draws it (customScalarPoints), empty when it never logged it.
QStringList customScalarNames(const Comparison& c);
Series customScalarSeries(const CompareRun& run, const QString& name);

// Exponential moving average with TensorBoard's debiasing; weight 0 = the raw values. NaN
// stays NaN and does not reset the average.
QVector<double> smoothed(const QVector<double>& values, double weight);

// Mean and min-max of several runs' series, on the steps present in every one of them.
struct BandSeries {
    QVector<double> steps, mean, low, high;
};
BandSeries groupBand(const std::vector<Series>& members);

// A band's edges thinned for drawing to `columns` equal intervals of x over [lower, upper]
// (the visible range, one interval per pixel column): each interval keeps its lowest low
// and highest high, both at its first and its last x, so the fill still covers every
// point's extent (a one-step spike of one seed stays visible) and low <= high everywhere
// in between. The points next to the range are kept, so the edges reach the plot's borders.
// A band with at most 4 points per interval in view comes back whole. x is sorted, as
// groupBand's steps; the values are finite (groupBand leaves out the rest).
struct BandEdges {
    QVector<double> x, low, high;
};
BandEdges decimateBand(const QVector<double>& x, const QVector<double>& low,
                       const QVector<double>& high, double lower, double upper, int columns);

// Every metric of every run as CSV: step, then one column per (metric, run), e.g.
// "train_loss:3 blowup", then per custom scalar name one per run that logged it,
// "custom:train/acc:3 blowup". Steps missing in a run are empty cells.
QString comparisonCsv(const Comparison& c, int layer);

}  // namespace qklab::gui
