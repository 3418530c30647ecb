// generate_source.cpp — see qklab/analysis/generate_source.h.
#include "qklab/analysis/generate_source.h"

#include <filesystem>

#include "qklab/analysis/compare.h"
#include "qklab/util/error.h"

namespace qklab {

std::optional<CheckpointInfo> newestExistingCheckpoint(RunStore& store, int64_t runId,
                                                       std::string* why) {
    std::optional<CheckpointInfo> best;
    std::string missing, refused;
    const auto all = store.checkpoints(runId);
    for (const CheckpointInfo& c : all) {
        std::error_code ec;
        if (c.path.empty()) {  // a stored path outside the database's checkpoint folder
            if (refused.empty()) refused = c.refused;
            continue;
        }
        if (!std::filesystem::is_regular_file(c.path, ec)) {
            if (missing.empty()) missing = c.path;
            continue;
        }
        if (!best || c.step > best->step) best = c;
    }
    if (!best && why) {
        if (all.empty())
            *why =
                "none was saved (a run saves one when it finishes or is stopped, and every "
                "run.checkpoint_seconds while it trains)";
        else if (missing.empty())
            *why = refused;
        else
            *why = "its " + std::to_string(all.size()) + " checkpoint file" +
                   (all.size() == 1 ? " is" : "s are") + " gone (" + printableText(missing) + ")";
    }
    return best;
}

GenerationSource generationSource(RunStore& store, int64_t runId) {
    GenerationSource s;
    s.run = store.run(runId);
    if (trainedOutsideQklab(s.run))
        throw Error(ErrorCode::InvalidRequest, outsideQklabReason(s.run, "generate from"));
    std::string why;
    const auto checkpoint = newestExistingCheckpoint(store, runId, &why);
    if (!checkpoint)
        throw Error(ErrorCode::NotFound,
                    "run " + std::to_string(runId) + " has no checkpoint: " + why);
    s.checkpoint = *checkpoint;
    s.config = configAsTrained(s.run, /*strict=*/true);
    return s;
}

}  // namespace qklab
