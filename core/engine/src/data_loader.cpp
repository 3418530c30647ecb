// data_loader.cpp — see data_loader.h.
#include "data_loader.h"

#include <sstream>

#include "qklab/util/error.h"

namespace qklab {

TokenDataLoader::TokenDataLoader(const std::string& text, const Tokenizer& tokenizer,
                                 double valFraction, int64_t maxSeqLen, uint64_t seed)
    : m_tokenizer(tokenizer), m_rng(seed) {
    const auto n = static_cast<int64_t>(text.size());
    const int64_t nTrain = trainingSplitBytes(n, valFraction);
    const std::string_view all(text);
    m_train = tokensOf(all.substr(0, static_cast<size_t>(nTrain)));
    m_val = tokensOf(all.substr(static_cast<size_t>(nTrain)));
    if (m_val.size(0) < maxSeqLen + 1 || m_train.size(0) < maxSeqLen + 1) {
        const bool bytes = m_tokenizer.isBytes();
        const std::string tokens =
            bytes ? std::string()
                  : ", " + std::to_string(m_train.size(0) + m_val.size(0)) + " BPE tokens";
        throw Error(ErrorCode::InvalidConfig,
                    "data.source has " + std::to_string(n) + " bytes" + tokens +
                        ": too few for a " + std::to_string(maxSeqLen) +
                        (bytes ? "-byte" : "-token") +
                        " context in both the training and the validation split "
                        "(data.val_fraction)");
    }
}

torch::Tensor TokenDataLoader::tokensOf(std::string_view text) const {
    if (m_tokenizer.isBytes())  // one byte per token, as stored: a quarter of int32's memory
        return torch::from_blob(const_cast<char*>(text.data()), {static_cast<int64_t>(text.size())},
                                torch::kUInt8)
            .clone();
    auto ids = m_tokenizer.encode(text);
    return torch::from_blob(ids.data(), {static_cast<int64_t>(ids.size())}, torch::kInt32).clone();
}

Batch TokenDataLoader::gather(const torch::Tensor& source, const std::vector<int64_t>& offsets,
                              int64_t seqLen) {
    const auto B = static_cast<int64_t>(offsets.size());
    auto start = torch::tensor(offsets, torch::kInt64).unsqueeze(1);           // (B, 1)
    auto idx = start + torch::arange(seqLen + 1, torch::kInt64).unsqueeze(0);  // (B, T+1)
    auto rows =
        source.index_select(0, idx.reshape({-1})).reshape({B, seqLen + 1}).to(torch::kInt64);
    return {rows.narrow(1, 0, seqLen), rows.narrow(1, 1, seqLen)};
}

Batch TokenDataLoader::trainBatch(int64_t batchSize, int64_t seqLen) {
    const auto range = static_cast<uint64_t>(m_train.size(0) - seqLen - 1);
    std::vector<int64_t> offsets(batchSize);
    for (auto& o : offsets) o = static_cast<int64_t>(m_rng() % (range + 1));
    return gather(m_train, offsets, seqLen);
}

Batch TokenDataLoader::valBatch(int64_t index, int64_t batchesTotal, int64_t batchSize,
                                int64_t seqLen) {
    const int64_t count = batchesTotal * batchSize;
    const int64_t range = m_val.size(0) - seqLen - 1;
    std::vector<int64_t> offsets(batchSize);
    for (int64_t b = 0; b < batchSize; ++b)
        offsets[b] = range * (index * batchSize + b) / std::max<int64_t>(count, 1);
    return gather(m_val, offsets, seqLen);
}

Batch TokenDataLoader::dirtyBatch(const std::string& text, int64_t batchSize, int64_t seqLen) {
    // Every row is the same phrase repeated, each starting at another phase of it.
    const auto phrase = tokensOf(text);
    const int64_t period = phrase.size(0);
    if (period == 0) throw Error(ErrorCode::InvalidConfig, "dirty_batch: the text is empty");
    const int64_t copies = (seqLen + 1 + period) / period + 1;
    auto source = phrase.repeat({copies});
    std::vector<int64_t> offsets(batchSize);
    for (int64_t b = 0; b < batchSize; ++b) offsets[b] = b % period;
    return gather(source, offsets, seqLen);
}

std::string TokenDataLoader::rngState() const {
    std::ostringstream os;
    os << m_rng;
    return os.str();
}

void TokenDataLoader::setRngState(const std::string& state) {
    std::istringstream is(state);
    is >> m_rng;
    if (!is) throw Error(ErrorCode::BadCheckpoint, "checkpoint: corrupt data-sampler state");
}

torch::Tensor mergesTensor(const Tokenizer& tokenizer) {
    std::vector<int32_t> flat;
    for (const auto& [a, b] : tokenizer.merges()) flat.insert(flat.end(), {a, b});
    const auto m = static_cast<int64_t>(tokenizer.merges().size());
    if (m == 0) return torch::zeros({0, 2}, torch::kInt32);  // a text with no pair to join
    return torch::tensor(flat, torch::kInt32).view({m, 2});
}

Tokenizer tokenizerFromMerges(const torch::Tensor& merges, const std::string& where) {
    if (merges.dim() != 2 || merges.size(1) != 2 || merges.scalar_type() != torch::kInt32)
        throw Error(ErrorCode::BadCheckpoint, where +
                                                  ": its BPE merges are not an (M, 2) int32 "
                                                  "tensor");
    auto host = merges.contiguous().cpu();
    const int32_t* v = host.data_ptr<int32_t>();
    std::vector<Tokenizer::Merge> pairs;
    for (int64_t i = 0; i < host.size(0); ++i) pairs.emplace_back(v[2 * i], v[2 * i + 1]);
    const std::string problem = mergesProblem(pairs);
    if (!problem.empty()) throw Error(ErrorCode::BadCheckpoint, where + ": " + problem);
    return Tokenizer::fromMerges(std::move(pairs));
}

}  // namespace qklab
