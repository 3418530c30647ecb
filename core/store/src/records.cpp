// records.cpp — RunStatus, SpikeKind and MapReason by name: their Choices tables in
// qklab/store/records.h are the only spelling. Readers never throw on a name they do not know (a
// foreign file, a newer qklab); the strict parsers do.
#include "qklab/store/records.h"

#include <algorithm>

#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

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

int64_t spikeReportStep(const Spike& s) {
    return std::max(s.step, s.probeStep);
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

}  // namespace qklab
