// data_loader.cpp — see data_loader.h.
#include "data_loader.h"

#include <sstream>

#include "qklab/util/error.h"

namespace qklab {

ByteDataLoader::ByteDataLoader(const std::string& text, double valFraction, int64_t maxSeqLen,
                               uint64_t seed)
    : m_rng(seed) {
    const auto n = static_cast<int64_t>(text.size());
    const auto nVal = static_cast<int64_t>(static_cast<double>(n) * valFraction);
    const int64_t nTrain = n - nVal;
    if (nVal < maxSeqLen + 1 || nTrain < maxSeqLen + 1)
        throw Error(ErrorCode::InvalidConfig, "data.source has " + std::to_string(n) +
                                                  " bytes: too few for a " +
                                                  std::to_string(maxSeqLen) +
                                                  "-byte context in both the training and the "
                                                  "validation split (data.val_fraction)");
    auto all = torch::from_blob(const_cast<char*>(text.data()), {n}, torch::kUInt8).clone();
    m_train = all.narrow(0, 0, nTrain);
    m_val = all.narrow(0, nTrain, nVal);
}

Batch ByteDataLoader::gather(const torch::Tensor& source, const std::vector<int64_t>& offsets,
                             int64_t seqLen) {
    const auto B = static_cast<int64_t>(offsets.size());
    auto start = torch::tensor(offsets, torch::kInt64).unsqueeze(1);           // (B, 1)
    auto idx = start + torch::arange(seqLen + 1, torch::kInt64).unsqueeze(0);  // (B, T+1)
    auto rows =
        source.index_select(0, idx.reshape({-1})).reshape({B, seqLen + 1}).to(torch::kInt64);
    return {rows.narrow(1, 0, seqLen), rows.narrow(1, 1, seqLen)};
}

Batch ByteDataLoader::trainBatch(int64_t batchSize, int64_t seqLen) {
    const auto range = static_cast<uint64_t>(m_train.size(0) - seqLen - 1);
    std::vector<int64_t> offsets(batchSize);
    for (auto& o : offsets) o = static_cast<int64_t>(m_rng() % (range + 1));
    return gather(m_train, offsets, seqLen);
}

Batch ByteDataLoader::valBatch(int64_t index, int64_t batchesTotal, int64_t batchSize,
                               int64_t seqLen) {
    const int64_t count = batchesTotal * batchSize;
    const int64_t range = m_val.size(0) - seqLen - 1;
    std::vector<int64_t> offsets(batchSize);
    for (int64_t b = 0; b < batchSize; ++b)
        offsets[b] = range * (index * batchSize + b) / std::max<int64_t>(count, 1);
    return gather(m_val, offsets, seqLen);
}

Batch ByteDataLoader::dirtyBatch(const std::string& text, int64_t batchSize, int64_t seqLen) {
    // Every row is the same phrase repeated, each starting at another phase of it.
    std::string tiled;
    while (static_cast<int64_t>(tiled.size()) < seqLen + 1 + static_cast<int64_t>(text.size()))
        tiled += text;
    auto source =
        torch::from_blob(tiled.data(), {static_cast<int64_t>(tiled.size())}, torch::kUInt8).clone();
    std::vector<int64_t> offsets(batchSize);
    for (int64_t b = 0; b < batchSize; ++b) offsets[b] = b % static_cast<int64_t>(text.size());
    return gather(source, offsets, seqLen);
}

std::string ByteDataLoader::rngState() const {
    std::ostringstream os;
    os << m_rng;
    return os.str();
}

void ByteDataLoader::setRngState(const std::string& state) {
    std::istringstream is(state);
    is >> m_rng;
    if (!is) throw Error(ErrorCode::BadCheckpoint, "checkpoint: corrupt data-sampler state");
}

}  // namespace qklab
