// tokenizer.cpp — see tokenizer.h. BPE training counts each distinct word once with its
// frequency (Sennrich et al. 2016), keeps the pair counts up to date as words are merged and
// only revisits the words that hold the pair being merged.
#include "qklab/config/tokenizer.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "qklab/config/run_config.h"
#include "qklab/util/error.h"

namespace qklab {

namespace {

enum class ByteClass { Space, Letter, Digit, Mark };

ByteClass classOf(char ch) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f')
        return ByteClass::Space;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return ByteClass::Letter;
    if (c >= '0' && c <= '9') return ByteClass::Digit;
    return ByteClass::Mark;
}

uint64_t pairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

// Joins every non-overlapping (a, b) in `word`, left to right, into `id`.
void joinPair(std::vector<int32_t>& word, int32_t a, int32_t b, int32_t id) {
    size_t out = 0;
    for (size_t i = 0; i < word.size(); ++out) {
        if (i + 1 < word.size() && word[i] == a && word[i + 1] == b) {
            word[out] = id;
            i += 2;
        } else {
            word[out] = word[i++];
        }
    }
    word.resize(out);
}

// The training state: distinct words with their counts, and how often each pair occurs.
struct BpeTrainer {
    std::vector<std::vector<int32_t>> words;
    std::vector<int64_t> counts;
    std::unordered_map<uint64_t, int64_t> pairCounts;
    std::unordered_map<uint64_t, std::vector<int32_t>> wordsWith;  // may hold stale entries

    explicit BpeTrainer(std::string_view text) {
        std::map<std::string_view, int64_t> distinct;  // ordered: the same ids on every machine
        for (auto w : splitWords(text)) ++distinct[w];
        for (const auto& [w, n] : distinct) {
            words.emplace_back(w.begin(), w.end());
            for (auto& id : words.back()) id &= 0xff;  // bytes, whatever char's signedness
            counts.push_back(n);
        }
        for (int32_t i = 0; i < static_cast<int32_t>(words.size()); ++i) count(i, +1);
    }

    void count(int32_t w, int64_t sign) {
        const auto& word = words[static_cast<size_t>(w)];
        for (size_t i = 0; i + 1 < word.size(); ++i) {
            const uint64_t key = pairKey(word[i], word[i + 1]);
            auto& n = pairCounts[key];
            n += sign * counts[static_cast<size_t>(w)];
            if (sign > 0) wordsWith[key].push_back(w);
            if (n == 0) pairCounts.erase(key);
        }
    }

    // The most frequent pair (ties go to the smaller key); false when no pair is left.
    bool bestPair(uint64_t& best) const {
        int64_t bestCount = 0;
        for (const auto& [key, n] : pairCounts)
            if (n > bestCount || (n == bestCount && key < best)) best = key, bestCount = n;
        return bestCount > 0;
    }

    void merge(uint64_t key, int32_t id) {
        const auto a = static_cast<int32_t>(key >> 32), b = static_cast<int32_t>(key & 0xffffffff);
        auto holders = std::move(wordsWith[key]);
        wordsWith.erase(key);
        std::sort(holders.begin(), holders.end());
        holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
        for (int32_t w : holders) {
            auto& word = words[static_cast<size_t>(w)];
            const size_t before = word.size();
            std::vector<int32_t> joined = word;
            joinPair(joined, a, b, id);
            if (joined.size() == before) continue;  // a stale entry: merged away already
            count(w, -1);
            word = std::move(joined);
            count(w, +1);
        }
    }
};

}  // namespace

std::vector<std::string_view> splitWords(std::string_view text) {
    std::vector<std::string_view> out;
    // A run longer than kMaxWordBytes is cut into pieces of that size: a text without spaces
    // (Chinese, a minified file, a hostile one) would otherwise be one word, and BPE's cost
    // grows with the square of a word's length.
    auto emit = [&](size_t start, size_t length) {
        for (; length > kMaxWordBytes; start += kMaxWordBytes, length -= kMaxWordBytes)
            out.push_back(text.substr(start, kMaxWordBytes));
        out.push_back(text.substr(start, length));
    };
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        if (classOf(text[i]) == ByteClass::Space) {
            size_t j = i;
            while (j < n && classOf(text[j]) == ByteClass::Space) ++j;
            if (j == n || text[j - 1] != ' ') {
                emit(i, j - i);
                i = j;
                continue;
            }
            if (j - 1 > i) emit(i, j - 1 - i);
            i = j - 1;  // the last space leads the next word
        }
        const size_t start = i;
        if (text[i] == ' ') ++i;
        const ByteClass kind = classOf(text[i]);
        while (i < n && classOf(text[i]) == kind) ++i;
        emit(start, i - start);
    }
    return out;
}

Tokenizer::Tokenizer(std::vector<Merge> merges) : m_merges(std::move(merges)) {
    m_pieces.reserve(256 + m_merges.size());
    for (int c = 0; c < 256; ++c) m_pieces.emplace_back(1, static_cast<char>(c));
    for (size_t r = 0; r < m_merges.size(); ++r) {
        const auto [a, b] = m_merges[r];
        m_pieces.push_back(m_pieces[static_cast<size_t>(a)] + m_pieces[static_cast<size_t>(b)]);
        m_ranks.emplace(pairKey(a, b), static_cast<int32_t>(r));
    }
}

Tokenizer Tokenizer::trainBpe(std::string_view text, int64_t vocabSize) {
    BpeTrainer trainer(text.substr(0, static_cast<size_t>(kMaxBpeTrainingBytes)));
    std::vector<Merge> merges;
    const int64_t wanted = std::clamp<int64_t>(vocabSize, 256, kMaxVocabSize) - 256;
    while (static_cast<int64_t>(merges.size()) < wanted) {
        uint64_t key = 0;
        if (!trainer.bestPair(key)) break;
        const auto id = static_cast<int32_t>(256 + merges.size());
        merges.emplace_back(static_cast<int32_t>(key >> 32),
                            static_cast<int32_t>(key & 0xffffffff));
        trainer.merge(key, id);
    }
    return Tokenizer(std::move(merges));
}

Tokenizer Tokenizer::fromMerges(std::vector<Merge> merges) {
    const std::string problem = mergesProblem(merges);
    if (!problem.empty()) throw Error(ErrorCode::InvalidConfig, problem);
    return Tokenizer(std::move(merges));
}

std::vector<int32_t> Tokenizer::encodeWord(std::string_view word) const {
    std::vector<int32_t> ids(word.begin(), word.end());
    for (auto& id : ids) id &= 0xff;
    // Joining the lowest-ranked pair present, again and again, gives what training did to the
    // same word: a pair holding id 256 + r can only have a rank above r.
    while (ids.size() > 1) {
        int32_t bestRank = -1;
        for (size_t i = 0; i + 1 < ids.size(); ++i) {
            auto it = m_ranks.find(pairKey(ids[i], ids[i + 1]));
            if (it != m_ranks.end() && (bestRank < 0 || it->second < bestRank))
                bestRank = it->second;
        }
        if (bestRank < 0) break;
        const auto& [a, b] = m_merges[static_cast<size_t>(bestRank)];
        joinPair(ids, a, b, 256 + bestRank);
    }
    return ids;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
    std::vector<int32_t> out;
    if (isBytes()) {
        out.assign(text.begin(), text.end());
        for (auto& id : out) id &= 0xff;
        return out;
    }
    out.reserve(text.size() / 2);
    std::unordered_map<std::string_view, std::vector<int32_t>> seen;  // words repeat: Zipf
    for (auto word : splitWords(text)) {
        auto it = seen.find(word);
        if (it == seen.end()) it = seen.emplace(word, encodeWord(word)).first;
        out.insert(out.end(), it->second.begin(), it->second.end());
    }
    return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
    std::string out;
    for (int32_t id : ids) out += piece(id);
    return out;
}

std::string mergesProblem(const std::vector<Tokenizer::Merge>& merges) {
    if (static_cast<int64_t>(merges.size()) > kMaxVocabSize - 256)
        return "a BPE of " + std::to_string(merges.size()) + " merges (at most " +
               std::to_string(kMaxVocabSize - 256) + ")";
    for (size_t i = 0; i < merges.size(); ++i) {
        const auto [a, b] = merges[i];
        const auto known = static_cast<int32_t>(256 + i);
        if (a < 0 || b < 0 || a >= known || b >= known)
            return "BPE merge " + std::to_string(i) + " joins ids " + std::to_string(a) + " and " +
                   std::to_string(b) + ", but only ids below " + std::to_string(known) +
                   " exist before it";
    }
    return {};
}

int64_t trainingSplitBytes(int64_t corpusBytes, double valFraction) {
    return corpusBytes - static_cast<int64_t>(static_cast<double>(corpusBytes) * valFraction);
}

Tokenizer tokenizerFor(const DataConfig& data, const std::string& corpus) {
    if (data.tokenizer == TokenizerKind::Bytes) return Tokenizer();
    const int64_t n = trainingSplitBytes(static_cast<int64_t>(corpus.size()), data.valFraction);
    return Tokenizer::trainBpe(std::string_view(corpus).substr(0, static_cast<size_t>(n)),
                               data.vocabSize);
}

}  // namespace qklab
