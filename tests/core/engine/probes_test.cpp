// probes_test.cpp — the probes' percentiles are exact nearest-rank percentiles: checked against
// a sorted fp64 reference, against the definition itself and against torch::quantile, on
// hand-made rows with ties, fewer than 100 values and more than the old sample limit.
#include "engine/src/probes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "qklab/analysis/histogram_bins.h"

using namespace qklab;

namespace {

// The k-th smallest of `values` (sorted in fp64), k = ceil(percent * N / 100): the reference.
double sortedReference(std::vector<double> values, int64_t percent) {
    std::sort(values.begin(), values.end());
    const auto n = static_cast<int64_t>(values.size());
    int64_t k = 1;
    while (k * 100 < percent * n) ++k;  // the definition, without a division to round
    return values[static_cast<size_t>(k - 1)];
}

std::vector<double> asDoubles(const torch::Tensor& row) {
    auto d = row.to(torch::kFloat64).contiguous();
    return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

double percentileOf(const std::vector<float>& row, int64_t percent) {
    auto x = torch::tensor(row).view({1, -1});
    return rowPercentile(x, percent).item<double>();
}

}  // namespace

TEST(Percentiles, HandMadeRowsWithFewerThanAHundredValues) {
    // N = 7: ceil(0.99 * 7) = 7, the largest value; ceil(0.9 * 7) = 7 too.
    EXPECT_EQ(percentileOf({3, 1, 4, 1, 5, 9, 2}, 99), 9.0);
    EXPECT_EQ(percentileOf({3, 1, 4, 1, 5, 9, 2}, 90), 9.0);
    // N = 10: p90 is the 9th smallest (ceil(9) = 9, not 10), p99 the 10th.
    const std::vector<float> ten{10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
    EXPECT_EQ(percentileOf(ten, 90), 9.0);
    EXPECT_EQ(percentileOf(ten, 99), 10.0);
    EXPECT_EQ(percentileOf(ten, 50), 5.0);
    // One value: every percentile is that value.
    EXPECT_EQ(percentileOf({-2.5f}, 99), -2.5);
}

TEST(Percentiles, RowsOfAHundredAndJustAboveTakeTheRightRank) {
    std::vector<float> row(100);
    for (int i = 0; i < 100; ++i) row[static_cast<size_t>(i)] = static_cast<float>(99 - i);
    EXPECT_EQ(percentileOf(row, 99), 98.0);  // the 99th smallest of 0..99
    row.push_back(100);                      // N = 101: ceil(99.99) = 100, the 2nd largest
    EXPECT_EQ(percentileOf(row, 99), 99.0);
    for (int i = 101; i < 200; ++i) row.push_back(static_cast<float>(i));
    EXPECT_EQ(percentileOf(row, 99), 197.0);  // N = 200: the 198th smallest of 0..199
}

TEST(Percentiles, TiesAtTheRankGiveTheTiedValue) {
    // 95 ones and 5 sevens: the 99th smallest is a seven; 90th smallest is a one.
    std::vector<float> row(95, 1.0f);
    row.insert(row.begin() + 40, 5, 7.0f);
    EXPECT_EQ(percentileOf(row, 99), 7.0);
    EXPECT_EQ(percentileOf(row, 90), 1.0);
    // All equal: the value itself.
    EXPECT_EQ(percentileOf(std::vector<float>(333, 4.0f), 99), 4.0);
    // Ties across the boundary in a row of 1000: ranks 985..995 hold 3.0, the rest below/above.
    std::vector<float> wide(1000);
    for (size_t i = 0; i < wide.size(); ++i) wide[i] = i < 984 ? 0.0f : (i < 995 ? 3.0f : 5.0f);
    std::reverse(wide.begin(), wide.end());
    EXPECT_EQ(percentileOf(wide, 99), 3.0);  // rank 990
}

TEST(Percentiles, EveryRowMatchesASortedReferenceAboveTheOldSampleLimit) {
    // 3 rows of 100,003 heavy-tailed values with rounding ties (more than the 32,768 values
    // the strided sample kept), and a row count of 1 (the whole-layer percentile).
    torch::manual_seed(11);
    const int64_t n = 100003;
    auto x = (torch::randn({3, n}).pow(3) * 8).round() / 8;  // many ties near 0
    for (int64_t percent : {99, 90, 50}) {
        auto got = rowPercentile(x, percent);
        ASSERT_EQ(got.sizes(), (std::vector<int64_t>{3}));
        for (int64_t r = 0; r < 3; ++r) {
            const auto values = asDoubles(x[r]);
            const double want = sortedReference(values, percent);
            EXPECT_EQ(got[r].item<double>(), want) << "row " << r << ", p" << percent;
            // The definition: at least percent % are <= it, fewer than percent % are below it.
            const auto atOrBelow =
                std::count_if(values.begin(), values.end(), [&](double v) { return v <= want; });
            const auto below =
                std::count_if(values.begin(), values.end(), [&](double v) { return v < want; });
            EXPECT_GE(atOrBelow * 100, percent * n);
            EXPECT_LT(below * 100, percent * n);
        }
        auto whole = rowPercentile(x.reshape({1, -1}), percent).item<double>();
        EXPECT_EQ(whole, sortedReference(asDoubles(x.reshape({-1})), percent));
    }
}

TEST(Percentiles, TheWholeIsExactWhenOneRowHoldsAllTheTopValues) {
    // Row 2 holds every value above 1000, 3 % of all 15,000: the whole p99 is row 2's 151st
    // largest value, deeper than the 51 largest its own p99 needs.
    torch::manual_seed(9);
    const int64_t n = 5000;
    auto x = torch::rand({3, n});
    x[2].narrow(0, 0, 450).copy_(torch::arange(450, torch::kFloat32) + 1001);  // 1001 .. 1450
    const auto got = percentiles(x, 99);
    std::vector<double> all = asDoubles(x.reshape({-1}));
    EXPECT_EQ(got.whole.item<double>(), sortedReference(all, 99));
    EXPECT_EQ(got.whole.item<double>(), 1300.0);  // 1450 is the largest, 1300 the 151st
    for (int64_t r = 0; r < 3; ++r)
        EXPECT_EQ(got.rows[r].item<double>(), sortedReference(asDoubles(x[r]), 99));
    // Ties straddling the whole's rank, spread over the rows.
    auto tied = torch::zeros({4, 250});
    tied.narrow(1, 0, 6).fill_(2.0f);                            // 24 twos: ranks 977..1000 of 1000
    EXPECT_EQ(percentiles(tied, 99).whole.item<double>(), 2.0);  // rank 990
    EXPECT_EQ(percentiles(tied, 97).whole.item<double>(), 0.0);  // rank 970
    EXPECT_TRUE(torch::equal(percentiles(tied, 99).rows, torch::full({4}, 2.0f)));
}

TEST(Percentiles, AgreeWithTorchQuantileAtTheSameRank) {
    // torch::quantile reads position q (N - 1) of the sorted row; at q = (k - 1) / (N - 1)
    // that is the nearest rank k, whatever the interpolation.
    torch::manual_seed(3);
    for (int64_t n : {37, 100, 4097, 50001}) {
        auto x = torch::randn({2, n}, torch::kFloat64);
        const int64_t k = (99 * n + 99) / 100;
        const double q = static_cast<double>(k - 1) / static_cast<double>(n - 1);
        auto want = torch::quantile(x, q, 1, false, "nearest");
        EXPECT_TRUE(torch::equal(rowPercentile(x, 99), want)) << "N = " << n;
    }
}

TEST(Percentiles, NanCountsAsTheLargestValueLikeKthvalue) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> row(200);
    for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(i);
    row[7] = nan;  // one NaN in 200 (in 7's place): rank 198 is still a number, 198
    EXPECT_EQ(percentileOf(row, 99), 198.0);
    auto x = torch::tensor(row).view({1, -1});
    EXPECT_EQ(percentileOf(row, 99), std::get<0>(torch::kthvalue(x, 198, 1)).item<double>());
    row[8] = row[9] = nan;  // three NaN: rank 198 is one of them
    EXPECT_TRUE(std::isnan(percentileOf(row, 99)));
}

TEST(Percentiles, ProbeRowsAreExactPercentilesOfTheCausalLogits) {
    // Two heads, T = 300: 45,150 causal logits each, 90,300 in the layer row.
    const int64_t T = 300, H = 2;
    torch::manual_seed(5);
    AttentionCapture cap;
    cap.raw = torch::randn({1, H, T, T}).pow(3);
    cap.capped = cap.raw;
    cap.probs = torch::eye(T).expand({1, H, T, T}).contiguous();
    cap.q = cap.k = cap.qRaw = cap.kRaw = torch::randn({1, H, T, 4});
    ProbeSettings s;
    s.bins = histogramBinsOf(ProbeConfig{});
    std::vector<ProbeStats> stats;
    std::vector<LogitHistogram> hists;
    computeProbes(0, {cap}, s, stats, hists);
    ASSERT_EQ(stats.size(), 3u);  // the layer row, then one per head
    const auto tril = torch::ones({T, T}, torch::kBool).tril();
    std::vector<double> layer;
    for (int64_t h = 0; h < H; ++h) {
        const auto head = asDoubles(cap.raw[0][h].masked_select(tril));
        layer.insert(layer.end(), head.begin(), head.end());
        EXPECT_EQ(stats[static_cast<size_t>(h + 1)].logitP99Raw, sortedReference(head, 99));
        EXPECT_EQ(stats[static_cast<size_t>(h + 1)].qNormP90,
                  sortedReference(asDoubles(cap.q[0][h].norm(2, -1)), 90));
    }
    EXPECT_EQ(stats[0].logitP99Raw, sortedReference(layer, 99));
}

// The attention sink and the massive activation (gated attention's two measures), on a
// hand-made softmax: head 0 puts 1/2 of each row on position 0, head 1 attends uniformly
// over the causal prefix (row t: 1/(t+1) on position 0).
TEST(SinkProbes, FirstTokenShareAndMaxActivationMatchHandValues) {
    const int64_t T = 4, H = 2;
    AttentionCapture cap;
    auto probs = torch::zeros({1, H, T, T});
    for (int64_t t = 0; t < T; ++t) {
        probs[0][0][t][0] = t == 0 ? 1.0 : 0.5;
        if (t > 0) probs[0][0][t][t] = 0.5;
        for (int64_t j = 0; j <= t; ++j) probs[0][1][t][j] = 1.0 / double(t + 1);
    }
    cap.probs = probs;
    cap.raw = cap.capped = torch::zeros({1, H, T, T});
    cap.q = cap.k = cap.qRaw = cap.kRaw = torch::ones({1, H, T, 2});
    cap.hidden = torch::tensor({0.5f, -7.25f, 3.0f, 1.0f}).view({1, 2, 2});
    ProbeSettings s;
    s.bins = histogramBinsOf(ProbeConfig{});
    std::vector<ProbeStats> stats;
    std::vector<LogitHistogram> hists;
    computeProbes(0, {cap}, s, stats, hists);
    ASSERT_EQ(stats.size(), 3u);
    // Rows 1..3 only (row 0 can attend nowhere else): head 0 = 1/2, head 1 = (1/2+1/3+1/4)/3.
    const double uniform = (1.0 / 2 + 1.0 / 3 + 1.0 / 4) / 3;
    EXPECT_NEAR(stats[1].firstTokenShare, 0.5, 1e-7);
    EXPECT_NEAR(stats[2].firstTokenShare, uniform, 1e-7);
    EXPECT_NEAR(stats[0].firstTokenShare, (0.5 + uniform) / 2, 1e-7);
    EXPECT_EQ(stats[0].maxActivation, 7.25);          // the largest |value|, a negative one
    EXPECT_TRUE(std::isnan(stats[1].maxActivation));  // a layer statistic only
    EXPECT_TRUE(std::isnan(stats[2].maxActivation));
    cap.hidden = torch::Tensor();  // not handed over (the Python package): NaN, not 0
    stats.clear();
    computeProbes(0, {cap}, s, stats, hists);
    EXPECT_TRUE(std::isnan(stats[0].maxActivation));
}
