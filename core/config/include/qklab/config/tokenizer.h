// qklab/config/tokenizer.h — text to token ids: bytes, or a byte-level BPE trained on the corpus.
//
// data.tokenizer = bytes keeps every byte a token (vocab 256; the default, and what every
// run before this key trained on). data.tokenizer = bpe trains a byte-level BPE of
// data.vocab_size ids on the corpus's training split when the run starts: ids 0-255 are the
// bytes, id 256 + i is merges[i], the pair of earlier ids it joins. A larger vocabulary has
// rare but occurring tokens, which is what output-logit divergence (Stollenwerk et al. 2026)
// needs and a 256-byte vocabulary lacks.
//
// Training is deterministic (ties go to the smaller pair of ids), so the same corpus and
// config give the same merges on every machine. The merges also go into every checkpoint, so
// text can be generated from one without the corpus, and a resume against a changed corpus is
// refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "qklab/util/choices.h"

namespace qklab {

struct DataConfig;

// The most text BPE training reads: the first 16 MiB of the training split (counting the words
// of a 1 GiB corpus would add seconds to every run's start for a few more rare merges).
constexpr int64_t kMaxBpeTrainingBytes = 16ll << 20;
constexpr int64_t kMaxVocabSize = 65536;
// The longest word BPE merges within (splitWords cuts longer runs).
constexpr size_t kMaxWordBytes = 64;

class Tokenizer {
  public:
    using Merge = std::pair<int32_t, int32_t>;

    Tokenizer() : Tokenizer(std::vector<Merge>{}) {}  // bytes
    // Up to vocabSize - 256 merges learnt from `text`; fewer when no pair is left to join.
    static Tokenizer trainBpe(std::string_view text, int64_t vocabSize);
    // Merges read back from a checkpoint: mergesProblem() must have accepted them.
    static Tokenizer fromMerges(std::vector<Merge> merges);

    bool isBytes() const { return m_merges.empty(); }
    int64_t idCount() const { return 256 + static_cast<int64_t>(m_merges.size()); }
    const std::vector<Merge>& merges() const { return m_merges; }

    std::vector<int32_t> encode(std::string_view text) const;
    const std::string& piece(int32_t id) const { return m_pieces.at(static_cast<size_t>(id)); }
    std::string decode(const std::vector<int32_t>& ids) const;

  private:
    explicit Tokenizer(std::vector<Merge> merges);
    std::vector<int32_t> encodeWord(std::string_view word) const;

    std::vector<Merge> m_merges;
    std::vector<std::string> m_pieces;              // the bytes each id stands for
    std::unordered_map<uint64_t, int32_t> m_ranks;  // pair of ids -> its merge's index
};

// Why `merges` (read from a file someone else may have made) is not a tokenizer, or "": each
// merge must join two ids that exist before it, and there may be at most 65536 - 256.
std::string mergesProblem(const std::vector<Tokenizer::Merge>& merges);

// The words BPE merges within: an optional leading space and a run of letters (or of bytes
// >= 0x80, so UTF-8 letters stay together), of digits or of other marks; whitespace runs
// between them give their last space to the next word (GPT-2's pre-tokenisation, in bytes).
// A run longer than kMaxWordBytes becomes several words of at most that many bytes.
std::vector<std::string_view> splitWords(std::string_view text);

// The bytes of the corpus that train the model (the rest is the validation split).
int64_t trainingSplitBytes(int64_t corpusBytes, double valFraction);

// The run's tokenizer: bytes, or a BPE trained on the training split of `corpus`.
Tokenizer tokenizerFor(const DataConfig& data, const std::string& corpus);

}  // namespace qklab
