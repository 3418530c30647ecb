// bench_decode: decode latency per token at long contexts, and cache bytes per token, for MHA,
// MLA without QK-norm, QK-Normed MLA with the absorbed cache (c_t + one inverse RMS per head)
// and QK-Normed MLA with the naive cache (full normalised keys). docs/BENCHMARKS.md has the
// table.
//
// The cache is filled with random values up to the context (what it holds does not change how
// long a step takes) and one token is decoded at position T - 1, repeatedly; the configs are
// interleaved round by round so that load on the machine hits them alike.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/src/model.h"
#include "qklab/engine/generate.h"

using namespace qklab;

namespace {

struct Variant {
    std::string name;
    RunConfig config;
    DecodeCache cache;
};

std::vector<Variant> variants(int64_t maxContext) {
    RunConfig base;
    base.model.dModel = 512;
    base.model.nHeads = 8;  // d_head 64
    base.model.nLayers = 4;
    base.model.seqLen = maxContext + 8;
    base.attention.mla.dC = 256;  // 4 x d_head, as DeepSeek-V2 (512 = 4 x 128)
    base.attention.mla.dRope = 32;
    RunConfig mha = base;
    RunConfig mla = base;
    mla.attention.kind = AttentionKind::Mla;
    RunConfig normed = mla;
    normed.attention.qkNorm = QkNormVariant::Rms;
    return {{"MHA", mha, DecodeCache::Materialised},
            {"MLA, no QK-norm", mla, DecodeCache::Absorbed},
            {"QK-Normed MLA, absorbed", normed, DecodeCache::Absorbed},
            {"QK-Normed MLA, naive", normed, DecodeCache::Materialised}};
}

struct Loaded {
    Transformer model{nullptr};
    AttentionSwitches sw;
    DecodeState state;
};

Loaded load(const Variant& v, int64_t context) {
    torch::manual_seed(1);
    Loaded l;
    l.model = Transformer(v.config);
    l.model->eval();
    l.sw = attentionSwitches(v.config, settingsAt(v.config, 0));
    l.state = l.model->newDecodeState(v.cache, 1, context, l.sw);
    torch::NoGradGuard g;
    for (auto& layer : l.state.layers)
        for (auto* t : {&layer.k, &layer.v, &layer.latent, &layer.ropeKey, &layer.contentKeys})
            if (t->defined()) t->normal_();
    for (auto& layer : l.state.layers)  // inverse RMS of unit-variance keys: about 1
        if (layer.keyInvRms.defined()) layer.keyInvRms.uniform_(0.8, 1.2);
    return l;
}

double decodeOnceMs(Loaded& l, int64_t context) {
    l.state.length = context - 1;
    auto token = torch::full({1, 1}, 65, torch::kInt64);
    const auto t0 = std::chrono::steady_clock::now();
    auto logits = l.model->decode(token, l.state, l.sw);
    (void)logits.sum().item<float>();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"decode latency per token and cache bytes per token"};
    std::vector<int64_t> contexts{1024, 4096, 16384, 32768};
    int rounds = 15;
    int threads = 0;
    app.add_option("--contexts", contexts, "context lengths");
    app.add_option("--rounds", rounds, "timed decodes per config and context (median reported)");
    app.add_option("--threads", threads, "intra-op threads (0 = all cores)");
    CLI11_PARSE(app, argc, argv);
    if (threads > 0) torch::set_num_threads(threads);
    const auto all = variants(*std::max_element(contexts.begin(), contexts.end()));
    std::printf("model: d_model 512, 8 heads x 64, 4 layers, MLA d_c 256, d_rope 32; %d threads\n",
                torch::get_num_threads());
    std::printf("| config | cache | bytes/token |");
    for (auto t : contexts) std::printf(" ms/token @%lldk |", static_cast<long long>(t / 1024));
    std::printf("\n|---|---|---|");
    for (size_t i = 0; i < contexts.size(); ++i) std::printf("---|");
    std::printf("\n");
    std::vector<std::vector<double>> ms(all.size(), std::vector<double>(contexts.size()));
    for (size_t c = 0; c < contexts.size(); ++c) {
        std::vector<Loaded> loaded;
        for (const auto& v : all) loaded.push_back(load(v, contexts[c]));
        std::vector<std::vector<double>> times(all.size());
        for (auto& l : loaded) decodeOnceMs(l, contexts[c]);  // warm-up
        for (int r = 0; r < rounds; ++r)
            for (size_t i = 0; i < all.size(); ++i)
                times[i].push_back(decodeOnceMs(loaded[i], contexts[c]));
        for (size_t i = 0; i < all.size(); ++i) ms[i][c] = median(times[i]);
    }
    for (size_t i = 0; i < all.size(); ++i) {
        const auto layout = cacheLayout(all[i].config, all[i].cache);
        std::printf("| %s | %s | %lld |", all[i].name.c_str(), nameOf(layout.kind),
                    static_cast<long long>(layout.bytesPerToken));
        for (double m : ms[i]) std::printf(" %.2f |", m);
        std::printf("\n");
    }
    // The paper's comparison: absorbed QK-norm against plain MLA (same cache otherwise).
    const auto plain = cacheLayout(all[1].config, all[1].cache);
    const auto normed = cacheLayout(all[2].config, all[2].cache);
    std::printf("\nabsorbed QK-norm vs MLA without: cache %+.2f%%; latency",
                100.0 * (double(normed.bytesPerToken) / double(plain.bytesPerToken) - 1.0));
    for (size_t c = 0; c < contexts.size(); ++c)
        std::printf(" %+.1f%% @%lldk", 100.0 * (ms[2][c] / ms[1][c] - 1.0),
                    static_cast<long long>(contexts[c] / 1024));
    std::printf("\n");
    return 0;
}
