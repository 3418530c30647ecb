// alignment.h — runs aligned at their own events (issue 40, item 4): for each compared run the
// step of an anchor (a step, the first step a metric passes a value, the first spike, the first
// event of a kind, the first intervention, or the run's onset of instability), so that a
// comparison's x axis becomes "steps from the anchor". `qklab-cli compare --align` and the
// app's "Align at" chooser both read this; torch-free.
//
// The kinds of rule are one table (alignKinds()): the CLI's parser and help, the app's chooser
// and docs/COMPARE.md iterate it, so a new kind is added there once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qklab/analysis/spikes.h"
#include "qklab/store/records.h"
#include "qklab/store/run_store.h"

namespace qklab {

enum class AlignKind { Step, Threshold, Spike, Event, Intervention, Onset };

struct AlignKindInfo {
    AlignKind kind;
    const char* name;    // the rule's first word, e.g. "threshold"
    const char* syntax;  // the whole rule as written, e.g. "threshold:METRIC>VALUE"
    const char* title;   // the chooser's entry, e.g. "threshold"
    const char* help;    // what the anchor is, one line
};
// In the chooser's order.
const std::vector<AlignKindInfo>& alignKinds();
const AlignKindInfo& alignKindInfo(AlignKind kind);

// One alignment rule, as parsed from its text.
struct AlignRule {
    AlignKind kind = AlignKind::Spike;
    int64_t step = 0;       // step:N
    std::string metric;     // threshold: a step-metric or probe column name (thresholdMetrics())
    bool above = true;      // threshold: METRIC>VALUE (true) or METRIC<VALUE
    double value = 0;       // threshold
    std::string eventKind;  // event:KIND, an eventKinds() name
};

// The metrics a threshold can name: the step metrics that are measurements (loss, grad_norm,
// ...; stepMetricTable()) then the probe columns (logit_max_raw, ...; probeColumns()), a probe
// column read as its largest value over the layers at each probed step.
std::vector<std::string> thresholdMetrics();
// A threshold metric's title ("training loss", "raw max logit"); the name itself otherwise.
std::string thresholdMetricTitle(const std::string& metric);

// Parses "step:N", "threshold:METRIC>VALUE" (or <), "spike", "event:KIND", "intervention" or
// "onset". Throws Error{InvalidConfig} naming the whole text and the part that is wrong.
AlignRule parseAlignRule(const std::string& text);
// The rule written back as parseAlignRule reads it ("threshold:loss>4").
std::string alignRuleText(const AlignRule& rule);
// What the x axis counts from, for axis titles: "first spike", "step 300", "loss > 4",
// "first qk_norm event", "first intervention", "onset".
std::string alignAnchorName(const AlignRule& rule);

// A run's rows the anchor is read from (not owned): what the store returns for the run.
struct AlignRows {
    const RunInfo* info = nullptr;
    const std::vector<StepMetrics>* steps = nullptr;       // store.stepMetrics(id)
    const std::vector<ProbeStats>* layerProbes = nullptr;  // store.probeStats(id, -1)
    const std::vector<Spike>* spikes = nullptr;            // store.spikes(id)
    const std::vector<EventRecord>* events = nullptr;      // store.events(id)
    // The onset's logit line: the run's alarms.intervene once configs have one (issue 40,
    // item 1); the domain brief's intervention line until then.
    double interveneMaxLogit = kInterveneMaxLogit;
};

// A run's anchor: its step, and what happened there ("spike in loss (z 7.2)"); or no step and
// why not ("no spike stored"). onset also says which of its three came first.
struct Anchor {
    std::optional<int64_t> step;
    std::string what;
};

// The anchor of one run under `rule`: the first stored row that meets it (by step). A reader:
// rows from a hostile file are read as they are (NaN passes no threshold).
Anchor findAnchor(const AlignRows& rows, const AlignRule& rule);
// The same from the store (reads the run's rows; never writes). Throws Error{NotFound}.
Anchor findAnchor(RunStore& store, int64_t runId, const AlignRule& rule);

// The values an engineer comparing blow-ups reads at steps from the anchor: the training loss,
// the grad norm and the raw max logit (the latest probe at or before the step, max over layers),
// at each of alignedOffsets().
const std::vector<int64_t>& alignedOffsets();
const std::vector<std::string>& alignedMetrics();
// One metric's value at `step` (a threshold metric, the same reading), or none when that step
// was not stored (a probe metric: no probe at or before it, or the run ended before the step).
std::optional<double> metricAtStep(const AlignRows& rows, const std::string& metric, int64_t step);

}  // namespace qklab
