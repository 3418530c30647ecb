// text_util.h — small text helpers for messages that name a key and a value, and the one
// reader of JSON text that users write (private to core).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "qklab/util/error.h"
#include "qklab/util/printable_text.h"  // printableText, declared there for the app and the CLI

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

// JSON text as Python's json module writes it by default (allow_nan) made JSON: the bare tokens
// NaN, Infinity and -Infinity outside strings become the strings "nan", "inf" and "-inf", the
// form in which a user config (qklab.init(config=...)) is stored. Other text is unchanged.
std::string quoteNonFiniteNumbers(const std::string& text);

// A stored user config, as parseStoredJson reads it, after quoteNonFiniteNumbers: rows written
// by older Python packages hold the bare tokens, which no JSON reader reads.
nlohmann::json parseStoredUserConfig(const std::string& text, const std::string& what);

// What a name, and any text printed on a terminal, may not hold: bytes that are not UTF-8,
// control characters (C0, DEL and the C1 range U+0080..U+009F: U+009B is a one-character CSI)
// and the bidi controls that reorder what a terminal or an editor shows (U+061C, U+200E,
// U+200F, U+202A..U+202E, U+2066..U+2069). The first such character of s, described, e.g.
// "U+009B (a control character) at byte 1"; empty when s holds none.
std::string firstUnsafeCharacter(const std::string& s);

// One CSV field (RFC 4180): a field with a comma, quote or line break is quoted, its quotes
// doubled, so that a name from someone else's file stays one field of one line.
std::string csvField(const std::string& s);

}  // namespace qklab
