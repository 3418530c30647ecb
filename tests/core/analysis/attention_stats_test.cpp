// attention_stats_test.cpp — meanRowMax and meanRowEntropy (qklab/analysis/attention_stats.h)
// against values worked out by hand.
#include "qklab/analysis/attention_stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace qklab {
namespace {

AttentionMap mapOf(int size, std::vector<float> weights) {
    AttentionMap m;
    m.size = size;
    m.weights = std::move(weights);
    return m;
}

TEST(AttentionStats, ACausalMapOfTwoRows) {
    // Row 0 sees only itself (one-hot), row 1 splits evenly: max (1 + 0.5) / 2 = 0.75, entropy
    // (0 + ln 2) / 2; the masked zero above the diagonal adds nothing.
    const AttentionMap m = mapOf(2, {1.0f, 0.0f, 0.5f, 0.5f});
    EXPECT_DOUBLE_EQ(meanRowMax(m), 0.75);
    EXPECT_NEAR(meanRowEntropy(m), std::log(2.0) / 2, 1e-12);
}

TEST(AttentionStats, OneHotRowsAreSharpAndUniformRowsAreSpread) {
    const AttentionMap oneHot = mapOf(3, {1, 0, 0, 0, 1, 0, 0, 0, 1});
    EXPECT_DOUBLE_EQ(meanRowMax(oneHot), 1.0);
    EXPECT_DOUBLE_EQ(meanRowEntropy(oneHot), 0.0);
    // Four keys at 1/4 each: max 0.25, entropy ln 4 in every row.
    const AttentionMap uniform = mapOf(4, std::vector<float>(16, 0.25f));
    EXPECT_DOUBLE_EQ(meanRowMax(uniform), 0.25);
    EXPECT_NEAR(meanRowEntropy(uniform), std::log(4.0), 1e-12);
}

TEST(AttentionStats, AThreeByThreeMapRowByRow) {
    // Rows (1, 0, 0), (0.25, 0.75, 0), (0.2, 0.3, 0.5): max (1 + 0.75 + 0.5) / 3 = 0.75;
    // entropy of row 2: -(0.25 ln 0.25 + 0.75 ln 0.75) = 0.562335..., of row 3:
    // -(0.2 ln 0.2 + 0.3 ln 0.3 + 0.5 ln 0.5) = 1.029653...; mean 0.530663...
    const AttentionMap m = mapOf(3, {1.0f, 0, 0, 0.25f, 0.75f, 0, 0.2f, 0.3f, 0.5f});
    EXPECT_DOUBLE_EQ(meanRowMax(m), 0.75);
    // 0.2 and 0.3 are not exact in float: the entropy agrees to float precision.
    EXPECT_NEAR(meanRowEntropy(m), (0.5623351446 + 1.0296530141) / 3, 1e-7);
}

TEST(AttentionStats, AnEmptyMapIsZero) {
    EXPECT_EQ(meanRowMax(AttentionMap{}), 0.0);
    EXPECT_EQ(meanRowEntropy(AttentionMap{}), 0.0);
}

}  // namespace
}  // namespace qklab
