// text_util.h — small text helpers for messages that name a key and a value, and the one
// reader of JSON text that users write (private to core).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "qklab/error.h"

namespace qklab {

// At most `limit` bytes of s (never cutting a UTF-8 character), with "..." marking a cut:
// messages quote what the user wrote, but a pasted megabyte must not become the message.
std::string clipped(const std::string& s, size_t limit = 60);
// A JSON value as it would be written, clipped. Deep or huge values cost only what is shown.
std::string shortJson(const nlohmann::json& v, size_t limit = 60);
// The candidate closest to `key` by edit distance, when it is a near miss (distance < 4).
std::string closestMatch(const std::string& key, const std::vector<std::string>& candidates);
bool isValidUtf8(const std::string& s);

// The deepest nesting of objects and arrays that parseJsonText accepts.
constexpr size_t kMaxJsonDepth = 64;

// Text that is not JSON at all, as opposed to JSON that breaks one of parseJsonText's limits:
// callers word the two differently (`--set key=word` takes a non-JSON value as a string).
class JsonSyntaxError : public Error {
  public:
    using Error::Error;
};

// Parses JSON text that a user wrote (a preset, a `--set` value, stored event parameters).
// nlohmann's own parse accepts any depth (every recursive walk of the value then overflows
// the stack), keeps the last of two equal keys without a word and throws out_of_range on
// 1e999; here each of these, and an integer beyond 64 bits, is an Error{InvalidConfig} naming
// the dotted path (below `rootPath`) and the clipped value. Syntax errors throw JsonSyntaxError.
nlohmann::json parseJsonText(const std::string& text, const std::string& rootPath = "");

// The most JSON text read back from a database that is parsed (a run's config with many events
// is a few kB; nothing qklab writes comes near this).
constexpr size_t kMaxStoredJsonBytes = size_t{4} << 20;

// Parses JSON text read from a database (a run's config_json, an event's params_json, a
// sweep's definition): every such file may be someone else's, so parseJsonText's limits apply
// and the text may be at most kMaxStoredJsonBytes. Throws Error{NotQklabDatabase} (bad input:
// exit 2) whose message starts with `what`, e.g. "run 3's config_json in a.db".
nlohmann::json parseStoredJson(const std::string& text, const std::string& what);

// s safe to print on a terminal: control characters (C0, DEL and the C1 range U+0080..U+009F)
// and bytes that are not UTF-8 become \xNN, so that text read from someone else's file (a run
// name) can never clear the screen or retitle the window (ESC, OSC). Other text is unchanged.
std::string printableText(const std::string& s);

}  // namespace qklab
