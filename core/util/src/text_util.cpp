// text_util.cpp — clipping quoted values, did-you-mean suggestions, and the JSON reader with
// the limits that user text needs.
#include "qklab/util/text_util.h"

#include <algorithm>
#include <cstdio>
#include <type_traits>

namespace qklab {
namespace {

using nlohmann::json;

// Containers nested deeper than this are shown as [...] / {...} in messages.
constexpr size_t kShownDepth = 16;

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

// Length of the well-formed UTF-8 character at s[i] (RFC 3629: no overlongs, no surrogates),
// 0 if the byte there starts none.
size_t utf8Length(const std::string& s, size_t i) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = byte(i);
    if (c < 0x80) return 1;
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
    for (size_t k = 2; k < n; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
    return n;
}

// The code point of the well-formed UTF-8 character of n bytes at s[i].
char32_t codePoint(const std::string& s, size_t i, size_t n) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    if (n == 1) return byte(0);
    char32_t c = byte(0) & (0xFF >> (n + 1));  // 110xxxxx, 1110xxxx, 11110xxx
    for (size_t k = 1; k < n; ++k) c = (c << 6) | (byte(k) & 0x3F);
    return c;
}

enum class Unsafe { None, NotUtf8, Control, Bidi };

// Whether the character of n = utf8Length(s, i) bytes at s[i] may be printed (or named).
Unsafe unsafeKind(const std::string& s, size_t i, size_t n) {
    if (n == 0) return Unsafe::NotUtf8;
    const char32_t c = codePoint(s, i, n);
    if (c < 0x20 || (c >= 0x7F && c <= 0x9F)) return Unsafe::Control;
    if (c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) ||
        (c >= 0x2066 && c <= 0x2069))
        return Unsafe::Bidi;
    return Unsafe::None;
}

std::string dumpText(const json& v) {
    return v.dump(-1, ' ', false, json::error_handler_t::replace);  // never throws on bad UTF-8
}

// Writes v compactly, as dump() does, but stops once `out` is past `limit` (the rest would be
// clipped anyway) and does not descend below kShownDepth.
void writeShort(const json& v, std::string& out, size_t limit, size_t depth) {
    if (!v.is_structured()) {
        out += dumpText(v);
        return;
    }
    const bool object = v.is_object();
    if (depth >= kShownDepth) {
        out += object ? "{...}" : "[...]";
        return;
    }
    out += object ? '{' : '[';
    for (auto it = v.begin(); it != v.end() && out.size() <= limit; ++it) {
        if (it != v.begin()) out += ',';
        if (object) out += dumpText(json(it.key())) + ':';
        writeShort(*it, out, limit, depth + 1);
    }
    out += object ? '}' : ']';
}

[[noreturn]] void refuse(const std::string& message) {
    throw Error(ErrorCode::InvalidConfig, message);
}

// nlohmann's SAX interface, building the value as its own DOM parser does, plus the checks of
// parseJsonText. Pointers into the tree stay valid: a container only grows once every
// container inside it is closed.
class LimitedDomBuilder {
  public:
    LimitedDomBuilder(json& root, std::string rootPath)
        : m_root(root), m_rootPath(std::move(rootPath)) {}

    bool null() { return put(nullptr); }
    bool boolean(bool v) { return put(v); }
    bool number_integer(json::number_integer_t v) { return put(v); }
    bool number_unsigned(json::number_unsigned_t v) { return put(v); }
    bool number_float(json::number_float_t v, const std::string& written) {
        // An integer beyond 64 bits arrives here rounded to a double: refuse it as written.
        if (written.find_first_of(".eE") == std::string::npos)
            refuse(valueAt() + clipped(written) + ": integer outside the 64-bit range");
        return put(v);
    }
    bool string(std::string& v) { return put(std::move(v)); }
    bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }
    bool start_object(size_t) { return open(json::object()); }
    bool start_array(size_t) { return open(json::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool key(std::string& k) {
        m_keys.back() = k;
        if (m_open.back()->contains(k)) refuse("duplicate key \"" + path() + "\"");
        return true;
    }
    template <class Exception>
    bool parse_error(size_t, const std::string& token, const Exception& e) {
        if constexpr (std::is_same_v<Exception, json::out_of_range>)  // 406: 1e999
            refuse(valueAt() + clipped(token) + ": number outside the range of a double");
        // nlohmann quotes the whole last token (an unterminated string runs to the end).
        std::string what = e.what();
        const auto at = what.rfind(token);
        if (token.size() > 60 && at != std::string::npos)
            what.replace(at, token.size(), clipped(token));
        throw JsonSyntaxError(ErrorCode::InvalidConfig, clipped(what, 400));
    }

  private:
    bool put(json v) {
        insert(std::move(v));
        return true;
    }
    json* insert(json&& v) {
        if (m_open.empty()) return &(m_root = std::move(v));
        json& parent = *m_open.back();
        if (!parent.is_array()) return &(parent[m_keys.back()] = std::move(v));
        parent.push_back(std::move(v));
        return &parent.back();
    }
    bool open(json&& container) {
        if (m_open.size() >= kMaxJsonDepth)
            refuse((path().empty() ? std::string() : path() + ": ") + "nested deeper than " +
                   std::to_string(kMaxJsonDepth) + " levels, the limit for JSON input");
        m_open.push_back(insert(std::move(container)));
        m_keys.emplace_back();
        return true;
    }
    bool close() {
        m_open.pop_back();
        m_keys.pop_back();
        return true;
    }
    // The dotted path of the value being read, e.g. events[2].factor.
    std::string path() const {
        std::string p = m_rootPath;
        for (size_t i = 0; i < m_open.size(); ++i) {
            const json& c = *m_open[i];
            if (c.is_object()) {
                p += (p.empty() ? "" : ".") + clipped(m_keys[i]);
            } else {
                // An outer array holds the element being read as its last; the innermost one
                // is about to append it.
                const size_t index = i + 1 < m_open.size() ? c.size() - 1 : c.size();
                p += "[" + std::to_string(index) + "]";
            }
        }
        return clipped(p, 200);
    }
    std::string valueAt() const { return path().empty() ? std::string() : path() + " = "; }

    json& m_root;
    std::string m_rootPath;
    std::vector<json*> m_open;        // the containers being filled, outermost first
    std::vector<std::string> m_keys;  // per open container: the key of the value being read
};

}  // namespace

std::string clipped(const std::string& s, size_t limit) {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
        const size_t n = utf8Length(s, i);
        if (out.size() + std::max<size_t>(n, 1) > limit) break;
        // A stray byte becomes '?': a message must stay text even when the input was not.
        out += n == 0 ? std::string("?") : s.substr(i, n);
        i += std::max<size_t>(n, 1);
    }
    return i < s.size() ? out + "..." : out;
}

std::string shortJson(const json& v, size_t limit) {
    std::string out;
    writeShort(v, out, limit, 0);
    return clipped(out, limit);
}

std::string closestMatch(const std::string& key, const std::vector<std::string>& candidates) {
    std::string best;
    size_t bestDistance = 4;  // suggest only near misses
    for (const auto& c : candidates) {
        // The distance is at least the difference in length: a pasted megabyte skips the
        // quadratic table.
        const size_t gap = key.size() > c.size() ? key.size() - c.size() : c.size() - key.size();
        if (gap >= bestDistance) continue;
        const size_t d = editDistance(key, c);
        if (d < bestDistance) bestDistance = d, best = c;
    }
    return best;
}

bool isValidUtf8(const std::string& s) {
    for (size_t i = 0, n; i < s.size(); i += n)
        if ((n = utf8Length(s, i)) == 0) return false;
    return true;
}

json parseJsonText(const std::string& text, const std::string& rootPath) {
    json root;
    LimitedDomBuilder builder(root, rootPath);
    // The builder throws on every error, so a false return is not expected.
    if (!json::sax_parse(text, &builder))
        throw JsonSyntaxError(ErrorCode::InvalidConfig, "not JSON");
    return root;
}

nlohmann::json parseStoredJson(const std::string& text, const std::string& what) {
    if (text.size() > kMaxStoredJsonBytes)
        throw Error(ErrorCode::NotQklabDatabase,
                    what + " is " + std::to_string(text.size()) + " bytes of JSON; at most " +
                        std::to_string(kMaxStoredJsonBytes) + " are read: '" + clipped(text) + "'");
    try {
        return parseJsonText(text);
    } catch (const Error& e) {
        throw Error(ErrorCode::NotQklabDatabase, what + " is not readable JSON: " + e.what());
    }
}

std::string quoteNonFiniteNumbers(const std::string& text) {
    // Python's spellings, longest first ("-Infinity" before "Infinity").
    static const std::pair<std::string, std::string> kTokens[] = {
        {"-Infinity", "\"-inf\""}, {"Infinity", "\"inf\""}, {"NaN", "\"nan\""}};
    if (text.find_first_of("NI") == std::string::npos) return text;
    std::string out;
    out.reserve(text.size());
    bool inString = false;
    for (size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (inString) {
            const size_t n = c == '\\' && i + 1 < text.size() ? 2 : 1;  // \" stays in
            out.append(text, i, n);
            inString = c != '"';
            i += n;
            continue;
        }
        const auto token = std::find_if(std::begin(kTokens), std::end(kTokens), [&](const auto& t) {
            return text.compare(i, t.first.size(), t.first) == 0;
        });
        if (token != std::end(kTokens)) {
            out += token->second;
            i += token->first.size();
            continue;
        }
        inString = c == '"';
        out += c;
        ++i;
    }
    return out;
}

nlohmann::json parseStoredUserConfig(const std::string& text, const std::string& what) {
    return parseStoredJson(quoteNonFiniteNumbers(text), what);
}

std::string firstUnsafeCharacter(const std::string& s) {
    for (size_t i = 0, n; i < s.size(); i += std::max<size_t>(n, 1)) {
        n = utf8Length(s, i);
        const Unsafe kind = unsafeKind(s, i, n);
        if (kind == Unsafe::None) continue;
        char buf[48];
        if (kind == Unsafe::NotUtf8)
            std::snprintf(buf, sizeof buf, "byte 0x%02X (not UTF-8)",
                          static_cast<unsigned char>(s[i]));
        else
            std::snprintf(buf, sizeof buf, "U+%04X (%s)", static_cast<unsigned>(codePoint(s, i, n)),
                          kind == Unsafe::Control ? "a control character" : "a bidi control");
        return std::string(buf) + " at byte " + std::to_string(i);
    }
    return {};
}

std::string printableText(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0, n; i < s.size(); i += std::max<size_t>(n, 1)) {
        n = utf8Length(s, i);
        if (unsafeKind(s, i, n) == Unsafe::None) {
            out.append(s, i, n);
            continue;
        }
        for (size_t k = 0; k < std::max<size_t>(n, 1); ++k) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(s[i + k]));
            out += buf;
        }
    }
    return out;
}

std::string csvField(const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return out + "\"";
}

}  // namespace qklab
