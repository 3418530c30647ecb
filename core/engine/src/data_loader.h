// data_loader.h — byte batches from a corpus (private to core).
//
// Training batches come from random offsets drawn with our own mt19937_64 (its state goes
// into checkpoints, so a resumed run sees the same batches); validation batches come from
// fixed, evenly spaced offsets so validation losses are comparable across steps.
#pragma once

#include <torch/torch.h>

#include <random>
#include <string>

namespace qklab {

struct Batch {
    torch::Tensor x, y;  // (B, T) int64: inputs and next-byte targets
};

class ByteDataLoader {
  public:
    ByteDataLoader(const std::string& text, double valFraction, int64_t maxSeqLen, uint64_t seed);
    Batch trainBatch(int64_t batchSize, int64_t seqLen);
    Batch valBatch(int64_t index, int64_t batchesTotal, int64_t batchSize, int64_t seqLen);
    Batch dirtyBatch(const std::string& text, int64_t batchSize, int64_t seqLen);
    std::string rngState() const;
    void setRngState(const std::string& state);

  private:
    Batch gather(const torch::Tensor& source, const std::vector<int64_t>& offsets, int64_t seqLen);
    torch::Tensor m_train, m_val;  // (N) uint8
    std::mt19937_64 m_rng;
};

}  // namespace qklab
