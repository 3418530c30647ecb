// records.cpp — names of RunStatus and SpikeKind as stored in the database, shown by the CLI
// and written in JSON. The names are part of the file format: never rename one.
#include "qklab/records.h"

#include <iterator>

#include "qklab/error.h"
#include "util/text_util.h"

namespace qklab {

namespace {

struct StatusName {
    RunStatus status;
    const char* name;
};

constexpr StatusName kStatusNames[] = {
    {RunStatus::Running, "running"},         {RunStatus::Finished, "finished"},
    {RunStatus::Diverged, "diverged"},       {RunStatus::Stopped, "stopped"},
    {RunStatus::Interrupted, "interrupted"}, {RunStatus::Failed, "failed"},
};

struct KindName {
    SpikeKind kind;
    const char* name;
    const char* title;
};

constexpr KindName kKindNames[] = {
    {SpikeKind::QkRunaway, "qk_runaway", "Q/K length runaway"},
    {SpikeKind::TokenSpike, "token_spike", "token/position spike"},
    {SpikeKind::DataOrAccumulation, "data_or_accumulation", "data or accumulation bug"},
    {SpikeKind::HighLogits, "high_logits", "logits high, no jump"},
};

struct MapReasonName {
    MapReason reason;
    const char* name;
    const char* title;
};

constexpr MapReasonName kMapReasons[] = {
    {MapReason::Periodic, "periodic", "on the map schedule"},
    {MapReason::LogitAlarm, "logit_alarm",
     "first probe with the raw max logit past the intervention line"},
    {MapReason::BeforeEvent, "before_event", "just before an event (old settings, same weights)"},
    {MapReason::AfterEvent, "after_event", "the step of an event (new settings)"},
};

template <typename Table>
std::string allNames(const Table& table) {
    std::string out;
    for (const auto& entry : table) {
        if (!out.empty()) out += ", ";
        out += entry.name;
    }
    return out;
}

}  // namespace

const char* toString(RunStatus s) {
    for (const auto& entry : kStatusNames)
        if (entry.status == s) return entry.name;
    return "unknown";
}

RunStatus runStatusFromString(const std::string& s) {
    if (const RunStatus status = runStatusOrUnknown(s); status != RunStatus::Unknown) return status;
    throw Error(ErrorCode::Unsupported, "unknown run status '" + clipped(s) +
                                            "' (expected one of " + allNames(kStatusNames) + ")");
}

RunStatus runStatusOrUnknown(const std::string& s) {
    for (const auto& entry : kStatusNames)
        if (s == entry.name) return entry.status;
    return RunStatus::Unknown;
}

const char* toString(SpikeKind k) {
    for (const auto& entry : kKindNames)
        if (entry.kind == k) return entry.name;
    return "unknown";
}

const char* spikeKindTitle(SpikeKind k) {
    for (const auto& entry : kKindNames)
        if (entry.kind == k) return entry.title;
    return "unknown";
}

SpikeKind spikeKindFromString(const std::string& s) {
    if (const SpikeKind kind = spikeKindOrUnknown(s); kind != SpikeKind::Unknown) return kind;
    throw Error(ErrorCode::Unsupported, "unknown spike kind '" + clipped(s) +
                                            "' (expected one of " + allNames(kKindNames) + ")");
}

SpikeKind spikeKindOrUnknown(const std::string& s) {
    for (const auto& entry : kKindNames)
        if (s == entry.name) return entry.kind;
    return SpikeKind::Unknown;
}

const char* toString(MapReason r) {
    for (const auto& entry : kMapReasons)
        if (entry.reason == r) return entry.name;
    return "periodic";
}

const char* mapReasonTitle(MapReason r) {
    for (const auto& entry : kMapReasons)
        if (entry.reason == r) return entry.title;
    return "";
}

MapReason mapReasonFromString(const std::string& s) {
    // A reader never fails on a map a newer build took for a reason it does not know.
    for (const auto& entry : kMapReasons)
        if (s == entry.name) return entry.reason;
    return MapReason::Periodic;
}

const std::vector<ProbeColumn>& probeColumns() {
    static const std::vector<ProbeColumn> columns{
        {"logit_max_raw", "max attention logit before the softcap", &ProbeStats::logitMaxRaw},
        {"logit_p99_raw", "99th percentile of the logits before the softcap",
         &ProbeStats::logitP99Raw, ProbeColumn::Percentile::OverLogits},
        {"logit_mean_raw", "mean logit before the softcap", &ProbeStats::logitMeanRaw},
        {"logit_max_capped", "max logit after the softcap (what softmax sees)",
         &ProbeStats::logitMaxCapped},
        {"logit_p99_capped", "99th percentile after the softcap", &ProbeStats::logitP99Capped,
         ProbeColumn::Percentile::OverLogits},
        {"logit_mean_capped", "mean logit after the softcap", &ProbeStats::logitMeanCapped},
        {"q_norm_p90", "90th percentile of |q| as it enters the dot product", &ProbeStats::qNormP90,
         ProbeColumn::Percentile::OverTokens},
        {"k_norm_p90", "90th percentile of |k| as it enters the dot product", &ProbeStats::kNormP90,
         ProbeColumn::Percentile::OverTokens},
        {"q_raw_norm_p90", "90th percentile of |q| straight out of the projection",
         &ProbeStats::qRawNormP90, ProbeColumn::Percentile::OverTokens},
        {"k_raw_norm_p90", "90th percentile of |k| straight out of the projection",
         &ProbeStats::kRawNormP90, ProbeColumn::Percentile::OverTokens},
        {"entropy", "mean attention entropy per query row (nats)", &ProbeStats::entropy},
        {"frac_at_cap", "share of raw logits with |logit| >= C", &ProbeStats::fracAtCap},
    };
    return columns;
}

}  // namespace qklab
