// sweep.cpp — parsing a sweep file, expanding its grid, and the LR-sensitivity numbers.
#include "qklab/config/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "qklab/config/names.h"
#include "qklab/util/error.h"
#include "qklab/util/input_file.h"
#include "qklab/util/text_util.h"

namespace qklab {

using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& origin, const std::string& what) {
    throw Error(ErrorCode::InvalidConfig, origin + ": " + what);
}

double roundSignificant(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return std::strtod(buf, nullptr);
}

// `{"log": [lo, hi], "points": n}`, `{"linear": [...], "points": n}` or a list of values.
std::vector<json> axisValues(const std::string& origin, const std::string& key, const json& spec) {
    const std::string where = "axis \"" + key + "\"";
    if (spec.is_array()) {
        if (spec.empty()) bad(origin, where + " has no values");
        return std::vector<json>(spec.begin(), spec.end());
    }
    if (!spec.is_object())
        bad(origin, where +
                        ": expected a list of values or {\"log\"|\"linear\": [lo, hi], "
                        "\"points\": n}, got " +
                        shortJson(spec));
    const bool isLog = spec.contains("log");
    const char* kind = isLog ? "log" : "linear";
    for (const auto& [k, v] : spec.items())
        if (k != "log" && k != "linear" && k != "points")
            bad(origin, where + ": unknown field \"" + k + "\" (expected log or linear, points)");
    if (spec.contains("log") == spec.contains("linear"))
        bad(origin, where + ": give exactly one of \"log\" and \"linear\"");
    const json& range = spec[kind];
    if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number())
        bad(origin, where + "." + kind + ": expected [lo, hi] numbers, got " + shortJson(range));
    const json points = spec.value("points", json());
    if (!points.is_number_integer() || points.get<int64_t>() < 1 ||
        points.get<int64_t>() > static_cast<int64_t>(kMaxSweepPoints))
        bad(origin, where + ".points: expected an integer from 1 to " +
                        std::to_string(kMaxSweepPoints) + ", got " + shortJson(points));
    const double lo = range[0].get<double>(), hi = range[1].get<double>();
    if (isLog && (lo <= 0 || hi <= 0))
        bad(origin, where + ".log: both ends must be > 0, got " + shortJson(range));
    const std::vector<double> grid =
        isLog ? logGrid(lo, hi, points.get<int64_t>()) : linearGrid(lo, hi, points.get<int64_t>());
    std::vector<json> out;
    for (double v : grid) out.emplace_back(v);
    return out;
}

// A grid of a whole-number key gives whole numbers ("schedule.steps": {"log": [100, 1000]}).
void roundIntegerAxis(SweepAxis& axis) {
    const FieldInfo* f = findField(axis.key);
    if (!f || f->type != FieldType::Int) return;
    for (json& v : axis.values)
        if (v.is_number_float()) v = static_cast<int64_t>(std::llround(v.get<double>()));
}

void checkAxisKey(const std::string& origin, const std::string& key) {
    if (key == "events" || findField(key)) return;
    std::vector<std::string> keys;
    for (const auto& f : configFields()) keys.push_back(f.key);
    const std::string near = closestMatch(key, keys);
    bad(origin, "axis \"" + clipped(key) + "\" is not a config key" +
                    (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
}

json readBase(const json& base, const std::string& sourcePath) {
    if (base.is_null()) return json::object();
    if (base.is_object()) return base;
    if (!base.is_string())
        bad(sourcePath,
            "base: expected a preset file name or an inline preset object, got " + shortJson(base));
    namespace fs = std::filesystem;
    const std::string name = base.get<std::string>();
    // Next to the sweep file when such a file (of any kind) is there, else as given.
    fs::path path = fs::path(sourcePath).parent_path() / name;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(path, ec))) path = name;
    std::string text;
    try {
        text = readInputFile(path.string(), kPresetFile);
    } catch (const Error& e) {
        throw Error(e.code(), sourcePath + ": base: " + e.what());
    }
    try {
        return parseJsonText(text);
    } catch (const Error& e) {
        bad(sourcePath, "base preset " + clipped(path.string(), 160) + ": " + e.what());
    }
}

void readZips(SweepDefinition& d, const json& zips, const std::string& origin) {
    if (zips.is_null()) return;
    if (!zips.is_array()) bad(origin, "zip: expected a list of lists of axis keys");
    std::set<std::string> used;
    for (const json& group : zips) {
        if (!group.is_array() || group.size() < 2)
            bad(origin, "zip: each entry lists two or more axis keys, got " + shortJson(group));
        std::vector<std::string> keys;
        size_t length = 0;
        for (const json& k : group) {
            const std::string key = k.is_string() ? k.get<std::string>() : k.dump();
            auto axis = std::find_if(d.axes.begin(), d.axes.end(),
                                     [&](const SweepAxis& a) { return a.key == key; });
            if (axis == d.axes.end()) bad(origin, "zip: \"" + clipped(key) + "\" is not an axis");
            if (!used.insert(key).second)
                bad(origin, "zip: axis \"" + key + "\" is in more than one zip group");
            if (length && axis->values.size() != length)
                bad(origin, "zip: axes " + shortJson(group) +
                                " must have the same number of values (" + std::to_string(length) +
                                " vs " + std::to_string(axis->values.size()) + ")");
            length = axis->values.size();
            keys.push_back(key);
        }
        d.zips.push_back(keys);
    }
}

void readSeeds(SweepDefinition& d, const json& seeds, const std::string& origin) {
    if (seeds.is_null()) return;
    if (!seeds.is_array() || seeds.empty())
        bad(origin, "seeds: expected a non-empty list of integers, got " + shortJson(seeds));
    std::set<int64_t> seen;
    for (const json& s : seeds) {
        if (!s.is_number_integer()) bad(origin, "seeds: " + shortJson(s) + " is not an integer");
        if (!seen.insert(s.get<int64_t>()).second)
            bad(origin, "seeds: " + s.dump() + " is listed twice");
        d.seeds.push_back(s.get<int64_t>());
    }
    for (const SweepAxis& a : d.axes)
        if (a.key == "run.seed") bad(origin, "give the seeds either as \"seeds\" or as an axis");
}

// The grid's dimensions: each zip group is one dimension, every other axis its own; the
// seeds are the innermost dimension, so a configuration's seeds are neighbouring points.
std::vector<std::vector<const SweepAxis*>> dimensions(const SweepDefinition& d,
                                                      const SweepAxis* seedAxis) {
    std::vector<std::vector<const SweepAxis*>> dims;
    std::set<std::string> zipped;
    for (const auto& group : d.zips) {
        std::vector<const SweepAxis*> dim;
        for (const auto& key : group)
            for (const auto& a : d.axes)
                if (a.key == key) dim.push_back(&a);
        dims.push_back(dim);
        zipped.insert(group.begin(), group.end());
    }
    for (const auto& a : d.axes)
        if (!zipped.count(a.key)) dims.push_back({&a});
    std::sort(dims.begin(), dims.end(),
              [](const auto& x, const auto& y) { return x.front()->key < y.front()->key; });
    if (seedAxis) dims.push_back({seedAxis});
    return dims;
}

void applyValue(RunConfig& c, const std::string& key, const json& value) {
    applyOverride(c, key + "=" + value.dump());
}

// Which axis (if any) a validation message is about, so the error can name it.
const std::string* axisNamedIn(const std::string& message, const json& coords) {
    for (const auto& [key, value] : coords.items())
        if (message.find("\"" + key + "\"") != std::string::npos ||
            message.find(key + " ") != std::string::npos)
            return &key;
    return nullptr;
}

RunConfig buildPoint(const SweepDefinition& d, const json& coords, int64_t index) {
    const std::string at = "grid point " + std::to_string(index) + " (" + coordsText(coords) + ")";
    RunConfig c;
    try {
        c = configFromJson(d.base, false);
    } catch (const Error& e) {
        throw Error(e.code(), "sweep base: " + std::string(e.what()));
    }
    for (const auto& [key, value] : d.set.items()) {
        try {
            applyValue(c, key, value);
        } catch (const Error& e) {
            throw Error(e.code(), "sweep set." + key + ": " + e.what());
        }
    }
    for (const auto& [key, value] : coords.items()) {
        try {
            applyValue(c, key, value);
        } catch (const Error& e) {
            throw Error(e.code(), "axis \"" + key + "\" value " + shortJson(value) + " at " + at +
                                      ": " + e.what());
        }
    }
    const std::vector<std::string> problems = validationProblems(c);
    if (!problems.empty()) {
        const std::string& p = problems.front();
        if (const std::string* key = axisNamedIn(p, coords))
            throw Error(
                ErrorCode::InvalidConfig,
                "axis \"" + *key + "\" value " + shortJson(coords[*key]) + " at " + at + ": " + p);
        throw Error(ErrorCode::InvalidConfig, at + ": " + p);
    }
    return c;
}

}  // namespace

size_t SweepDefinition::pointCount() const {
    size_t n = 1;
    // Checked: four axes of 8192 values and one of 4096 are 2^64 points, which wrapped to 0
    // and slipped past kMaxSweepPoints. A product that does not fit stays at SIZE_MAX.
    for (size_t size : dimensionSizes())
        if (__builtin_mul_overflow(n, size, &n)) return std::numeric_limits<size_t>::max();
    return n;
}

std::vector<size_t> SweepDefinition::dimensionSizes() const {
    std::vector<size_t> sizes;
    std::set<std::string> zipped;
    for (const auto& group : zips) {
        for (const auto& a : axes)
            if (a.key == group.front()) sizes.push_back(a.values.size());
        zipped.insert(group.begin(), group.end());
    }
    for (const auto& a : axes)
        if (!zipped.count(a.key)) sizes.push_back(a.values.size());
    if (!seeds.empty()) sizes.push_back(seeds.size());
    return sizes;
}

std::vector<double> logGrid(double lo, double hi, int64_t points) {
    if (points == 1) return {lo};
    std::vector<double> out;
    const double ratio = std::log(hi / lo);
    for (int64_t i = 0; i < points; ++i) {
        const double v = lo * std::exp(ratio * static_cast<double>(i) / (points - 1));
        out.push_back(i == 0 ? lo : i == points - 1 ? hi : roundSignificant(v, 6));
    }
    return out;
}

std::vector<double> linearGrid(double lo, double hi, int64_t points) {
    if (points == 1) return {lo};
    std::vector<double> out;
    for (int64_t i = 0; i < points; ++i) {
        const double v = lo + (hi - lo) * static_cast<double>(i) / (points - 1);
        out.push_back(i == 0 ? lo : i == points - 1 ? hi : roundSignificant(v, 12));
    }
    return out;
}

SweepDefinition parseSweep(const std::string& text, const std::string& sourcePath) {
    json j;
    try {
        j = parseJsonText(text);
    } catch (const JsonSyntaxError& e) {
        bad(sourcePath, std::string("not valid JSON: ") + e.what());
    }
    if (!j.is_object()) bad(sourcePath, "a sweep file is a JSON object");
    static const std::set<std::string> known{"why", "base", "axes", "zip",        "seeds",
                                             "set", "name", "uuid", "qklab_sweep"};
    for (const auto& [k, v] : j.items())
        if (!known.count(k))
            bad(sourcePath, "unknown field \"" + clipped(k) +
                                "\" (a sweep file has why, base, axes, zip, seeds, set)");
    SweepDefinition d;
    d.why = j.value("why", json("")).is_string() ? j.value("why", "") : "";
    if (j.contains("name")) {
        // The name reaches the store, run names and a Slurm script: the run-name rules.
        if (!j["name"].is_string())
            bad(sourcePath, "name: expected text, got " + shortJson(j["name"]));
        d.name = j["name"].get<std::string>();
        try {
            checkSweepName(d.name);
        } catch (const Error& e) {
            bad(sourcePath, std::string("name: ") + e.what());
        }
    }
    d.uuid = j.contains("uuid") && j["uuid"].is_string() ? j["uuid"].get<std::string>() : "";
    d.base = readBase(j.value("base", json()), sourcePath);
    const json axes = j.value("axes", json::object());
    if (!axes.is_object()) bad(sourcePath, "axes: expected an object of dotted key -> values");
    for (const auto& [key, spec] : axes.items()) {
        checkAxisKey(sourcePath, key);
        SweepAxis axis{key, axisValues(sourcePath, key, spec)};
        roundIntegerAxis(axis);
        d.axes.push_back(std::move(axis));
    }
    readZips(d, j.value("zip", json()), sourcePath);
    readSeeds(d, j.value("seeds", json()), sourcePath);
    if (d.axes.empty() && d.seeds.empty()) bad(sourcePath, "axes: a sweep needs at least one axis");
    const json set = j.value("set", json::object());
    if (!set.is_object()) bad(sourcePath, "set: expected an object of dotted key -> value");
    for (const auto& [key, v] : set.items()) checkAxisKey(sourcePath + ": set", key);
    d.set = set;
    if (d.pointCount() > kMaxSweepPoints) {
        std::string product;
        for (size_t size : d.dimensionSizes())
            product += (product.empty() ? "" : " x ") + std::to_string(size);
        const size_t n = d.pointCount();
        bad(sourcePath, "the grid has " + product + " = " +
                            (n == std::numeric_limits<size_t>::max() ? std::string("more than 2^64")
                                                                     : std::to_string(n)) +
                            " points; at most " + std::to_string(kMaxSweepPoints) + " are allowed");
    }
    return d;
}

void addTwinsAxis(SweepDefinition& d) {
    const std::string key = "optim.skip_step";
    for (const SweepAxis& a : d.axes)
        if (a.key == key)
            throw Error(ErrorCode::InvalidRequest,
                        "--twins: optim.skip_step is an axis of this sweep already (its \"off\" "
                        "points are the twins)");
    json policy = d.set.value(key, json());
    if (policy.is_null() && d.base.contains("optim") && d.base["optim"].is_object())
        policy = d.base["optim"].value("skip_step", json());
    if (!policy.is_string() || policy.get<std::string>() == "off")
        throw Error(ErrorCode::InvalidRequest,
                    "--twins: the sweep turns no skip-step policy on (optim.skip_step = " +
                        (policy.is_null() ? std::string("off") : shortJson(policy)) +
                        "); set optim.skip_step to sigma or forecast in its base or set");
    d.set.erase(key);
    // In key order, where a stored definition read back puts it (axes are a JSON object), so
    // that the workers' points are the same as these.
    SweepAxis twins{key, {json("off"), policy}};
    auto at =
        std::find_if(d.axes.begin(), d.axes.end(), [&](const SweepAxis& a) { return a.key > key; });
    d.axes.insert(at, std::move(twins));
    if (d.pointCount() > kMaxSweepPoints)
        throw Error(ErrorCode::InvalidRequest,
                    "--twins: the twins make " + std::to_string(d.pointCount()) +
                        " points; at most " + std::to_string(kMaxSweepPoints) + " are allowed");
}

SweepDefinition loadSweepFile(const std::string& path) {
    SweepDefinition d = parseSweep(readInputFile(path, kSweepFile), path);
    if (d.name.empty()) d.name = std::filesystem::path(path).stem().string();
    return d;
}

SweepDefinition parseStoredSweep(const std::string& text, const std::string& origin) {
    const json j = parseStoredJson(text, origin + ": definition_json");
    if (j.is_object() && j.contains("base") && !j["base"].is_object() && !j["base"].is_null())
        throw Error(ErrorCode::NotQklabDatabase,
                    origin + ": definition_json: base is " + shortJson(j["base"]) +
                        "; a stored sweep holds its base preset inline, never a file name");
    return parseSweep(text, origin);
}

void checkSweepName(const std::string& name) {
    try {
        checkRunName(name);
    } catch (const Error& e) {
        // checkRunName says "a run name ...": the same rules, for a sweep.
        std::string what = e.what();
        if (what.rfind("a run name", 0) == 0) what.replace(0, 10, "a sweep name");
        throw Error(ErrorCode::InvalidRequest, what);
    }
}

json sweepToJson(const SweepDefinition& d) {
    json j = {{"qklab_sweep", 1}, {"name", d.name}, {"uuid", d.uuid},
              {"why", d.why},     {"base", d.base}, {"set", d.set}};
    json axes = json::object();
    for (const auto& a : d.axes) axes[a.key] = a.values;
    j["axes"] = axes;
    if (!d.zips.empty()) j["zip"] = d.zips;
    if (!d.seeds.empty()) j["seeds"] = d.seeds;
    return j;
}

std::string coordsText(const json& coords) {
    std::string out;
    for (const auto& [key, value] : coords.items()) {
        if (!out.empty()) out += ' ';
        out += key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    return out;
}

std::vector<SweepPoint> expandSweep(const SweepDefinition& d) {
    SweepAxis seedAxis{"run.seed", {}};
    for (int64_t s : d.seeds) seedAxis.values.emplace_back(s);
    const auto dims = dimensions(d, d.seeds.empty() ? nullptr : &seedAxis);
    std::vector<size_t> sizes;
    for (const auto& dim : dims) sizes.push_back(dim.front()->values.size());
    std::vector<SweepPoint> points;
    const size_t total = d.pointCount();
    for (size_t index = 0; index < total; ++index) {
        // Mixed-radix digits of the index, the last dimension varying fastest.
        json coords = json::object();
        size_t rest = index;
        for (size_t k = dims.size(); k-- > 0;) {
            const size_t digit = rest % sizes[k];
            rest /= sizes[k];
            for (const SweepAxis* a : dims[k]) coords[a->key] = a->values[digit];
        }
        SweepPoint p;
        p.index = static_cast<int64_t>(index);
        p.config = buildPoint(d, coords, p.index);
        p.coords = std::move(coords);
        points.push_back(std::move(p));
    }
    return points;
}

LrCurve lrCurve(std::vector<LrCell> cells, double initialLoss, double margin) {
    std::sort(cells.begin(), cells.end(),
              [](const LrCell& a, const LrCell& b) { return a.lr < b.lr; });
    LrCurve curve;
    curve.initialLoss = initialLoss;
    for (const LrCell& cell : cells) {
        if (cell.losses.empty()) continue;
        LrCurve::Point p;
        p.lr = cell.lr;
        p.pending = cell.pending;
        p.seeds = static_cast<int>(cell.losses.size());
        double sum = 0;
        p.min = std::numeric_limits<double>::infinity();
        p.max = -p.min;
        for (double loss : cell.losses) {
            const bool diverged = !std::isfinite(loss);
            p.diverged += diverged ? 1 : 0;
            const double clippedLoss = diverged ? initialLoss : std::min(loss, initialLoss);
            sum += clippedLoss;
            p.min = std::min(p.min, clippedLoss);
            p.max = std::max(p.max, clippedLoss);
        }
        p.mean = sum / p.seeds;
        for (double peak : cell.peakRawLogits)
            if (std::isfinite(peak)) p.peakRawLogit = std::max(p.peakRawLogit.value_or(peak), peak);
        curve.points.push_back(p);
    }
    if (curve.points.empty()) return curve;
    curve.bestLoss = curve.points.front().mean;
    for (const auto& p : curve.points) curve.bestLoss = std::min(curve.bestLoss, p.mean);
    double sum = 0;
    for (auto& p : curve.points) {
        sum += p.mean - curve.bestLoss;
        p.stable = p.diverged == 0 && p.mean <= curve.bestLoss + margin;
        if (p.stable) curve.maxStableLr = p.lr;  // points are sorted by LR
    }
    curve.sensitivity = sum / static_cast<double>(curve.points.size());
    curve.maxStableLrIsLowerBound = curve.points.back().stable;
    return curve;
}

std::string maxStableLrText(const LrCurve& curve, int digits) {
    if (!curve.maxStableLr) return "none";
    char text[64];
    std::snprintf(text, sizeof text, "%.*g", digits, *curve.maxStableLr);
    return (curve.maxStableLrIsLowerBound ? "\u2265 " : "") + std::string(text);
}

}  // namespace qklab
