// attention_stats.cpp — row statistics of a stored attention map.
#include "qklab/analysis/attention_stats.h"

#include <algorithm>
#include <cmath>

namespace qklab {

double meanRowMax(const AttentionMap& map) {
    if (map.size <= 0) return 0;
    double sum = 0;
    for (int r = 0; r < map.size; ++r) {
        float best = 0;
        for (int c = 0; c < map.size; ++c)
            best = std::max(best, map.weights[static_cast<size_t>(r) * map.size + c]);
        sum += best;
    }
    return sum / map.size;
}

double meanRowEntropy(const AttentionMap& map) {
    if (map.size <= 0) return 0;
    double sum = 0;
    for (int r = 0; r < map.size; ++r)
        for (int c = 0; c < map.size; ++c) {
            const double w = map.weights[static_cast<size_t>(r) * map.size + c];
            if (w > 0) sum -= w * std::log(w);
        }
    return sum / map.size;
}

}  // namespace qklab
