// text_util.h — small text helpers for messages that name a key and a value (private to core).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace qklab {

// At most `limit` characters of s, with "..." marking a cut: messages quote what the user
// wrote, but a pasted megabyte must not become the message.
std::string clipped(const std::string& s, size_t limit = 60);
// A JSON value as it would be written, clipped.
std::string shortJson(const nlohmann::json& v, size_t limit = 60);
// The candidate closest to `key` by edit distance, when it is a near miss (distance < 4).
std::string closestMatch(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace qklab
