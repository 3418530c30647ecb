// qklab/config/sweep.h — a sweep file, the grid of run configs it stands for, and the numbers a
// learning-rate sweep is summarised by (Wortsman et al. 2023; domain brief section 7).
//
// A sweep file is JSON:
//   {"why": "...", "base": "preset.json" | {inline preset},
//    "axes": {"optim.lr": {"log": [3e-4, 3e-1], "points": 7},
//             "attention.qk_norm": ["none", "rms_affine"]},
//    "zip": [["a", "b"]], "seeds": [1, 2, 3], "set": {"schedule.steps": 400}}
// The grid is the product of the axes (a zip group moves its axes together, as one dimension)
// and the seeds. Every point's config is built and validated before anything runs. Torch-free.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "qklab/config/run_config.h"

namespace qklab {

struct SweepAxis {
    std::string key;                     // a dotted config key ("run.seed" for the seeds)
    std::vector<nlohmann::json> values;  // the grid values, in order
};

struct SweepDefinition {
    std::string name;  // the sweep's name in the store (default: the file's stem)
    std::string uuid;  // the same in every shard of a Slurm sweep; set when first stored
    std::string why;
    nlohmann::json base = nlohmann::json::object();  // the whole base preset, inlined
    std::vector<SweepAxis> axes;                     // sorted by key; seeds (if any) last
    std::vector<std::vector<std::string>> zips;      // axis keys that move together
    std::vector<int64_t> seeds;
    nlohmann::json set = nlohmann::json::object();  // dotted key -> value, on every point

    // The grid's size: the product of dimensionSizes(), SIZE_MAX when it exceeds 64 bits.
    size_t pointCount() const;
    // Each dimension's number of values: a zip group, each other axis (in file order), seeds.
    std::vector<size_t> dimensionSizes() const;
};

// One grid point: its index (0-based, stable for a definition), coordinates (dotted key ->
// value, the seed as "run.seed") and validated config.
struct SweepPoint {
    int64_t index = 0;
    nlohmann::json coords = nlohmann::json::object();
    RunConfig config;
};

constexpr size_t kMaxSweepPoints = 10000;

// Parses a sweep file's text. `sourcePath` resolves a "base" file name (relative to the
// sweep file's folder, then as given) and names the file in errors. Throws
// Error{InvalidConfig} naming the field and value. The result is normalised: the base is
// inlined, grids are expanded into value lists.
SweepDefinition parseSweep(const std::string& text, const std::string& sourcePath);
// `sweep --twins`: every point twice from the same seed, with the skip-step policy the sweep
// turns on (optim.skip_step in its set or base) and without it: an axis optim.skip_step =
// [off, policy], after the others. forecast-report pairs each policy run with its "off" twin.
// Throws Error{InvalidRequest} when the sweep turns no policy on or already has that axis.
void addTwinsAxis(SweepDefinition& d);
// Through readInputFile (qklab/util/input_file.h): MissingFile when absent, InvalidConfig for a
// special file or one over kSweepFile's limit. The name defaults to the file's stem (callers
// check it with checkSweepName once --name has had its say).
SweepDefinition loadSweepFile(const std::string& path);

// A sweep's name follows the run-name rule (qklab/config/names.h: not empty, at most 200 bytes,
// UTF-8 without control or bidi characters): it is stored, starts every point's run name and is
// written into a Slurm script. Throws Error{InvalidRequest} saying "a sweep name ...".
void checkSweepName(const std::string& name);
SweepDefinition loadSweepFile(const std::string& path);  // MissingFile when unreadable
// A definition read back from a database (sweeps.definition_json): stored definitions are
// normalised, so a "base" that names a file is refused rather than read (a file from someone
// else must not make qklab read /dev/zero or a private file), and the text may be at most
// kMaxStoredJsonBytes. `origin` names the sweep in errors; Error{NotQklabDatabase} or
// Error{InvalidConfig} (both bad input).
SweepDefinition parseStoredSweep(const std::string& text, const std::string& origin);

// The normalised definition as stored in the store and in a Slurm folder; parseSweep reads
// it back to the same grid (same points, same order).
nlohmann::json sweepToJson(const SweepDefinition& d);

// Every point of the grid, each config built from base + set + coordinates and validated.
// Throws Error{InvalidConfig} naming the axis, the value and the grid point on the first
// point that is invalid, before any run is started.
std::vector<SweepPoint> expandSweep(const SweepDefinition& d);

// "optim.lr=0.001 attention.qk_norm=none run.seed=2": coordinates for names and messages.
std::string coordsText(const nlohmann::json& coords);

// A log grid of `points` values from lo to hi (both > 0); endpoints exact, inner values
// rounded to 6 significant digits so names and tables stay readable.
std::vector<double> logGrid(double lo, double hi, int64_t points);
std::vector<double> linearGrid(double lo, double hi, int64_t points);

// ---- learning-rate sensitivity ------------------------------------------------------------

// One LR of one configuration: the final loss of each seed that has a result.
struct LrCell {
    double lr = 0;
    std::vector<double> losses;         // per seed; a diverged seed is recorded as NaN
    std::vector<double> peakRawLogits;  // per seed, where known
    int pending = 0;                    // seeds with no result yet (not run, running, failed)
};

struct LrCurve {
    struct Point {
        double lr = 0;
        double mean = 0, min = 0, max = 0;  // over seeds, each clipped to the initial loss
        int seeds = 0, diverged = 0, pending = 0;
        std::optional<double> peakRawLogit;  // max over seeds
        bool stable = false;                 // no seed diverged and mean <= best + margin
    };
    std::vector<Point> points;  // by LR; LRs with no result at all are left out
    double initialLoss = 0;
    double bestLoss = 0;  // min over points of the clipped mean
    double sensitivity = 0;
    std::optional<double> maxStableLr;
    // The largest LR tested was stable, so the true max stable LR is at least maxStableLr:
    // the grid did not reach the edge of stability.
    bool maxStableLrIsLowerBound = false;
};

// Wortsman's LR sensitivity: the mean over the grid of min(loss(lr), initial) - best, where a
// diverged (or non-finite) loss counts as the initial loss. With seeds, loss(lr) is the mean
// over seeds of the clipped losses. Max stable LR: the largest LR whose seeds all finished
// and whose mean is at most `margin` above the best.
LrCurve lrCurve(std::vector<LrCell> cells, double initialLoss, double margin);

// The max stable LR as views and reports say it, with `digits` significant digits: "none",
// "0.01", or "≥ 0.03" when the largest LR tested was stable.
std::string maxStableLrText(const LrCurve& curve, int digits);

}  // namespace qklab
