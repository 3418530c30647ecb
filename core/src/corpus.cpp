// corpus.cpp — the built-in training text and text-file loading.
//
// The built-in corpus is generated from a small grammar with a fixed PRNG (raw mt19937_64
// output, no std distributions, so it is identical on every platform). It mixes short tales
// whose hero recurs within a paragraph, play-style dialogue, arithmetic with correct sums and
// inventories: structure at several ranges, so a byte-level model's loss falls from
// log(256) = 5.55 to well under 1.5 nats.
#include "qklab/corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "qklab/error.h"
#include "text_util.h"

namespace qklab {
namespace {

class Generator {
  public:
    explicit Generator(uint64_t seed) : m_rng(seed) {}

    template <size_t N>
    const char* pick(const char* const (&words)[N]) {
        return words[m_rng() % N];
    }
    int number(int lo, int hi) { return lo + static_cast<int>(m_rng() % (hi - lo + 1)); }

    void tale(std::string& out) {
        static const char* const names[] = {"Alice", "Bruno", "Clara", "Dmitri",
                                            "Elena", "Farid", "Greta", "Hiro",
                                            "Ines",  "Jonas", "Kira",  "Lorenzo"};
        static const char* const adjectives[] = {"old",   "quiet",  "red",    "golden", "small",
                                                 "heavy", "bright", "broken", "wooden", "strange"};
        static const char* const nouns[] = {"lamp",   "key",    "boat",  "letter",
                                            "garden", "bridge", "clock", "horse",
                                            "window", "map",    "song",  "tower"};
        static const char* const verbs[] = {"found", "carried",   "painted",  "opened",
                                            "lost",  "mended",    "followed", "watched",
                                            "sold",  "remembered"};
        static const char* const places[] = {"by the river",   "in the market",    "under the hill",
                                             "at the harbour", "behind the mill",  "in the tower",
                                             "near the gate",  "on the road north"};
        static const char* const times[] = {"In the morning", "At dusk",
                                            "Later that day", "When the rain stopped",
                                            "Before supper",  "At noon"};
        const char* hero = pick(names);
        const char* friendName = pick(names);
        out += "The tale of ";
        out += hero;
        out += ".\n";
        const int sentences = number(3, 6);
        for (int i = 0; i < sentences; ++i) {
            if (i > 0) {
                out += pick(times);
                out += ", ";
            }
            out += (i % 2 == 0) ? hero : (i == 1 ? friendName : hero);
            out += " ";
            out += pick(verbs);
            out += " the ";
            out += pick(adjectives);
            out += " ";
            out += pick(nouns);
            out += " ";
            out += pick(places);
            out += ".";
            out += (i + 1 < sentences) ? " " : "\n";
        }
        out += "And so ";
        out += hero;
        out += " went home.\n\n";
    }

    void dialogue(std::string& out) {
        static const char* const speakers[] = {"KING", "QUEEN", "FOOL", "GUARD", "MERCHANT"};
        static const char* const lines[] = {
            "What news from the north?",        "The bridge is broken, my lord.",
            "Then we shall wait for the boat.", "I have carried the letter all night.",
            "Speak softly, the tower listens.", "Bring me the golden key.",
            "The market is quiet today.",       "Who opened the window?",
            "I remember the old song.",         "Let the horse rest by the river."};
        const int turns = number(2, 5);
        for (int i = 0; i < turns; ++i) {
            out += pick(speakers);
            out += ": ";
            out += pick(lines);
            out += "\n";
        }
        out += "\n";
    }

    void arithmetic(std::string& out) {
        const int lines = number(2, 4);
        for (int i = 0; i < lines; ++i) {
            const int a = number(0, 99), b = number(0, 99);
            if (m_rng() % 2) {
                out +=
                    std::to_string(a) + " + " + std::to_string(b) + " = " + std::to_string(a + b);
            } else {
                const int hi = std::max(a, b), lo = std::min(a, b);
                out += std::to_string(hi) + " - " + std::to_string(lo) + " = " +
                       std::to_string(hi - lo);
            }
            out += ".\n";
        }
        out += "\n";
    }

    void inventory(std::string& out) {
        static const char* const items[] = {"apples", "candles", "ropes",    "loaves",
                                            "nails",  "barrels", "lanterns", "coins"};
        out += "Inventory:";
        const int n = number(2, 4);
        for (int i = 0; i < n; ++i) {
            out += (i == 0) ? " " : ", ";
            out += std::to_string(number(1, 12)) + " " + pick(items);
        }
        out += ".\n\n";
    }

  private:
    std::mt19937_64 m_rng;
};

}  // namespace

std::string builtinCorpus(int64_t bytes) {
    Generator g(20260101);
    std::string out;
    out.reserve(static_cast<size_t>(bytes) + 1024);
    while (static_cast<int64_t>(out.size()) < bytes) {
        switch (g.number(0, 9)) {
            case 0:
            case 1:
            case 2:
            case 3:
                g.tale(out);
                break;
            case 4:
            case 5:
            case 6:
                g.dialogue(out);
                break;
            case 7:
            case 8:
                g.arithmetic(out);
                break;
            default:
                g.inventory(out);
                break;
        }
    }
    out.resize(static_cast<size_t>(bytes));
    return out;
}

namespace {

namespace fs = std::filesystem;

// A path in a message: long enough for a real path, short enough for a pasted megabyte.
std::string quotedPath(const std::string& path) {
    return "\"" + clipped(path, 160) + "\"";
}

const char* notRegularKind(fs::file_type type) {
    switch (type) {
        case fs::file_type::directory:
            return "a directory";
        case fs::file_type::fifo:
            return "a FIFO (named pipe)";
        case fs::file_type::character:
            return "a character device";
        case fs::file_type::block:
            return "a block device";
        case fs::file_type::socket:
            return "a socket";
        default:
            return "not a regular file";
    }
}

constexpr uintmax_t kMinCorpusBytes = 4096;

}  // namespace

std::string dataSourceProblem(const std::string& source, ErrorCode* code) {
    if (code) *code = ErrorCode::InvalidConfig;
    if (source == "builtin") return {};
    if (source.empty()) return "data.source is empty: use \"builtin\" or a text file path";
    const std::string path = quotedPath(source);
    std::error_code ec;
    // status() follows symlinks: a link to a FIFO or a device is refused like the thing itself.
    const fs::file_status st = fs::status(source, ec);
    if (st.type() == fs::file_type::not_found || ec) {
        if (code) *code = ErrorCode::MissingFile;
        return "data.source: cannot read text file " + path + ": " +
               (ec ? ec.message() : std::string("no such file"));
    }
    // Reading a FIFO blocks until a writer comes; /dev/zero never ends. Only regular files,
    // whose size is known before the first byte is read, can be corpora.
    if (!fs::is_regular_file(st))
        return "data.source: " + path + " is " + notRegularKind(st.type()) +
               ", not a regular text file";
    const uintmax_t size = fs::file_size(source, ec);
    if (ec) {
        if (code) *code = ErrorCode::MissingFile;
        return "data.source: cannot read text file " + path + ": " + ec.message();
    }
    if (size > static_cast<uintmax_t>(kMaxCorpusBytes))
        return "data.source: " + path + " has " + std::to_string(size) +
               " bytes; the limit is 1 GiB (" + std::to_string(kMaxCorpusBytes) + " bytes)";
    if (size < kMinCorpusBytes)
        return "data.source: " + path + " has only " + std::to_string(size) + " bytes; at least " +
               std::to_string(kMinCorpusBytes) + " are needed";
    return {};
}

std::string loadCorpus(const std::string& source) {
    if (source == "builtin") return builtinCorpus();
    ErrorCode code = ErrorCode::InvalidConfig;
    const std::string problem = dataSourceProblem(source, &code);
    if (!problem.empty()) throw Error(code, problem);
    std::ifstream in(source, std::ios::binary);
    if (!in)
        throw Error(ErrorCode::MissingFile,
                    "data.source: cannot read text file " + quotedPath(source));
    // Read the size checked above and no more: a file that grows meanwhile stays bounded.
    std::error_code ec;
    const uintmax_t size = fs::file_size(source, ec);
    std::string text(ec ? 0 : static_cast<size_t>(std::min<uintmax_t>(size, kMaxCorpusBytes)),
                     '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    if (text.size() < kMinCorpusBytes)
        throw Error(ErrorCode::InvalidConfig, "data.source: " + quotedPath(source) + " has only " +
                                                  std::to_string(text.size()) +
                                                  " bytes; at least " +
                                                  std::to_string(kMinCorpusBytes) + " are needed");
    return text;
}

std::string defaultDirtyText() {
    return "BUY NOW!!! LIMITED OFFER!!! CLICK HERE!!! ";
}

}  // namespace qklab
