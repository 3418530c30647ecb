// recommend.cpp — the guide's size table as code (domain brief section 5).
#include "qklab/config/recommend.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

namespace qklab {

namespace {

// Standard decoder shapes by size (GPT-3 paper, table 2.1), used when only a size is given.
struct Shape {
    double parameters;
    int64_t layers, dModel;
};
const Shape kShapes[] = {{30e6, 6, 512},    {125e6, 12, 768},  {350e6, 24, 1024},
                         {760e6, 24, 1536}, {1.3e9, 24, 2048}, {2.7e9, 32, 2560}};

// Non-embedding parameters of a block stack: attention 4 d^2 + MLP 8 d^2 per layer.
double blockParameters(int64_t layers, int64_t dModel) {
    return 12.0 * static_cast<double>(layers) * static_cast<double>(dModel) * dModel;
}

std::string count(double p) {
    char buf[32];
    if (p >= 1e9)
        std::snprintf(buf, sizeof buf, "%.3gB", p / 1e9);
    else
        std::snprintf(buf, sizeof buf, "%.3gM", p / 1e6);
    return buf;
}

struct Tier {
    const char* name;
    int64_t dHead;
    bool qkNorm;
    double softcapC;  // 0 = none
};

Tier tierFor(double parameters) {
    if (parameters < 100e6) return {"< 100M", 64, false, 30};
    if (parameters < 300e6) return {"100M-300M", 64, true, 50};
    if (parameters < 1e9) return {"300M-1B", parameters < 600e6 ? 64 : 128, true, 50};
    return {parameters <= 3e9 ? "1B-3B" : "1B-3B (the guide's largest row)", 128, true, 100};
}

void chooseShape(const RecommendRequest& r, Recommendation& out, double& parameters) {
    RunConfig& c = out.config;
    if (r.dModel > 0 || r.nLayers > 0) {
        if (r.dModel <= 0 || r.nLayers <= 0)
            throw Error(ErrorCode::InvalidRequest,
                        "give both --d-model and --layers (or --params)");
        c.model.dModel = r.dModel;
        c.model.nLayers = r.nLayers;
        parameters = blockParameters(r.nLayers, r.dModel);
        out.reasons.push_back({"model.d_model", "as asked; " + count(parameters) +
                                                    " parameters in the blocks (12 L d^2)"});
        return;
    }
    if (!(r.parameters > 0))
        throw Error(ErrorCode::InvalidRequest, "give a size: --params N or --d-model and --layers");
    const Shape* best = &kShapes[0];
    for (const Shape& s : kShapes)
        if (std::fabs(std::log(s.parameters / r.parameters)) <
            std::fabs(std::log(best->parameters / r.parameters)))
            best = &s;
    c.model.dModel = best->dModel;
    c.model.nLayers = best->layers;
    parameters = r.parameters;
    out.reasons.push_back({"model.d_model", "the standard shape nearest " + count(r.parameters) +
                                                " (GPT-3's " + count(best->parameters) + ": " +
                                                std::to_string(best->layers) + " layers x " +
                                                std::to_string(best->dModel) + ")"});
}

void chooseAttention(const RecommendRequest& r, const Tier& tier, Recommendation& out) {
    RunConfig& c = out.config;
    const int64_t dHead = r.dHead > 0 ? r.dHead : tier.dHead;
    if (c.model.dModel % dHead != 0)
        throw Error(ErrorCode::InvalidRequest, "d_model " + std::to_string(c.model.dModel) +
                                                   " is not a multiple of d_head " +
                                                   std::to_string(dHead));
    c.model.nHeads = c.model.dModel / dHead;
    out.reasons.push_back(
        {"model.n_heads",
         std::to_string(c.model.nHeads) + " heads of d_head " + std::to_string(dHead) +
             (r.dHead > 0 ? " (as asked)"
                          : " (the guide's d_head for " + std::string(tier.name) + ")")});
    c.attention.qkNorm = tier.qkNorm ? QkNormVariant::Rms : QkNormVariant::None;
    out.reasons.push_back(
        {"attention.qk_norm",
         tier.qkNorm ? "RMS without a gain on q and k, in every layer: the guide turns QK-norm on "
                       "from 100M up (all layers or none: mixing makes debugging hard)"
                     : "off below 100M: probe the logits first and fix data quality first; turn "
                       "it on if max logit passes 30 with q/k norms rising"});
    out.reasons.push_back(
        {"attention.scale", "s = 1/sqrt(d_head), so RMS-normed logits stay within sqrt(d_head)"});
    c.attention.softcap.kind = SoftcapKind::Tanh;
    c.attention.softcap.c = tier.softcapC;
    char cap[160];
    std::snprintf(
        cap, sizeof cap, "tanh softcap C = %g, the guide's width for %s%s", tier.softcapC,
        tier.name,
        tier.qkNorm ? "" : " (optional at this size; cheap insurance against token spikes)");
    out.reasons.push_back({"attention.softcap.c", cap});
}

void chooseTraining(const RecommendRequest& r, const Tier& tier, Recommendation& out) {
    RunConfig& c = out.config;
    c.optim.lr = tier.qkNorm ? 3e-3 : 2.5e-3;
    out.reasons.push_back({"optim.lr", tier.qkNorm ? "3e-3, the guide's LR with QK-norm"
                                                   : "2.5e-3, the guide's LR without QK-norm "
                                                     "(QK-norm tolerates a higher one)"});
    c.run.dtype = r.precision;
    out.reasons.push_back(
        {"run.dtype", r.precision == Precision::Bf16
                          ? std::string("bf16 autocast with fp32 master weights") +
                                (tier.qkNorm ? "; QK-norm keeps logits small, which is where "
                                               "bf16 loses the most absolute precision"
                                             : "; watch the logits: bf16's absolute error grows "
                                               "with them")
                          : "fp32, as asked"});
    if (r.shipWithoutQkNorm && tier.qkNorm) {
        c.anneal.qkNorm.start = 0.92;
        c.anneal.qkNorm.end = 1.0;
        out.reasons.push_back({"anneal.qk_norm.start",
                               "anneal QK-norm away over the last 8% of steps (5-10% gives a "
                               "rebound of only 0.02-0.05); learnable QK scales freeze meanwhile"});
    } else if (r.shipWithoutQkNorm) {
        out.reasons.push_back(
            {"anneal.qk_norm.start", "nothing to anneal: QK-norm is off at this size"});
    }
}

}  // namespace

double parseParameterCount(const std::string& text) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    double scale = 1;
    const std::string suffix = end ? std::string(end) : "";
    if (suffix == "k" || suffix == "K")
        scale = 1e3;
    else if (suffix == "M" || suffix == "m")
        scale = 1e6;
    else if (suffix == "B" || suffix == "b" || suffix == "G")
        scale = 1e9;
    else if (!suffix.empty())
        scale = 0;
    if (end == text.c_str() || scale == 0 || !(v > 0) || !std::isfinite(v))
        throw Error(ErrorCode::InvalidRequest,
                    "--params: expected a size such as 300M, 1.3B or 125e6, got '" +
                        clipped(text, 40) + "'");
    return v * scale;
}

Recommendation recommendSettings(const RecommendRequest& r) {
    Recommendation out;
    double parameters = 0;
    chooseShape(r, out, parameters);
    const Tier tier = tierFor(parameters);
    out.tier = tier.name;
    chooseAttention(r, tier, out);
    chooseTraining(r, tier, out);
    validate(out.config);
    return out;
}

nlohmann::json recommendationToJson(const Recommendation& r) {
    std::string why = "Recommended by qklab-cli recommend for the guide's " + r.tier + " row.";
    for (const auto& [key, reason] : r.reasons) why += " " + key + ": " + reason + ".";
    RunConfig c = r.config;
    c.why = why;
    return presetJson(c);
}

}  // namespace qklab
