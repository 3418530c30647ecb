// model_test.cpp — the attention invariants: QK-norm and softcap bounds, alpha = 0 is the raw
// path, RoPE keeps norms, causality, and probe statistics against hand-computed values.
#include "engine/src/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/src/probes.h"
#include "qklab/analysis/histogram_bins.h"

using namespace qklab;

namespace {

RunConfig smallConfig() {
    RunConfig c;
    c.model.dModel = 64;
    c.model.nLayers = 2;
    c.model.nHeads = 4;  // d_head 16: bound sqrt(16) = 4
    c.model.seqLen = 32;
    return c;
}

AttentionSwitches switchesFor(const RunConfig& c, QkNormVariant norm, double alpha = 1.0,
                              SoftcapKind cap = SoftcapKind::None, double capC = 50) {
    AttentionSwitches sw;
    sw.qkNorm = norm;
    sw.alpha = alpha;
    sw.scale = c.logitScale();
    sw.softcap = cap;
    sw.softcapC = capC;
    return sw;
}

struct Probe {
    ForwardResult result;
    std::vector<AttentionCapture> captures;
};

// A model whose q/k projections are blown up, as after a long attention-logit growth.
Probe forwardInflated(const RunConfig& c, const AttentionSwitches& sw, double inflate = 30.0) {
    torch::manual_seed(7);
    Transformer model(c);
    {
        torch::NoGradGuard g;
        for (auto& item : model->named_parameters())
            if (item.key().find("qkv") != std::string::npos) item.value().mul_(inflate);
    }
    auto tokens = torch::randint(0, 256, {3, c.model.seqLen}, torch::kInt64);
    Probe p;
    p.result = model->forward(tokens, tokens, sw, &p.captures);
    return p;
}

double maxAbs(const torch::Tensor& t) {
    return t.abs().max().item<double>();
}

}  // namespace

TEST(Attention, WithoutQkNormInflatedProjectionsGiveHugeLogits) {
    const RunConfig c = smallConfig();
    const Probe p = forwardInflated(c, switchesFor(c, QkNormVariant::None));
    EXPECT_GT(maxAbs(p.captures[0].raw), 100.0);  // the control for the bound below
}

TEST(Attention, RmsQkNormBoundsEveryLogitBySqrtDHead) {
    const RunConfig c = smallConfig();
    const double bound = std::sqrt(static_cast<double>(c.dHead()));
    for (bool afterRope : {false, true}) {
        auto sw = switchesFor(c, QkNormVariant::Rms);
        sw.normAfterRope = afterRope;
        const Probe p = forwardInflated(c, sw);
        for (const auto& cap : p.captures) {
            const double m = maxAbs(cap.raw);
            EXPECT_LE(m, bound * (1 + 1e-5));
            EXPECT_GT(m, 0.5 * bound);  // the bound is approached, not trivially met
            // |q| = sqrt(d_head) for every token and head (RMS without gain).
            EXPECT_NEAR(cap.q.norm(2, -1).max().item<double>(), bound, 1e-3);
        }
    }
}

TEST(Attention, L2NormLogitsAreBoundedByTheLearnableScale) {
    RunConfig c = smallConfig();
    const Probe p = forwardInflated(c, switchesFor(c, QkNormVariant::L2Scale));
    const double g = std::log2(32.0 * 32 - 32);  // Henry et al. init, T = 32
    EXPECT_LE(maxAbs(p.captures[0].raw), g * (1 + 1e-5));
}

TEST(Attention, TanhSoftcapKeepsLogitsStrictlyBelowC) {
    const RunConfig c = smallConfig();
    for (double C : {5.0, 30.0}) {
        const Probe p = forwardInflated(
            c, switchesFor(c, QkNormVariant::None, 1.0, SoftcapKind::Tanh, C), 100.0);
        const auto& raw = p.captures[0].raw;
        const auto& capped = p.captures[0].capped;
        EXPECT_GT(maxAbs(raw), 10 * C);  // the raw logits do exceed C, by far
        // |C tanh(x / C)| < C exactly; in fp32, tanh rounds to 1 once |x| > ~8.3 C, so the
        // strict bound is checked where fp32 can represent it and <= C everywhere.
        EXPECT_LE(maxAbs(capped), C);
        auto representable = raw.abs() < 8 * C;
        EXPECT_GT(representable.sum().item<int64_t>(), 0);
        EXPECT_LT(capped.abs().masked_select(representable).max().item<double>(), C);
        EXPECT_GT((raw.abs() > C).logical_and(representable).sum().item<int64_t>(), 0);
        // Far below C the cap is nearly the identity.
        auto small = p.captures[0].raw.abs() < 0.1 * C;
        auto diff = (p.captures[0].capped - p.captures[0].raw).abs().masked_select(small);
        EXPECT_LT(diff.max().item<double>(), 0.01 * C);
    }
}

TEST(Attention, ClampSoftcapPilesLogitsOnTheBoundary) {
    const RunConfig c = smallConfig();
    const Probe p = forwardInflated(
        c, switchesFor(c, QkNormVariant::None, 1.0, SoftcapKind::Clamp, 20.0), 100.0);
    EXPECT_LE(maxAbs(p.captures[0].capped), 20.0);
    EXPECT_GT((p.captures[0].capped.abs() == 20.0).sum().item<int64_t>(), 0);
}

TEST(Attention, AlphaZeroIsExactlyTheRawPath) {
    const RunConfig c = smallConfig();
    for (QkNormVariant norm :
         {QkNormVariant::Rms, QkNormVariant::RmsAffine, QkNormVariant::LayerNorm,
          QkNormVariant::L2Scale, QkNormVariant::WholeRms}) {
        const Probe raw = forwardInflated(c, switchesFor(c, QkNormVariant::None), 3.0);
        const Probe off = forwardInflated(c, switchesFor(c, norm, 0.0), 3.0);
        const Probe on = forwardInflated(c, switchesFor(c, norm, 1.0), 3.0);
        EXPECT_TRUE(torch::equal(raw.captures[1].raw, off.captures[1].raw));
        EXPECT_EQ(raw.result.loss.item<double>(), off.result.loss.item<double>());
        EXPECT_FALSE(torch::allclose(raw.captures[1].raw, on.captures[1].raw));
    }
}

TEST(Attention, HalfAlphaMixesTheVectors) {
    const RunConfig c = smallConfig();
    const Probe half = forwardInflated(c, switchesFor(c, QkNormVariant::Rms, 0.5), 3.0);
    const auto& cap = half.captures[0];
    auto normed = cap.kRaw * torch::rsqrt(cap.kRaw.pow(2).mean(-1, true) + 1e-6);
    auto expectK = 0.5 * normed + 0.5 * cap.kRaw;  // before RoPE: compare norms (RoPE keeps them)
    EXPECT_TRUE(torch::allclose(cap.k.norm(2, -1), expectK.norm(2, -1), 1e-4, 1e-4));
}

TEST(Attention, RopeKeepsNormsAndCausalityHolds) {
    const RunConfig c = smallConfig();
    const Probe p = forwardInflated(c, switchesFor(c, QkNormVariant::None), 1.0);
    EXPECT_TRUE(
        torch::allclose(p.captures[0].q.norm(2, -1), p.captures[0].qRaw.norm(2, -1), 1e-4, 1e-5));
    // Softmax rows put zero weight on the future.
    auto future = p.captures[0].probs.triu(1);
    EXPECT_EQ(future.abs().max().item<double>(), 0.0);
    auto rowSums = p.captures[0].probs.sum(-1);
    EXPECT_TRUE(torch::allclose(rowSums, torch::ones_like(rowSums), 1e-5, 1e-5));
}

namespace {

struct LossAndGrads {
    double loss = 0;
    std::vector<torch::Tensor> grads;
};

LossAndGrads lossAndGrads(Transformer& model, const torch::Tensor& tokens,
                          const AttentionSwitches& sw) {
    for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
    auto r = model->forward(tokens, tokens.roll(-1, 1), sw, nullptr);
    r.loss.backward();
    LossAndGrads out;
    out.loss = r.loss.item<double>();
    for (auto& p : model->parameters())
        out.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
    return out;
}

}  // namespace

TEST(Attention, FusedPathGivesTheExplicitLossAndGradients) {
    if (!kHaveFusedAttention) GTEST_SKIP() << "this LibTorch has no scaled_dot_product_attention";
    struct Case {
        QkNormVariant norm;
        double alpha;
        QkNormTarget on;
        bool afterRope, rope;
        double inflate;
    };
    const std::vector<Case> cases = {
        {QkNormVariant::None, 1, QkNormTarget::QK, false, true, 1},
        {QkNormVariant::None, 1, QkNormTarget::QK, false, true, 4},  // logits in the tens
        {QkNormVariant::Rms, 1, QkNormTarget::QK, false, true, 4},
        {QkNormVariant::Rms, 0.5, QkNormTarget::QK, false, true, 4},  // mid-anneal
        {QkNormVariant::RmsAffine, 1, QkNormTarget::QK, true, true, 1},
        {QkNormVariant::LayerNorm, 1, QkNormTarget::K, false, true, 1},
        {QkNormVariant::L2Scale, 1, QkNormTarget::QK, false, true,
         1},  // per-head learnable scale g
        {QkNormVariant::L2Scale, 0.25, QkNormTarget::QK, false, true, 1},
        {QkNormVariant::WholeRms, 1, QkNormTarget::QKV, false, true, 1},
        {QkNormVariant::Rms, 1, QkNormTarget::QK, false, false, 1},  // learned absolute positions
    };
    double worstLoss = 0, worstGrad = 0;
    for (const auto& k : cases) {
        RunConfig c = smallConfig();
        c.model.rope = k.rope;
        torch::manual_seed(3);
        Transformer model(c);
        {
            torch::NoGradGuard g;
            for (auto& item : model->named_parameters())
                if (item.key().find("qkv") != std::string::npos) item.value().mul_(k.inflate);
        }
        auto tokens = torch::randint(0, 256, {4, c.model.seqLen}, torch::kInt64);
        auto sw = switchesFor(c, k.norm, k.alpha);
        sw.normOn = k.on;
        sw.normAfterRope = k.afterRope;
        ASSERT_TRUE(fusedAttentionPossible(sw, false));
        const auto explicitPath = lossAndGrads(model, tokens, sw);
        sw.fused = true;
        const auto fusedPath = lossAndGrads(model, tokens, sw);
        const double dl =
            std::fabs(fusedPath.loss - explicitPath.loss) / std::fabs(explicitPath.loss);
        EXPECT_LE(dl, 1e-5) << "variant " << static_cast<int>(k.norm) << " alpha " << k.alpha;
        worstLoss = std::max(worstLoss, dl);
        for (size_t i = 0; i < explicitPath.grads.size(); ++i) {
            const auto& e = explicitPath.grads[i];
            const auto& f = fusedPath.grads[i];
            ASSERT_EQ(e.defined(), f.defined()) << i;
            if (!e.defined()) continue;
            const double scale = e.norm().item<double>();
            if (scale == 0) continue;
            const double dg = (f - e).norm().item<double>() / scale;
            EXPECT_LE(dg, 1e-5) << "variant " << static_cast<int>(k.norm) << " parameter " << i;
            worstGrad = std::max(worstGrad, dg);
        }
    }
    RecordProperty("worst_loss_rel", std::to_string(worstLoss));
    RecordProperty("worst_grad_rel", std::to_string(worstGrad));
    std::printf("fused vs explicit: worst loss rel %.3g, worst gradient rel %.3g\n", worstLoss,
                worstGrad);
}

TEST(Attention, FusedPathOnlyWhereNoLogitsAreNeeded) {
    const RunConfig c = smallConfig();
    auto sw = switchesFor(c, QkNormVariant::Rms);
    EXPECT_EQ(fusedAttentionPossible(sw, false), kHaveFusedAttention);
    EXPECT_FALSE(fusedAttentionPossible(sw, true));  // a probe needs the logits
    sw.softcap = SoftcapKind::Tanh;
    EXPECT_FALSE(fusedAttentionPossible(sw, false));  // the cap acts on the logits
    sw.softcap = SoftcapKind::Clamp;
    EXPECT_FALSE(fusedAttentionPossible(sw, false));
    // Asked for fused while capturing, the model still hands the probes their logits.
    auto fusedSw = switchesFor(c, QkNormVariant::None);
    fusedSw.fused = true;
    const Probe p = forwardInflated(c, fusedSw, 1.0);
    ASSERT_EQ(p.captures.size(), 2u);
    EXPECT_TRUE(p.captures[0].raw.defined());
}

TEST(Probes, StatisticsMatchHandComputedValues) {
    // One layer, B = 1, H = 2, T = 2: valid (causal) logits are [0,0], [1,0], [1,1].
    AttentionCapture cap;
    cap.raw =
        torch::tensor({1.0f, 99.0f, 2.0f, 3.0f, -4.0f, 99.0f, 10.0f, 40.0f}).view({1, 2, 2, 2});
    cap.capped = cap.raw.clamp(-30, 30);
    cap.probs =
        torch::tensor({1.0f, 0.0f, 0.5f, 0.5f, 1.0f, 0.0f, 0.25f, 0.75f}).view({1, 2, 2, 2});
    cap.q = torch::tensor({3.0f, 4.0f, 0.0f, 1.0f, 6.0f, 8.0f, 0.0f, 2.0f})
                .view({1, 2, 2, 2});  // norms 5,1 | 10,2
    cap.k = cap.q;
    cap.qRaw = cap.q * 2;
    cap.kRaw = cap.q * 2;
    ProbeSettings s;
    ProbeConfig pc;
    pc.histBins = 4;
    pc.histMin = -8;
    pc.histMax = 8;  // edges -8,-4,0,4,8
    s.bins = histogramBinsOf(pc);
    s.softcap = SoftcapKind::Clamp;
    s.softcapC = 30;
    std::vector<ProbeStats> stats;
    std::vector<LogitHistogram> hists;
    computeProbes(5, {cap}, s, stats, hists);
    ASSERT_EQ(stats.size(), 3u);  // layer row + 2 heads
    const ProbeStats& layer = stats[0];
    const ProbeStats& h0 = stats[1];
    const ProbeStats& h1 = stats[2];
    EXPECT_EQ(layer.head, -1);
    EXPECT_DOUBLE_EQ(h0.logitMaxRaw, 3.0);   // the masked 99 is ignored
    EXPECT_DOUBLE_EQ(h0.logitMeanRaw, 2.0);  // (1 + 2 + 3) / 3
    EXPECT_DOUBLE_EQ(h0.logitP99Raw, 3.0);   // ceil(0.99 * 3) = 3rd smallest
    EXPECT_DOUBLE_EQ(h1.logitMaxRaw, 40.0);
    EXPECT_DOUBLE_EQ(h1.logitMaxCapped, 30.0);
    EXPECT_NEAR(h1.fracAtCap, 1.0 / 3.0, 1e-6);  // |40| >= 30
    EXPECT_DOUBLE_EQ(layer.logitMaxRaw, 40.0);
    EXPECT_NEAR(layer.logitMeanRaw, (6.0 + 46.0) / 6.0, 1e-6);
    EXPECT_DOUBLE_EQ(h0.qNormP90, 5.0);  // ceil(0.9 * 2) = 2nd of {1, 5}
    EXPECT_DOUBLE_EQ(h1.qRawNormP90, 20.0);
    // Entropy: head 0 rows (1, 0) and (.5, .5) -> (0 + ln 2) / 2.
    EXPECT_NEAR(h0.entropy, std::log(2.0) / 2, 1e-6);
    const double h75 = -(0.25 * std::log(0.25) + 0.75 * std::log(0.75));
    EXPECT_NEAR(h1.entropy, h75 / 2, 1e-6);
    // Histograms: head 0 {1,2,3} all in bin [0,4); head 1 {-4, 10, 40}: -4 in bin 1, 2 over.
    ASSERT_EQ(hists.size(), 3u);
    EXPECT_EQ(hists[0].counts, (std::vector<int64_t>{0, 0, 3, 0}));
    EXPECT_EQ(hists[1].counts, (std::vector<int64_t>{0, 1, 0, 0}));
    EXPECT_EQ(hists[1].overflow, 2);
    EXPECT_EQ(hists[2].head, -1);
    EXPECT_EQ(hists[2].counts, (std::vector<int64_t>{0, 1, 3, 0}));
    EXPECT_EQ(hists[2].overflow, 2);
}

TEST(Probes, SymlogHistogramSeesHugeLogits) {
    AttentionCapture cap;
    cap.raw = torch::tensor({1e5f, 0.0f, -1e3f, 9.0f}).view({1, 1, 2, 2});
    cap.capped = cap.raw;
    cap.probs = torch::tensor({1.0f, 0.0f, 0.0f, 1.0f}).view({1, 1, 2, 2});
    cap.q = cap.k = cap.qRaw = cap.kRaw = torch::ones({1, 1, 2, 2});
    ProbeSettings s;
    ProbeConfig pc;
    pc.histBins = 12;
    pc.histMin = -6;
    pc.histMax = 6;
    pc.histScale = HistScale::Symlog;
    s.bins = histogramBinsOf(pc);
    std::vector<ProbeStats> stats;
    std::vector<LogitHistogram> hists;
    computeProbes(0, {cap}, s, stats, hists);
    // log10(1 + 1e5) = 5.00 -> bin 11; -log10(1001) = -3.0 -> bin 3; log10(10) = 1 -> bin 7.
    EXPECT_EQ(hists[0].counts[11], 1);
    EXPECT_EQ(hists[0].counts[2] + hists[0].counts[3], 1);
    EXPECT_EQ(hists[0].counts[7], 1);
    EXPECT_EQ(hists[0].overflow + hists[0].underflow, 0);
}

TEST(Probes, CountsLandInTheBinsTheViewsDraw) {
    // Logits from -1e6 to 1e6, counted by the probes (torch) and binned by the shared
    // definition the GUI draws with: every value must land in the same bin.
    for (HistScale scale : {HistScale::Linear, HistScale::Symlog}) {
        ProbeConfig pc;
        pc.histBins = 24;
        pc.histScale = scale;
        pc.histMin = scale == HistScale::Symlog ? -6.5 : -64;
        pc.histMax = scale == HistScale::Symlog ? 6.5 : 64;
        const HistogramBins bins = histogramBinsOf(pc);
        const std::vector<float> values{-1e6f, -70.f, -64.f, -3.2f, -0.4f, 0.f,
                                        0.7f,  9.f,   63.9f, 64.f,  9e5f};
        const int64_t T = 11;  // one query row sees all values: put them on the last row
        auto raw = torch::full({1, 1, T, T}, 0.0f);
        raw[0][0][T - 1] = torch::tensor(values);
        AttentionCapture cap;
        cap.raw = cap.capped = raw;
        cap.probs = torch::eye(T).view({1, 1, T, T});
        cap.q = cap.k = cap.qRaw = cap.kRaw = torch::ones({1, 1, T, 2});
        ProbeSettings s;
        s.bins = bins;
        std::vector<ProbeStats> stats;
        std::vector<LogitHistogram> hists;
        computeProbes(0, {cap}, s, stats, hists);
        // Expected: the rows above the last hold zeros (T*(T-1)/2 of them), plus the values.
        std::vector<int64_t> expected(bins.count(), 0);
        int64_t under = 0, over = 0;
        auto count = [&](double v, int64_t n) {
            const int64_t b = bins.binOf(v);
            if (b < 0)
                under += n;
            else if (b >= bins.count())
                over += n;
            else
                expected[b] += n;
        };
        count(0.0, T * (T - 1) / 2);
        for (float v : values) count(v, 1);
        const LogitHistogram& h = hists.back();  // the layer's histogram
        EXPECT_EQ(h.counts, expected) << nameOf(scale);
        EXPECT_EQ(h.underflow, under) << nameOf(scale);
        EXPECT_EQ(h.overflow, over) << nameOf(scale);
    }
}

TEST(Probes, NanLogitsAreCountedApartNotInTheZeroBin) {
    // Causal 2x2: the valid logits are (0,0), (1,0), (1,1) = NaN, 0.5, +inf.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    AttentionCapture cap;
    cap.raw = torch::tensor({nan, 0.0f, 0.5f, inf}).view({1, 1, 2, 2});
    cap.capped = cap.raw;
    cap.probs = torch::tensor({1.0f, 0.0f, 0.5f, 0.5f}).view({1, 1, 2, 2});
    cap.q = cap.k = cap.qRaw = cap.kRaw = torch::ones({1, 1, 2, 2});
    ProbeConfig pc;
    pc.histBins = 4;
    pc.histMin = 2;  // the 0 that NaN used to become lies below the range: a NaN is no underflow
    pc.histMax = 10;
    ProbeSettings s;
    s.bins = histogramBinsOf(pc);
    std::vector<ProbeStats> stats;
    std::vector<LogitHistogram> hists;
    computeProbes(0, {cap}, s, stats, hists);
    const LogitHistogram& h = hists.back();
    EXPECT_EQ(h.nan, 1);
    EXPECT_EQ(h.underflow, 1);  // 0.5
    EXPECT_EQ(h.overflow, 1);   // +inf
    EXPECT_EQ(h.counts, (std::vector<int64_t>{0, 0, 0, 0}));
    pc.histMin = -4;  // now 0 is inside: the NaN must still not land in the zero bin
    s.bins = histogramBinsOf(pc);
    hists.clear();
    computeProbes(0, {cap}, s, stats, hists);
    EXPECT_EQ(hists.back().nan, 1);
    EXPECT_EQ(hists.back().counts, (std::vector<int64_t>{0, 1, 0, 0}));  // 0.5 only
}

TEST(Probes, ExactPercentilesUseEveryValue) {
    // One head, T = 300: 45,150 causal logits, more than the 32,768 the old sample kept.
    const int64_t T = 300;
    torch::manual_seed(7);
    AttentionCapture cap;
    cap.raw = torch::randn({1, 1, T, T}).pow(3);  // heavy tails: a strided sample missed some
    cap.capped = cap.raw;
    cap.probs = torch::eye(T).view({1, 1, T, T});
    cap.q = cap.k = cap.qRaw = cap.kRaw = torch::ones({1, 1, T, 2});
    auto valid = cap.raw.view({T, T}).masked_select(torch::ones({T, T}, torch::kBool).tril());
    const int64_t n = valid.numel(), k = static_cast<int64_t>(std::ceil(0.99 * n));
    const double exact = std::get<0>(torch::kthvalue(valid, k)).item<double>();
    ProbeSettings s;
    s.bins = histogramBinsOf(ProbeConfig{});
    std::vector<ProbeStats> stats;
    std::vector<LogitHistogram> hists;
    computeProbes(0, {cap}, s, stats, hists);
    EXPECT_DOUBLE_EQ(stats[0].logitP99Raw, exact);  // the layer row
}

TEST(Probes, AttentionMapIsTheSoftmaxOfTheFirstSequence) {
    const RunConfig c = smallConfig();
    const Probe p = forwardInflated(c, switchesFor(c, QkNormVariant::None), 1.0);
    const auto maps = attentionMaps(3, p.captures, 16);
    ASSERT_EQ(maps.size(), 8u);  // 2 layers x 4 heads
    EXPECT_EQ(maps[5].layer, 1);
    EXPECT_EQ(maps[5].head, 1);
    EXPECT_EQ(maps[5].size, 16);
    EXPECT_FLOAT_EQ(maps[5].weights[0], 1.0f);  // the first query sees only itself
    EXPECT_FLOAT_EQ(maps[5].weights[1], 0.0f);
    EXPECT_FLOAT_EQ(maps[5].weights[16 * 3 + 2], p.captures[1].probs[0][1][3][2].item<float>());
}
