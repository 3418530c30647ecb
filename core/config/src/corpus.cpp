// corpus.cpp — the built-in training text and text-file loading.
//
// The built-in corpus is generated from a small grammar with a fixed PRNG (raw mt19937_64
// output, no std distributions, so it is identical on every platform). It mixes short tales
// whose hero recurs within a paragraph, play-style dialogue, arithmetic with correct sums and
// inventories: structure at several ranges, so a byte-level model's loss falls from
// log(256) = 5.55 to well under 1.5 nats.
#include "qklab/config/corpus.h"

#include <algorithm>
#include <filesystem>
#include <random>
#include <vector>

#include "qklab/util/error.h"
#include "qklab/util/input_file.h"
#include "qklab/util/text_util.h"

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

// A path in a message: long enough for a real path, short enough for a pasted megabyte.
std::string quotedPath(const std::string& path) {
    return "\"" + clipped(path, 160) + "\"";
}

constexpr int64_t kMinCorpusBytes = 4096;

std::string tooShort(const std::string& source, int64_t size) {
    return "data.source: " + quotedPath(source) + " has only " + std::to_string(size) +
           " bytes; at least " + std::to_string(kMinCorpusBytes) + " are needed";
}

}  // namespace

std::string dataSourceProblem(const std::string& source, ErrorCode* code) {
    if (code) *code = ErrorCode::InvalidConfig;
    if (source == "builtin") return {};
    if (source.empty()) return "data.source is empty: use \"builtin\" or a text file path";
    // Reading a FIFO blocks until a writer comes; /dev/zero never ends. Only regular files,
    // whose size is known before the first byte is read, can be corpora (qklab/util/input_file.h).
    if (std::string p = inputFileProblem(source, kCorpusFile, code); !p.empty()) return p;
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(source, ec);
    if (!ec && size < static_cast<uintmax_t>(kMinCorpusBytes))
        return tooShort(source, static_cast<int64_t>(size));
    return {};
}

std::string loadCorpus(const std::string& source) {
    if (source == "builtin") return builtinCorpus();
    if (source.empty()) throw Error(ErrorCode::InvalidConfig, dataSourceProblem(source));
    std::string text = readInputFile(source, kCorpusFile);
    if (static_cast<int64_t>(text.size()) < kMinCorpusBytes)
        throw Error(ErrorCode::InvalidConfig, tooShort(source, static_cast<int64_t>(text.size())));
    return text;
}

std::string defaultDirtyText() {
    return "BUY NOW!!! LIMITED OFFER!!! CLICK HERE!!! ";
}

}  // namespace qklab
