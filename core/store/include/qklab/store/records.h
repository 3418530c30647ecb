// qklab/store/records.h — plain data that leaves the engine: per-step metrics, probe statistics,
// histograms, spikes and events. The trainer produces them, the store persists them, the GUI
// plots them. No torch types here.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qklab/util/choices.h"

namespace qklab {

// The names of RunStatus, SpikeKind and MapReason are stored in the database, shown by the CLI
// and written in JSON: part of the file format, never rename one.

// Unknown: a stored status this build has no name for (a hand-edited or foreign file, a newer
// qklab). Readers show it as "unknown" and keep going; nothing ever writes it.
enum class RunStatus { Running, Finished, Diverged, Stopped, Interrupted, Failed, Unknown };
template <>
struct Choices<RunStatus> {  // Unknown has no name
    static constexpr std::array<const char*, 6> names{"running", "finished",    "diverged",
                                                      "stopped", "interrupted", "failed"};
};
const char* toString(RunStatus s);                    // Unknown -> "unknown"
RunStatus runStatusFromString(const std::string& s);  // throws Error on an unknown name
RunStatus runStatusOrUnknown(const std::string& s);   // what readers use: never throws

struct StepMetrics {
    int64_t step = 0;
    double loss = 0;                // training loss of this step's batch (nats/token)
    std::optional<double> valLoss;  // when validation ran at this step
    double gradNorm = 0;            // global L2 norm before clipping
    double lr = 0;                  // LR used for this step (schedule x multipliers)
    double alpha = 1;               // QK-norm anneal weight (1 = fully normed)
    double softcapC = 0;            // attention softcap width in effect (0 = none)
    int64_t seqLen = 0;             // context length in effect
    double tokensPerSec = 0;
    std::string attentionPath;  // "fused" or "explicit" kernel; empty = not recorded
    // Output-logit divergence (Wortsman et al. 2023), from the training forward's logits in
    // fp32 after the output softcap. log Z = logsumexp over the vocabulary of one token's
    // logits; the z-loss adds optim.z_loss x zLossTerm to the loss. NaN: an older file.
    double logZMean = 0, logZMax = 0;  // mean and max of log Z over the step's tokens
    double outLogitMax = 0;            // the largest output logit
    double zLossTerm = 0;              // mean(log Z^2), before the z-loss coefficient
    double updateNorm = 0;             // global L2 norm of the optimizer's parameter update
    // ||mu||, mu the mean row of the output embedding (the LM head's weight, or the token
    // embedding when tied), before this step's update: the mean output logit is mu . h
    // (Stollenwerk et al. 2026; optim.output_centring). NaN: an older file.
    double muNorm = 0;
};

// Attention statistics of one layer and head at one probed step. head = -1 is the whole layer.
// Every statistic is a column of probeColumns() below; code that stores, reads or exports
// probes iterates that table rather than naming the fields.
struct ProbeStats {
    int64_t step = 0;
    int32_t layer = 0;
    int32_t head = -1;
    double logitMaxRaw = 0, logitP99Raw = 0, logitMeanRaw = 0;  // before softcap
    double logitMaxCapped = 0, logitP99Capped = 0, logitMeanCapped = 0;
    double qNormP90 = 0, kNormP90 = 0;        // L2 norms of q, k as they enter the dot product
    double qRawNormP90 = 0, kRawNormP90 = 0;  // ... and straight out of the projections
    double entropy = 0;                       // mean attention entropy per query row (nats)
    double fracAtCap = 0;                     // share of raw logits with |logit| >= C
    // The attention sink: the mean softmax weight on key position 0 over query rows 1..T-1
    // (row 0 can attend nowhere else). The layer row is the mean over its heads.
    double firstTokenShare = 0;
    // The massive activations: the largest |value| of the layer's output (the residual stream
    // after the block). A layer statistic: head rows hold NaN, and so do layers whose block
    // output was not handed over (the Python package, where it finds no block).
    double maxActivation = 0;
};

// One probe statistic: its name in the store, JSON and CSV, what views and messages call it,
// what it means, its field, and the schema version it arrived in. The other stored records
// have the same in qklab/store/record_columns.h.
struct ProbeColumn {
    const char* name;   // e.g. "logit_max_raw"
    const char* title;  // e.g. "raw max logit"
    const char* help;
    double ProbeStats::*field;
    int since = 1;  // a reader of an older file reads the column as NaN
};

// In store order (the probe_stats table's columns after run_id, step, layer, head).
const std::vector<ProbeColumn>& probeColumns();

// Histogram of raw logits over fixed edges: bins equal-width over [lo, hi] in the configured
// scale (linear, or symlog = sign(x)*log10(1+|x|)); values outside land in under/overflow
// (-inf and +inf too), and NaN logits are counted apart in `nan`, never in a bin.
struct LogitHistogram {
    int64_t step = 0;
    int32_t layer = 0;
    int32_t head = -1;
    std::vector<int64_t> counts;
    int64_t underflow = 0, overflow = 0;
    int64_t nan = 0;
};

// Why a map was taken: on the schedule (probes.attn_map_every), or at a moment a collapse
// between two scheduled maps would otherwise hide (a run that collapsed between
// steps 10 and 45 had no map of it). The name is stored; the title is what views show.
enum class MapReason { Periodic, LogitAlarm, BeforeEvent, AfterEvent };
template <>
struct Choices<MapReason> {
    static constexpr std::array<const char*, 4> names{"periodic", "logit_alarm", "before_event",
                                                      "after_event"};
    static constexpr std::array<const char*, 4> titles{
        "on the map schedule", "first probe with the raw max logit past the intervention line",
        "just before an event (old settings, same weights)", "the step of an event (new settings)"};
};
const char* toString(MapReason r);
const char* mapReasonTitle(MapReason r);
MapReason mapReasonFromString(const std::string& s);  // unknown names read as Periodic

// Softmax matrix of one sample sequence (row = query, column = key), for one layer and head.
struct AttentionMap {
    int64_t step = 0;
    int32_t layer = 0;
    int32_t head = 0;
    int32_t size = 0;            // T (rows = columns)
    std::vector<float> weights;  // row-major size x size
    std::string tokens;          // the input bytes at positions 0..size-1 (empty: not stored)
    MapReason reason = MapReason::Periodic;
};

// The diagnosis's verdicts (see spikes.h). The name is stored; the title is what views show.
// Unknown, as for RunStatus: a stored kind this build has no name for, read as "unknown".
// RunChange: a change the run made to itself just before (an event, an anneal; see
// spike_causes.h) is the likeliest cause, whatever the probes look like.
// OutputLogits: attention shows nothing while the LM head's log Z or max output logit jumped
// (Wortsman et al.'s second instability, output-logit divergence).
enum class SpikeKind {
    QkRunaway,
    TokenSpike,
    DataOrAccumulation,
    HighLogits,
    RunChange,
    OutputLogits,
    Unknown
};
template <>
struct Choices<SpikeKind> {  // Unknown has no name
    static constexpr std::array<const char*, 6> names{"qk_runaway",           "token_spike",
                                                      "data_or_accumulation", "high_logits",
                                                      "run_change",           "output_logits"};
    static constexpr std::array<const char*, 6> titles{
        "Q/K length runaway",   "token/position spike", "data or accumulation bug",
        "logits high, no jump", "a change in the run",  "output-logit divergence"};
};
const char* toString(SpikeKind k);
const char* spikeKindTitle(SpikeKind k);
SpikeKind spikeKindFromString(const std::string& s);  // throws Error on an unknown name
SpikeKind spikeKindOrUnknown(const std::string& s);   // what readers use: never throws

struct Spike {
    int64_t step = 0;
    std::string metric;  // "loss" or "grad_norm"
    double value = 0, zScore = 0;
    SpikeKind kind = SpikeKind::DataOrAccumulation;
    int tier = 1;            // prescription tier 1..4 (domain brief section 4)
    int64_t probeStep = -1;  // the probe the diagnosis was read from (-1: none)
    double probeMaxLogit = 0, baselineMaxLogit = 0;
    double probeQkNorm = 0, baselineQkNorm = 0;
    std::string diagnosis;  // one paragraph a user can read
};

// The step whose report carries a spike: the first probe at or after it, which the trainer
// waits for to diagnose it, or its own step when it read an older probe (or none). A replay
// hands a spike to a lesson at this step, as the live run did.
int64_t spikeReportStep(const Spike& s);

// The first probe at which one layer's raw logits passed one of the domain brief's
// intervention lines (max > 30, p99 > 15), diagnosed with the spike rules. A blow-up is a
// plateau, not a loss spike: these alarms are what says that something happened.
struct LogitAlarm {
    int64_t step = 0;
    int32_t layer = 0;
    std::string metric;  // the probe column: "logit_max_raw" or "logit_p99_raw"
    double value = 0, threshold = 0;
    SpikeKind kind = SpikeKind::HighLogits;  // qk_runaway when q/k lengths grew, else high_logits
    int tier = 2;
    std::string text;  // one paragraph written from the numbers
};

// What an onset of instability is (qklab/analysis/onsets.h): the raw max logit past the
// intervention line, a loss or grad-norm spike, or a non-finite loss. Unknown, as for SpikeKind.
enum class OnsetKind { MaxLogit, LossSpike, GradSpike, Divergence, Unknown };
template <>
struct Choices<OnsetKind> {  // Unknown has no name
    static constexpr std::array<const char*, 4> names{"max_logit", "loss_spike", "grad_spike",
                                                      "divergence"};
};

// A warning that an onset is coming (qklab/analysis/forecast.h): at `step`, the fitted growth of
// `metric` (a probe column) in layer `layer` (head `head`, -1 = the whole layer) reaches
// `threshold` at `predictedStep` if it keeps its rate.
struct Forecast {
    int64_t step = 0;
    OnsetKind kind = OnsetKind::MaxLogit;
    int32_t layer = 0;
    int32_t head = -1;
    std::string metric;  // "logit_max_raw"
    double value = 0, threshold = 0;
    double rate = 0;  // fitted growth per step of the log of the value
    int64_t predictedStep = 0;
    std::string text;  // "at this rate the raw max logit of layer 1 passes 30 in about 40 steps"
};

// What one change to a run (an event or intervention after step 0) did: the training loss, the
// attention entropy and the max logit softmax sees, over the kChangeReportSteps steps from the
// change on against as many before it (qklab/analysis/change_reports.h). NaN: not measured (no
// probe in a window).
struct ChangeReport {
    int64_t step = 0;                      // the change's step
    std::string kind;                      // its event kind, e.g. "softcap"
    int64_t reportStep = 0;                // the last step measured after it
    double lossBefore = 0, lossAfter = 0;  // mean training loss of the steps before, after
    // What the steps before led to expect after (their least-squares line), and the after mean
    // against it in spreads of the steps before around that line.
    double lossExpected = 0, lossZ = 0;
    double entropyBefore = 0, entropyAfter = 0;
    double maxLogitBefore = 0, maxLogitAfter = 0;
    bool moved = false;  // a measure moved beyond its noise (changeMoved)
    std::string text;    // one paragraph with the numbers
};

// One QK-Clip (Kimi K2's MuonClip, attention.qk_clip): after the optimizer update of `step`,
// head `head` of layer `layer` reached sMax = s * max_ij(q_i . k_j) > tau on the step's batch,
// so its head-specific query and key weights were each scaled by `factor` = sqrt(tau / sMax)
// (its logits by factor^2 = tau / sMax; under MLA see docs/CONFIG.md for which weights).
struct QkClip {
    int64_t step = 0;
    int32_t layer = 0;
    int32_t head = 0;
    double sMax = 0;
    double factor = 1;
};

// A scalar a run logged that is not one of qklab's step metrics (a run trained outside qklab,
// logged through the Python package: "tokens_seen", "mfu", ...). One per name and step.
struct CustomScalar {
    int64_t step = 0;
    std::string name;
    double value = 0;
};

struct EventRecord {
    int64_t step = 0;
    std::string kind;
    std::string paramsJson;
    std::string source = "config";  // config | user (an intervention)
};

struct CheckpointInfo {
    int64_t step = 0;  // the step a resumed run starts at
    // The file. RunStore::checkpoints resolves the stored path inside the database's own
    // checkpoint folder (qklab/store/run_store.h); a stored path that points anywhere else reads as
    // "" with `refused` saying why, so that no caller can open or delete a foreign file.
    std::string path;
    std::string refused;
};

// A checkpoints row as stored: the path relative to the database's checkpoint folder (or as an
// older build or another file stored it), and when it was written. Only the store reads it;
// everyone else gets CheckpointInfo.
struct StoredCheckpoint {
    int64_t step = 0;
    std::string path;
    std::string createdAt;
};

}  // namespace qklab
