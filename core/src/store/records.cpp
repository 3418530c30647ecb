// records.cpp — RunStatus, SpikeKind and MapReason by name: their Choices tables in
// qklab/records.h are the only spelling. Readers never throw on a name they do not know (a
// foreign file, a newer qklab); the strict parsers do.
#include "qklab/records.h"

#include "qklab/error.h"
#include "util/text_util.h"

namespace qklab {

namespace {

template <class E>
E parseOrThrow(const std::string& name, const char* what) {
    if (const auto value = parseChoice<E>(name)) return *value;
    throw Error(ErrorCode::Unsupported, std::string("unknown ") + what + " '" + clipped(name) +
                                            "' (expected one of " + choiceList<E>() + ")");
}

}  // namespace

const char* toString(RunStatus s) {
    return nameOrUnknown(s);
}

RunStatus runStatusFromString(const std::string& s) {
    return parseOrThrow<RunStatus>(s, "run status");
}

RunStatus runStatusOrUnknown(const std::string& s) {
    return parseChoice<RunStatus>(s).value_or(RunStatus::Unknown);
}

const char* toString(SpikeKind k) {
    return nameOrUnknown(k);
}

const char* spikeKindTitle(SpikeKind k) {
    return titleOf(k);
}

SpikeKind spikeKindFromString(const std::string& s) {
    return parseOrThrow<SpikeKind>(s, "spike kind");
}

SpikeKind spikeKindOrUnknown(const std::string& s) {
    return parseChoice<SpikeKind>(s).value_or(SpikeKind::Unknown);
}

const char* toString(MapReason r) {
    return nameOf(r);
}

const char* mapReasonTitle(MapReason r) {
    return titleOf(r);
}

MapReason mapReasonFromString(const std::string& s) {
    // A reader never fails on a map a newer build took for a reason it does not know.
    return parseChoice<MapReason>(s).value_or(MapReason::Periodic);
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
