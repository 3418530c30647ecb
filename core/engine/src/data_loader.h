// data_loader.h — token batches from a corpus (private to core).
//
// Training batches come from random offsets drawn with our own mt19937_64 (its state goes
// into checkpoints, so a resumed run sees the same batches); validation batches come from
// fixed, evenly spaced offsets so validation losses are comparable across steps.
#pragma once

#include <torch/torch.h>

#include <random>
#include <string>

#include "qklab/config/tokenizer.h"

namespace qklab {

struct Batch {
    torch::Tensor x, y;  // (B, T) int64: inputs and next-token targets
};

// The text is split into training and validation bytes first and each part encoded on its own,
// so that the BPE (trained on the training part) never reads the validation text.
class TokenDataLoader {
  public:
    TokenDataLoader(const std::string& text, const Tokenizer& tokenizer, double valFraction,
                    int64_t maxSeqLen, uint64_t seed);
    Batch trainBatch(int64_t batchSize, int64_t seqLen);
    Batch valBatch(int64_t index, int64_t batchesTotal, int64_t batchSize, int64_t seqLen);
    Batch dirtyBatch(const std::string& text, int64_t batchSize, int64_t seqLen);
    const Tokenizer& tokenizer() const { return m_tokenizer; }
    int64_t trainTokens() const { return m_train.size(0); }
    int64_t valTokens() const { return m_val.size(0); }
    std::string rngState() const;
    void setRngState(const std::string& state);

  private:
    torch::Tensor tokensOf(std::string_view text) const;
    Batch gather(const torch::Tensor& source, const std::vector<int64_t>& offsets, int64_t seqLen);
    Tokenizer m_tokenizer;
    torch::Tensor m_train, m_val;  // (N) uint8 bytes, or int32 BPE ids
    std::mt19937_64 m_rng;
};

// A BPE's merges as the (M, 2) int32 tensor checkpoints keep them in, and back. mergesFrom
// throws Error{BadCheckpoint} naming `where` for merges no tokenizer can have.
torch::Tensor mergesTensor(const Tokenizer& tokenizer);
Tokenizer tokenizerFromMerges(const torch::Tensor& merges, const std::string& where);

}  // namespace qklab
