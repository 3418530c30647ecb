// mla_test.cpp — QK-Normed MLA, decoding and QK-Clip, exactness first: the absorbed logits
// equal the materialised ones (1e-10 in float64, 1e-5 in float32) on random weights and on a
// trained checkpoint; greedy decoding with a cache equals decoding without one; cache bytes per
// token equal the formula; QK-Clip brings a head to exactly tau and leaves the others alone;
// the sqrt(d_head + d_rope) bound holds under MLA with RMS QK-norm.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "engine/src/mla_attention.h"
#include "engine/src/model.h"
#include "engine/src/probes.h"
#include "qklab/analysis/histogram_bins.h"
#include "qklab/config/resources.h"
#include "qklab/engine/generate.h"
#include "qklab/engine/trainer.h"
#include "qklab/util/error.h"
#include "support/test_files.h"

using namespace qklab;
namespace fs = std::filesystem;

namespace {

RunConfig mlaConfig(QkNormVariant norm = QkNormVariant::Rms) {
    RunConfig c;
    c.model.dModel = 64;
    c.model.nLayers = 2;
    c.model.nHeads = 4;  // d_head 16
    c.model.seqLen = 32;
    c.attention.kind = AttentionKind::Mla;
    c.attention.mla.dC = 24;
    c.attention.mla.dRope = 8;  // d_qk = 24: bound sqrt(24)
    c.attention.qkNorm = norm;
    c.attention.qkGainPerHead = true;
    return c;
}

AttentionSwitches switches(const RunConfig& c, int64_t step = 0) {
    return attentionSwitches(c, settingsAt(c, step));
}

// Gains away from 1, so that absorbing gamma_q * gamma_k is actually exercised.
void randomiseGains(Transformer& model) {
    torch::NoGradGuard g;
    for (auto& item : model->named_parameters())
        if (item.key().find("gain") != std::string::npos)
            item.value().copy_(1.0 + 0.5 * torch::randn_like(item.value()));
}

double relativeError(const torch::Tensor& a, const torch::Tensor& b) {
    return ((a - b).abs().max() / b.abs().max()).item<double>();
}

// Per layer, on that layer's real input: the absorbed against the materialised logits.
double worstAbsorbedError(Transformer& model, const RunConfig& c, const AttentionSwitches& sw,
                          const torch::Tensor& tokens) {
    torch::NoGradGuard g;
    const int64_t T = tokens.size(1);
    auto buffers = model->named_buffers();
    const auto cos = buffers["rope_cos"].narrow(0, 0, T), sin = buffers["rope_sin"].narrow(0, 0, T);
    auto x = torch::nn::functional::embedding(tokens, model->named_parameters()["tokens.weight"]);
    const auto mask = torch::full({T, T}, -INFINITY, x.options()).triu(1);
    double worst = 0;
    for (int64_t l = 0; l < model->nLayers(); ++l) {
        auto& b = model->block(l);
        const auto in = b->attentionInput(x);
        auto* mla = b->attn->as<LatentAttentionImpl>();
        worst = std::max(worst, relativeError(mla->absorbedLogits(in, cos, sin, sw),
                                              mla->materialisedLogits(in, cos, sin, sw)));
        x = b->forward(x, cos, sin, mask, sw, nullptr);
    }
    (void)c;
    return worst;
}

}  // namespace

TEST(Mla, RmsQkNormBoundsEveryLogitBySqrtDQkAndProbesReadIt) {
    for (auto norm : {QkNormVariant::None, QkNormVariant::Rms}) {
        const RunConfig c = mlaConfig(norm);
        torch::manual_seed(3);
        Transformer model(c);
        {
            torch::NoGradGuard g;  // blown-up query and key projections
            for (auto& item : model->named_parameters())
                if (item.key().find(".q.") != std::string::npos ||
                    item.key().find("k_up") != std::string::npos ||
                    item.key().find("k_rope") != std::string::npos)
                    item.value().mul_(100.0);
        }
        auto tokens = torch::randint(0, 256, {2, c.model.seqLen}, torch::kInt64);
        std::vector<AttentionCapture> caps;
        model->forward(tokens, tokens, switches(c), &caps);
        const double bound = std::sqrt(static_cast<double>(c.dQk()));
        EXPECT_EQ(caps[0].q.size(-1), c.dQk());
        const double m = caps[0].raw.abs().max().item<double>();
        if (norm == QkNormVariant::None) {
            EXPECT_GT(m, 100.0);  // the control
            continue;
        }
        EXPECT_LE(m, bound * (1 + 1e-5));
        EXPECT_GT(m, 0.5 * bound);
        std::vector<ProbeStats> stats;
        std::vector<LogitHistogram> hists;
        ProbeSettings ps;
        ps.bins = histogramBinsOf(c.probes);
        computeProbes(0, caps, ps, stats, hists);
        ASSERT_FALSE(stats.empty());
        for (const auto& s : stats) EXPECT_LE(s.logitMaxRaw, bound * (1 + 1e-5));
        // |q| = sqrt(d_head + d_rope) for every token: both parts RMS-normalised.
        EXPECT_NEAR(caps[1].q.norm(2, -1).max().item<double>(), bound, 1e-3);
    }
}

TEST(Mla, AbsorbedLogitsEqualMaterialisedOnRandomWeights) {
    const std::vector<std::pair<QkNormVariant, QkNormTarget>> cases{
        {QkNormVariant::None, QkNormTarget::QK},      {QkNormVariant::Rms, QkNormTarget::QK},
        {QkNormVariant::RmsAffine, QkNormTarget::QK}, {QkNormVariant::RmsAffine, QkNormTarget::K},
        {QkNormVariant::L2Scale, QkNormTarget::QK},   {QkNormVariant::WholeRms, QkNormTarget::QK}};
    for (const auto& [norm, target] : cases) {
        RunConfig c = mlaConfig(norm);
        c.attention.qkNormOn = target;
        c.attention.mla.qLora = norm == QkNormVariant::Rms ? 12 : 0;  // both query paths
        for (auto dtype : {torch::kFloat64, torch::kFloat32}) {
            torch::manual_seed(11);
            Transformer model(c);
            randomiseGains(model);
            model->to(dtype);
            auto tokens = torch::randint(0, 256, {2, c.model.seqLen}, torch::kInt64);
            const double err = worstAbsorbedError(model, c, switches(c), tokens);
            SCOPED_TRACE(std::string(nameOf(norm)) + "/" + nameOf(target));
            EXPECT_LT(err, dtype == torch::kFloat64 ? 1e-10 : 1e-5);
        }
    }
}

TEST(Decode, CacheBytesPerTokenEqualTheFormula) {
    auto allocatedBytesPerToken = [](const RunConfig& c, DecodeCache mode) {
        torch::manual_seed(1);
        Transformer model(c);
        const auto st = model->newDecodeState(mode, 1, 16, switches(c));
        int64_t bytes = 0;
        for (const auto& l : st.layers)
            for (const auto* t : {&l.k, &l.v, &l.latent, &l.ropeKey, &l.contentKeys, &l.keyInvRms})
                if (t->defined()) bytes += t->numel() * static_cast<int64_t>(t->element_size());
        return bytes / 16;
    };
    RunConfig mha = mlaConfig();
    mha.attention.kind = AttentionKind::Mha;
    const int64_t L = 2, H = 4, dh = 16, dc = 24, dr = 8, f32 = 4;
    EXPECT_EQ(cacheLayout(mha, DecodeCache::Auto).bytesPerToken, 2 * L * H * dh * f32);
    EXPECT_EQ(allocatedBytesPerToken(mha, DecodeCache::Materialised), 2 * L * H * dh * f32);

    const RunConfig plain = mlaConfig(QkNormVariant::None);
    EXPECT_EQ(cacheLayout(plain, DecodeCache::Absorbed).bytesPerToken, L * (dc + dr) * f32);
    EXPECT_EQ(allocatedBytesPerToken(plain, DecodeCache::Absorbed), L * (dc + dr) * f32);

    const RunConfig normed = mlaConfig(QkNormVariant::Rms);  // G = H inverse RMS per token
    EXPECT_EQ(cacheLayout(normed, DecodeCache::Absorbed).bytesPerToken, L * (dc + dr + H) * f32);
    EXPECT_EQ(allocatedBytesPerToken(normed, DecodeCache::Absorbed), L * (dc + dr + H) * f32);
    EXPECT_EQ(allocatedBytesPerToken(normed, DecodeCache::Materialised),
              L * (dc + dr + H * dh) * f32);
    const RunConfig whole = mlaConfig(QkNormVariant::WholeRms);  // G = 1
    EXPECT_EQ(allocatedBytesPerToken(whole, DecodeCache::Absorbed), L * (dc + dr + 1) * f32);
    EXPECT_THROW(cacheLayout(mha, DecodeCache::Absorbed), Error);
}

TEST(Decode, GreedyWithACacheEqualsRecomputingWithout) {
    RunConfig mha = mlaConfig();
    mha.attention.kind = AttentionKind::Mha;
    mha.attention.qkNorm = QkNormVariant::RmsAffine;
    mha.attention.softcap.kind = SoftcapKind::Tanh;
    mha.attention.softcap.c = 3.0;  // the cap acts in decode too
    const std::vector<std::pair<RunConfig, DecodeCache>> cases{
        {mha, DecodeCache::Materialised},
        {mlaConfig(QkNormVariant::None), DecodeCache::Absorbed},
        {mlaConfig(QkNormVariant::RmsAffine), DecodeCache::Materialised},
        {mlaConfig(QkNormVariant::RmsAffine), DecodeCache::Absorbed}};
    for (const auto& [c, mode] : cases) {
        torch::manual_seed(5);
        Transformer model(c);
        randomiseGains(model);
        model->to(torch::kFloat64);
        const auto sw = switches(c);
        torch::NoGradGuard g;
        std::vector<int64_t> cached{'T', 'h', 'e', ' '}, recomputed = cached;
        auto st = model->newDecodeState(mode, 1, c.model.seqLen, sw);
        auto last = model->decode(torch::tensor(cached).view({1, -1}), st, sw)[0][-1];
        double worst = 0;
        while (static_cast<int64_t>(cached.size()) < c.model.seqLen) {
            auto full = model->logits(torch::tensor(recomputed).view({1, -1}), sw)[0][-1];
            worst = std::max(worst, relativeError(last, full));
            cached.push_back(last.argmax().item<int64_t>());
            recomputed.push_back(full.argmax().item<int64_t>());
            ASSERT_EQ(cached, recomputed);
            if (static_cast<int64_t>(cached.size()) < c.model.seqLen)
                last = model->decode(torch::tensor({cached.back()}).view({1, -1}), st, sw)[0][-1];
        }
        EXPECT_LT(worst, 1e-10) << nameOf(c.attention.kind) << " " << nameOf(mode);
    }
}

TEST(QkClip, AHeadAboveTauEndsAtTauAndTheOthersAreUntouched) {
    for (auto kind : {AttentionKind::Mha, AttentionKind::Mla}) {
        RunConfig c = mlaConfig(QkNormVariant::None);
        c.attention.kind = kind;
        torch::manual_seed(9);
        Transformer model(c);
        model->to(torch::kFloat64);
        torch::NoGradGuard g;
        const auto sw = switches(c);
        auto tokens = torch::randint(0, 256, {2, c.model.seqLen}, torch::kInt64);
        // Head 1 of layer 0 blown up; everything else small.
        const std::string qName =
            kind == AttentionKind::Mha ? "block0.attn.qkv.weight" : "block0.attn.q.weight";
        auto params = model->named_parameters();
        const int64_t qRows = kind == AttentionKind::Mha ? 16 : 16 + 8;
        params[qName].narrow(0, qRows, qRows).mul_(600.0);
        std::map<std::string, torch::Tensor> before;
        for (auto& p : params) before[p.key()] = p.value().clone();
        const double tau = 5.0;
        const auto clips = model->qkClip(tokens, sw, tau, 7);
        ASSERT_FALSE(clips.empty());
        EXPECT_EQ(clips[0].layer, 0);
        EXPECT_EQ(clips[0].head, 1);
        EXPECT_EQ(clips[0].step, 7);
        EXPECT_GT(clips[0].sMax, tau);
        EXPECT_NEAR(clips[0].factor, std::sqrt(tau / clips[0].sMax), 1e-12);
        // Every head now at most tau on the same batch, the clipped one exactly tau.
        auto x = torch::nn::functional::embedding(tokens, params["tokens.weight"]);
        const int64_t T = c.model.seqLen;
        auto mask = torch::full({T, T}, -INFINITY, torch::kFloat64).triu(1);
        for (int64_t l = 0; l < model->nLayers(); ++l) {
            auto& b = model->block(l);
            const auto in = b->attentionInput(x);
            auto cos = model->named_buffers()["rope_cos"].narrow(0, 0, T);
            auto sin = model->named_buffers()["rope_sin"].narrow(0, 0, T);
            auto m = b->attn->maxLogitPerHead(in, cos, sin, sw);
            EXPECT_LE(m.max().item<double>(), tau * (1 + 1e-5));
            if (l == 0) {
                EXPECT_NEAR(m[1].item<double>(), tau, tau * 1e-5);
            }
            x = b->forward(x, cos, sin, mask, sw, nullptr);
        }
        // Only the clipped head's own rows changed; shared weights (W_KR, the latent) kept.
        int changed = 0;
        for (auto& p : params) changed += !torch::equal(before[p.key()], p.value());
        EXPECT_EQ(changed, kind == AttentionKind::Mha ? 1 : 2);
        if (kind == AttentionKind::Mla) {
            EXPECT_TRUE(torch::equal(before["block0.attn.k_rope.weight"],
                                     params["block0.attn.k_rope.weight"]));
            auto wk = params["block0.attn.k_up.weight"];
            EXPECT_TRUE(torch::equal(before["block0.attn.k_up.weight"].narrow(0, 0, 16),
                                     wk.narrow(0, 0, 16)));  // head 0's W_UK rows
        }
    }
}

namespace {

struct ClipCollector : TrainingObserver {
    std::vector<QkClip> clips;
    std::vector<StepMetrics> steps;
    void onQkClips(int64_t step, const std::vector<QkClip>& c) override {
        for (const auto& clip : c) {
            EXPECT_EQ(clip.step, step);
            clips.push_back(clip);
        }
    }
    void onStep(const StepMetrics& m) override { steps.push_back(m); }
};

}  // namespace

TEST(QkClip, SwitchedOnMidRunItClipsFromThatStepAndReportsEachClip) {
    for (auto kind : {AttentionKind::Mha, AttentionKind::Mla}) {
        RunConfig c = mlaConfig(QkNormVariant::None);
        c.attention.kind = kind;
        c.model.nLayers = 1;
        c.schedule.steps = 30;
        c.schedule.warmupSteps = 0;
        c.optim.lr = 3e-2;
        c.data.batchSize = 4;
        c.eval.every = 0;
        c.eval.batches = 1;
        c.run.threads = 2;
        c.probes.every = 0;
        Event on;
        on.step = 12;
        on.kind = EventKind::QkClip;
        on.args.tau = 1.5;  // low, so that this small run needs clipping
        c.events.push_back(on);
        Trainer trainer(c);
        ClipCollector col;
        EXPECT_EQ(trainer.run(col).status, RunStatus::Finished);
        ASSERT_FALSE(col.clips.empty()) << nameOf(kind);
        for (const auto& clip : col.clips) {
            EXPECT_GE(clip.step, 12);
            EXPECT_GT(clip.sMax, 1.5);
            EXPECT_NEAR(clip.factor, std::sqrt(1.5 / clip.sMax), 1e-12);
            EXPECT_LT(clip.head, c.model.nHeads);
        }
    }
}

TEST(Mla, AbsorbedEqualsMaterialisedOnATrainedCheckpoint) {
    RunConfig c = mlaConfig(QkNormVariant::RmsAffine);  // trained gains are absorbed too
    c.model.nLayers = 2;
    c.schedule.steps = 30;
    c.schedule.warmupSteps = 5;
    c.data.batchSize = 8;
    c.eval.every = 0;
    c.eval.batches = 1;
    c.run.threads = 2;
    c.probes.every = 0;
    // A folder of this process's own: two build trees' suites may run at once.
    const std::string dir = qklab::testsupport::scratchDir("mla-ckpt").string();
    {
        Trainer trainer(c);
        trainer.setCheckpointDir(dir);
        TrainingObserver quiet;
        ASSERT_EQ(trainer.run(quiet).status, RunStatus::Finished);
    }
    const std::string path = dir + "/step-30.pt";
    ASSERT_TRUE(fs::exists(path));
    for (auto dtype : {torch::kFloat64, torch::kFloat32}) {
        Transformer model(c);
        torch::serialize::InputArchive archive;
        archive.load_from(path);
        model->load(archive);
        model->to(dtype);
        // The gains moved away from 1 in training: the absorption is not trivially exact.
        EXPECT_GT((model->named_parameters()["block0.attn.k_gain"] - 1).abs().max().item<double>(),
                  1e-3);
        const auto sw = switches(c, c.schedule.steps - 1);
        torch::manual_seed(2);
        auto tokens = torch::randint(0, 256, {2, c.model.seqLen}, torch::kInt64);
        const double tolerance = dtype == torch::kFloat64 ? 1e-10 : 1e-5;
        EXPECT_LT(worstAbsorbedError(model, c, sw, tokens), tolerance);
        // Outputs: the absorbed decode's LM logits against the full forward's, every position.
        torch::NoGradGuard g;
        auto st = model->newDecodeState(DecodeCache::Absorbed, 2, c.model.seqLen, sw);
        auto decoded = model->decode(tokens.narrow(1, 0, 20), st, sw);
        decoded = torch::cat({decoded, model->decode(tokens.narrow(1, 20, 12), st, sw)}, 1);
        EXPECT_LT(relativeError(decoded, model->logits(tokens, sw)), tolerance);
    }
    fs::remove_all(dir);
}

TEST(Mla, TheMemoryEstimateCountsTheParametersTheModelHas) {
    for (int64_t qLora : {0, 12}) {
        RunConfig c = mlaConfig();
        c.attention.mla.qLora = qLora;
        Transformer model(c);
        EXPECT_EQ(estimateMemory(c).parameterCount, static_cast<double>(model->parameterCount()));
    }
}
