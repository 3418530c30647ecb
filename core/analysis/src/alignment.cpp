// alignment.cpp — see qklab/analysis/alignment.h.
#include "qklab/analysis/alignment.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "qklab/analysis/spikes.h"
#include "qklab/config/events.h"
#include "qklab/store/record_columns.h"
#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

namespace qklab {
namespace {

const std::vector<AlignKindInfo> kKinds = {
    {AlignKind::Step, "step", "step:N", "step", "step N of every run (a shared origin)"},
    {AlignKind::Threshold, "threshold", "threshold:METRIC>VALUE", "threshold",
     "the first step METRIC passes VALUE (> or <): a step metric, or a probe column on any "
     "layer (e.g. threshold:logit_max_raw>30, threshold:loss>6)"},
    {AlignKind::Spike, "spike", "spike", "first spike",
     "the first stored loss or grad-norm spike, of any kind"},
    {AlignKind::Event, "event", "event:KIND", "event",
     "the first stored event of KIND (an event kind, e.g. event:qk_norm), from the config or "
     "an intervention"},
    {AlignKind::Intervention, "intervention", "intervention", "first intervention",
     "the first intervention (an event a user made mid-run), of any kind"},
    {AlignKind::Onset, "onset", "onset", "onset",
     "the run's onset of instability: the first of the raw max logit past 30 (the intervention "
     "line), a spike, or divergence; it says which"},
};

const std::vector<int64_t> kOffsets = {-50, -10, 0, 10, 50};
const std::vector<std::string> kAlignedMetrics = {"loss", "grad_norm", "logit_max_raw"};

[[noreturn]] void badRule(const std::string& text, const std::string& why) {
    throw Error(ErrorCode::InvalidConfig,
                "align rule '" + printableText(text.substr(0, 80)) + "': " + why);
}

std::string kindNames() {
    std::string out;
    for (const auto& k : kKinds) out += (out.empty() ? "" : ", ") + std::string(k.syntax);
    return out;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

// A whole decimal integer (no sign, no spaces), or none.
std::optional<int64_t> wholeStep(const std::string& s) {
    if (s.empty() || s.size() > 18 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    return std::stoll(s);
}

std::optional<double> finiteNumber(const std::string& s) {
    if (s.empty() || s.size() > 40 || std::isspace(static_cast<unsigned char>(s[0])))
        return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

const ProbeColumn* probeColumnNamed(const std::string& name) {
    for (const auto& c : probeColumns())
        if (name == c.name) return &c;
    return nullptr;
}

const RecordColumn<StepMetrics>* stepColumnNamed(const std::string& name) {
    const auto* c = findColumn(stepMetricTable().columns, name);
    return c && isMeasurement(*c) ? c : nullptr;
}

void parseThreshold(const std::string& text, const std::string& arg, AlignRule& rule) {
    const size_t op = arg.find_first_of("<>");
    if (op == std::string::npos) badRule(text, "a threshold is METRIC>VALUE or METRIC<VALUE");
    rule.metric = arg.substr(0, op);
    rule.above = arg[op] == '>';
    const auto metrics = thresholdMetrics();
    if (std::find(metrics.begin(), metrics.end(), rule.metric) == metrics.end())
        badRule(text, "'" + printableText(rule.metric.substr(0, 40)) +
                          "' is not a metric (one of " + joined(metrics) + ")");
    const auto v = finiteNumber(arg.substr(op + 1));
    if (!v) badRule(text, "'" + printableText(arg.substr(op + 1, 40)) + "' is not a finite number");
    rule.value = *v;
}

std::string number(double v) {
    return diagnosisNumber(v);
}

// ---- the anchors --------------------------------------------------------------------------

bool passes(double v, const AlignRule& rule) {
    return rule.above ? v > rule.value : v < rule.value;  // NaN passes neither
}

Anchor thresholdAnchor(const AlignRows& rows, const AlignRule& rule) {
    const std::string sign = rule.above ? " > " : " < ";
    if (const auto* c = stepColumnNamed(rule.metric)) {
        for (const auto& m : *rows.steps) {
            const auto v = numberOf(c->get(m));
            if (v && passes(*v, rule))
                return {m.step,
                        std::string(c->title) + " " + number(*v) + sign + number(rule.value)};
        }
        return {std::nullopt, std::string(c->title) + " never" + sign + number(rule.value)};
    }
    const ProbeColumn* p = probeColumnNamed(rule.metric);  // any layer: rows are in step order
    for (const auto& row : *rows.layerProbes) {
        const double v = row.*(p->field);
        if (row.head == -1 && passes(v, rule))
            return {row.step, std::string(p->title) + " " + number(v) + sign + number(rule.value) +
                                  " (layer " + std::to_string(row.layer) + ")"};
    }
    if (rows.layerProbes->empty()) return {std::nullopt, "no probes stored"};
    return {std::nullopt, std::string(p->title) + " never" + sign + number(rule.value)};
}

Anchor spikeAnchor(const AlignRows& rows) {
    const Spike* first = nullptr;
    for (const auto& s : *rows.spikes)
        if (!first || s.step < first->step) first = &s;
    if (!first) return {std::nullopt, "no spike stored"};
    return {first->step, "spike in " + printableText(first->metric.substr(0, 40)) + " (z " +
                             number(first->zScore) + ")"};
}

Anchor eventAnchor(const AlignRows& rows, const AlignRule& rule, bool userOnly) {
    const EventRecord* first = nullptr;
    for (const auto& e : *rows.events) {
        const bool match = userOnly ? e.source == "user" : e.kind == rule.eventKind;
        if (match && (!first || e.step < first->step)) first = &e;
    }
    if (!first)
        return {std::nullopt,
                userOnly ? "no intervention stored" : "no " + rule.eventKind + " event stored"};
    const std::string label = eventLabel(first->kind, first->paramsJson);
    return {first->step, (first->source == "user" ? "intervention " : "event ") +
                             printableText(label.substr(0, 60))};
}

// The first step whose loss or grad norm is not finite; a diverged run that stored no such row
// diverged at its last step.
Anchor divergenceAnchor(const AlignRows& rows) {
    for (const auto& m : *rows.steps)
        if (!std::isfinite(m.loss) || !std::isfinite(m.gradNorm))
            return {m.step, std::string("diverged (") +
                                (std::isfinite(m.loss) ? "grad norm" : "loss") + " not finite)"};
    if (rows.info && rows.info->status == RunStatus::Diverged && rows.info->stepsDone > 0)
        return {rows.info->stepsDone - 1, "diverged"};
    return {std::nullopt, "did not diverge"};
}

Anchor onsetAnchor(const AlignRows& rows) {
    AlignRule line;
    line.kind = AlignKind::Threshold;
    line.metric = "logit_max_raw";
    line.value = rows.interveneMaxLogit;
    const Anchor candidates[] = {thresholdAnchor(rows, line), spikeAnchor(rows),
                                 divergenceAnchor(rows)};
    const Anchor* first = nullptr;
    for (const Anchor& a : candidates)  // ties: the first in this order
        if (a.step && (!first || *a.step < *first->step)) first = &a;
    if (!first)
        return {std::nullopt, "no onset: raw max logit never past " +
                                  number(rows.interveneMaxLogit) + ", no spike, did not diverge"};
    return {first->step, "onset: " + first->what};
}

}  // namespace

const std::vector<AlignKindInfo>& alignKinds() {
    return kKinds;
}

const AlignKindInfo& alignKindInfo(AlignKind kind) {
    for (const auto& k : kKinds)
        if (k.kind == kind) return k;
    throw Error(ErrorCode::Internal, "no align kind");
}

std::vector<std::string> thresholdMetrics() {
    std::vector<std::string> out;
    for (const auto& c : stepMetricTable().columns)
        if (isMeasurement(c)) out.emplace_back(c.name);
    for (const auto& c : probeColumns()) out.emplace_back(c.name);
    return out;
}

std::string thresholdMetricTitle(const std::string& metric) {
    if (const auto* c = stepColumnNamed(metric)) return c->title;
    if (const auto* p = probeColumnNamed(metric)) return p->title;
    return metric;
}

AlignRule parseAlignRule(const std::string& text) {
    const size_t colon = text.find(':');
    const std::string name = text.substr(0, colon);
    const std::string arg = colon == std::string::npos ? "" : text.substr(colon + 1);
    const AlignKindInfo* info = nullptr;
    for (const auto& k : kKinds)
        if (name == k.name) info = &k;
    if (!info) badRule(text, "not a rule (one of " + kindNames() + ")");
    AlignRule rule;
    rule.kind = info->kind;
    const bool takesArg = std::string(info->syntax).find(':') != std::string::npos;
    if (takesArg != (colon != std::string::npos))
        badRule(text, std::string("write it as ") + info->syntax);
    if (rule.kind == AlignKind::Step) {
        const auto step = wholeStep(arg);
        if (!step) badRule(text, "'" + printableText(arg.substr(0, 40)) + "' is not a step >= 0");
        rule.step = *step;
    } else if (rule.kind == AlignKind::Threshold) {
        parseThreshold(text, arg, rule);
    } else if (rule.kind == AlignKind::Event) {
        if (!findEventKind(arg)) {
            std::vector<std::string> kinds;
            for (const auto& k : eventKinds()) kinds.push_back(k.name);
            badRule(text, "'" + printableText(arg.substr(0, 40)) +
                              "' is not an event kind (one of " + joined(kinds) + ")");
        }
        rule.eventKind = arg;
    }
    return rule;
}

std::string alignRuleText(const AlignRule& rule) {
    const std::string name = alignKindInfo(rule.kind).name;
    switch (rule.kind) {
        case AlignKind::Step:
            return name + ":" + std::to_string(rule.step);
        case AlignKind::Threshold:
            return name + ":" + rule.metric + (rule.above ? ">" : "<") + number(rule.value);
        case AlignKind::Event:
            return name + ":" + rule.eventKind;
        case AlignKind::Spike:
        case AlignKind::Intervention:
        case AlignKind::Onset:
            break;
    }
    return name;
}

std::string alignAnchorName(const AlignRule& rule) {
    switch (rule.kind) {
        case AlignKind::Step:
            return "step " + std::to_string(rule.step);
        case AlignKind::Threshold:
            return rule.metric + (rule.above ? " > " : " < ") + number(rule.value);
        case AlignKind::Event:
            return "first " + rule.eventKind + " event";
        case AlignKind::Spike:
        case AlignKind::Intervention:
        case AlignKind::Onset:
            break;
    }
    return alignKindInfo(rule.kind).title;
}

Anchor findAnchor(const AlignRows& rows, const AlignRule& rule) {
    switch (rule.kind) {
        case AlignKind::Step: {
            const bool stored =
                std::any_of(rows.steps->begin(), rows.steps->end(),
                            [&](const StepMetrics& m) { return m.step == rule.step; });
            if (!stored) return {std::nullopt, "step " + std::to_string(rule.step) + " not stored"};
            return {rule.step, "step " + std::to_string(rule.step)};
        }
        case AlignKind::Threshold:
            return thresholdAnchor(rows, rule);
        case AlignKind::Spike:
            return spikeAnchor(rows);
        case AlignKind::Event:
            return eventAnchor(rows, rule, false);
        case AlignKind::Intervention:
            return eventAnchor(rows, rule, true);
        case AlignKind::Onset:
            return onsetAnchor(rows);
    }
    return {std::nullopt, "unknown rule"};
}

Anchor findAnchor(RunStore& store, int64_t runId, const AlignRule& rule) {
    const RunInfo info = store.run(runId);
    const auto steps = store.stepMetrics(runId);
    const auto probes = store.probeStats(runId, -1);
    const auto spikes = store.spikes(runId);
    const auto events = store.events(runId);
    return findAnchor(AlignRows{&info, &steps, &probes, &spikes, &events}, rule);
}

const std::vector<int64_t>& alignedOffsets() {
    return kOffsets;
}

const std::vector<std::string>& alignedMetrics() {
    return kAlignedMetrics;
}

std::optional<double> metricAtStep(const AlignRows& rows, const std::string& metric, int64_t step) {
    if (const auto* c = stepColumnNamed(metric)) {
        for (const auto& m : *rows.steps)
            if (m.step == step) return numberOf(c->get(m));
        return std::nullopt;
    }
    const ProbeColumn* p = probeColumnNamed(metric);
    if (!p || rows.steps->empty() || step < 0 || step > rows.steps->back().step)
        return std::nullopt;
    std::optional<int64_t> probeStep;  // the latest probe at or before `step`
    for (const auto& row : *rows.layerProbes)
        if (row.head == -1 && row.step <= step && (!probeStep || row.step > *probeStep))
            probeStep = row.step;
    if (!probeStep) return std::nullopt;
    double best = -std::numeric_limits<double>::infinity();
    for (const auto& row : *rows.layerProbes)
        if (row.head == -1 && row.step == *probeStep && !std::isnan(row.*(p->field)))
            best = std::max(best, row.*(p->field));
    return std::isinf(best) && best < 0 ? std::nullopt : std::optional<double>(best);
}

}  // namespace qklab
