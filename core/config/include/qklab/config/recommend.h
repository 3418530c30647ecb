// qklab/config/recommend.h — the guide's advice by model size (domain brief section 5), made
// usable: given a size (parameters, or d_model and layers), d_head, precision and whether the model
// must ship without QK-norm, a full config with one sentence of reason per choice. The CLI's
// `recommend` prints it as a preset; the app fills its form with it. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qklab/config/run_config.h"

namespace qklab {

struct RecommendRequest {
    double parameters = 0;  // the model's size; 0 = from dModel and nLayers
    int64_t dModel = 0, nLayers = 0;
    int64_t dHead = 0;  // 0 = the guide's choice for the size
    Precision precision = Precision::Bf16;
    bool shipWithoutQkNorm = false;  // anneal QK-norm away at the end of training
};

struct Recommendation {
    RunConfig config;
    std::string tier;  // the guide's size row, e.g. "100M-300M"
    // (dotted key, reason): one sentence per choice, in the order the choices were made.
    std::vector<std::pair<std::string, std::string>> reasons;
};

// Throws Error{InvalidRequest} naming the field for sizes that make no sense (no size given,
// d_model not a multiple of d_head, ...).
Recommendation recommendSettings(const RecommendRequest& r);

// "300M", "1.3B", "125e6", "50k" -> parameters. Throws Error{InvalidRequest} naming the text.
double parseParameterCount(const std::string& text);

// The preset JSON: the config with a "why" that carries every reason.
nlohmann::json recommendationToJson(const Recommendation& r);

}  // namespace qklab
