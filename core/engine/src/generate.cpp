// generate.cpp — text from a checkpoint: prefill the prompt, then one token at a time through
// the KV cache (or without one, recomputing the whole context), greedy or sampled. A BPE run's
// tokenizer comes from the checkpoint's merges, so no corpus is read.
#include "qklab/engine/generate.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include "data_loader.h"
#include "mla_attention.h"
#include "model.h"
#include "qklab/config/resources.h"
#include "qklab/config/schedules.h"
#include "qklab/util/error.h"

namespace qklab {

namespace {

int64_t lastStepOf(const RunConfig& c, int64_t atStep) {
    return atStep < 0 ? c.schedule.steps - 1 : std::min(atStep, c.schedule.steps - 1);
}

DecodeCache resolve(const RunConfig& c, DecodeCache requested) {
    const bool mla = c.attention.kind == AttentionKind::Mla;
    if (requested == DecodeCache::Auto)
        return mla ? DecodeCache::Absorbed : DecodeCache::Materialised;
    if (requested == DecodeCache::Absorbed && !mla)
        throw Error(ErrorCode::InvalidConfig,
                    "cache \"absorbed\" needs attention.kind = mla (this run is mha): use "
                    "\"materialised\" or \"none\"");
    return requested;
}

// Pick the next token: argmax at temperature 0, else a draw from softmax(logits / T) made on the
// host with a seeded engine, so that the same seed gives the same text on every machine.
int64_t pickToken(const torch::Tensor& logits, double temperature, std::mt19937_64& rng) {
    auto l = logits.to(torch::kFloat64).contiguous().cpu();
    const double* v = l.data_ptr<double>();
    const int64_t n = l.numel();
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
        if (v[i] > v[best]) best = i;
    if (temperature <= 0) return best;
    std::vector<double> weights(static_cast<size_t>(n));
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += weights[i] = std::exp((v[i] - v[best]) / temperature);
    double u = std::uniform_real_distribution<double>(0.0, sum)(rng);
    for (int64_t i = 0; i < n; ++i)
        if ((u -= weights[i]) < 0) return i;
    return best;
}

torch::Tensor tokensOf(const std::vector<int64_t>& ids) {
    return torch::tensor(ids, torch::kInt64).view({1, -1});
}

// The checkpoint's weights and step, and the tokenizer its run trained with.
Tokenizer loadInto(Transformer& model, const RunConfig& config, const std::string& path,
                   int64_t& checkpointStep) {
    Tokenizer tokenizer;
    try {
        torch::serialize::InputArchive archive;
        archive.load_from(path, torch::kCPU);
        model->load(archive);
        torch::Tensor next;
        archive.read("next_step", next);
        checkpointStep = next.item<int64_t>();
        if (config.data.tokenizer == TokenizerKind::Bpe) {
            torch::Tensor merges;
            if (!archive.try_read("bpe_merges", merges))
                throw Error(ErrorCode::BadCheckpoint,
                            "checkpoint " + path + " has no BPE merges (data.tokenizer = bpe)");
            tokenizer = tokenizerFromMerges(merges, "checkpoint " + path);
        }
    } catch (const c10::Error& e) {
        throw Error(ErrorCode::BadCheckpoint,
                    "checkpoint " + path + " cannot be loaded: " + e.what_without_backtrace());
    }
    return tokenizer;
}

}  // namespace

CacheLayout cacheLayout(const RunConfig& c, DecodeCache requested, int64_t atStep) {
    CacheLayout out;
    out.kind = resolve(c, requested);
    const int64_t L = c.model.nLayers, H = c.model.nHeads, dh = c.dHead();
    const int64_t dc = c.attention.mla.dC, dr = c.attention.mla.dRope;
    const auto sw = attentionSwitches(c, settingsAt(c, lastStepOf(c, atStep)));
    const int64_t groups = LatentAttentionImpl::keyScalarGroups(c, sw);
    const bool mla = c.attention.kind == AttentionKind::Mla;
    auto n = [](int64_t v) { return std::to_string(v); };
    if (out.kind == DecodeCache::None) {
        out.description = "no cache: the whole context is recomputed for every byte";
    } else if (!mla) {
        out.elementsPerToken = 2 * L * H * dh;
        out.description = "keys and values, " + n(H) + " heads x " + n(dh) + " x 2, per layer";
    } else if (out.kind == DecodeCache::Materialised) {
        out.elementsPerToken = L * (dc + dr + H * dh);
        out.description = "latent " + n(dc) + " + RoPE key " + n(dr) + " + normalised keys " +
                          n(H) + " x " + n(dh) + ", per layer";
    } else {
        out.elementsPerToken = L * (dc + dr + groups);
        out.description = "latent " + n(dc) + " + RoPE key " + n(dr) +
                          (groups ? " + " + n(groups) + " inverse RMS" : std::string()) +
                          ", per layer";
    }
    out.bytesPerToken = out.elementsPerToken * static_cast<int64_t>(sizeof(float));
    return out;
}

GenerateResult generateFromCheckpoint(const RunConfig& config, const std::string& checkpointPath,
                                      const GenerateOptions& options,
                                      const std::function<bool(const std::string&)>& onText) {
    if (!std::filesystem::exists(checkpointPath))
        throw Error(ErrorCode::MissingFile, "checkpoint " + checkpointPath + " does not exist");
    torch::NoGradGuard noGrad;
    // Capped to the cores, as run.threads: torch::set_num_threads(100000) crashed, and 2^31
    // turned negative on the way to int.
    if (options.threads > 0)
        torch::set_num_threads(static_cast<int>(cappedThreads(options.threads)));
    Transformer model(config);
    GenerateResult result;
    const Tokenizer tokenizer = loadInto(model, config, checkpointPath, result.checkpointStep);
    model->eval();
    const int64_t step = std::max<int64_t>(0, result.checkpointStep - 1);
    result.cache = cacheLayout(config, options.cache, step);
    auto sw = attentionSwitches(config, settingsAt(config, step));
    const int64_t window = model->maxSeqLen(), keep = std::max<int64_t>(1, window / 2);

    const auto promptIds = tokenizer.encode(options.prompt);
    std::vector<int64_t> context(promptIds.begin(), promptIds.end());
    if (context.empty()) context.push_back('\n');
    if (static_cast<int64_t>(context.size()) > window)
        context.erase(context.begin(), context.end() - keep);

    DecodeState state;
    const bool cached = result.cache.kind != DecodeCache::None;
    auto refill = [&]() {  // the whole context through the model: a prefill, or no-cache decode
        if (!cached) return model->logits(tokensOf(context), sw)[0][-1];
        state = model->newDecodeState(result.cache.kind, 1, window, sw);
        return model->decode(tokensOf(context), state, sw)[0][-1];
    };
    auto last = refill();
    std::mt19937_64 rng(options.seed);
    const auto t0 = std::chrono::steady_clock::now();
    int64_t tokens = 0;
    while (tokens < options.tokens) {
        const int64_t id = pickToken(last, options.temperature, rng);
        // A BPE model's unused ids (a text with fewer pairs than data.vocab_size) decode to
        // nothing; training pushes their logits far down, so they are all but never drawn.
        const std::string piece =
            id < tokenizer.idCount() ? tokenizer.piece(static_cast<int32_t>(id)) : std::string();
        result.text += piece;
        ++tokens;
        if ((onText && !onText(piece)) || tokens == options.tokens) break;
        context.push_back(id);
        if (static_cast<int64_t>(context.size()) > window) {
            // Outgrown the trained context: keep the last half and rebuild the cache from it.
            context.erase(context.begin(), context.end() - keep);
            last = refill();
        } else if (cached) {
            last = model->decode(tokensOf({id}), state, sw)[0][-1];
        } else {
            last = refill();
        }
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    result.msPerToken = ms / static_cast<double>(std::max<int64_t>(1, tokens));
    return result;
}

}  // namespace qklab
