// text_util.cpp — clipping quoted values and did-you-mean suggestions.
#include "text_util.h"

#include <algorithm>

namespace qklab {
namespace {

size_t editDistance(const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

}  // namespace

std::string clipped(const std::string& s, size_t limit) {
    return s.size() <= limit ? s : s.substr(0, limit) + "...";
}

std::string shortJson(const nlohmann::json& v, size_t limit) {
    return clipped(v.dump(), limit);
}

std::string closestMatch(const std::string& key, const std::vector<std::string>& candidates) {
    std::string best;
    size_t bestDistance = 4;  // suggest only near misses
    for (const auto& c : candidates) {
        const size_t d = editDistance(key, c);
        if (d < bestDistance) bestDistance = d, best = c;
    }
    return best;
}

}  // namespace qklab
