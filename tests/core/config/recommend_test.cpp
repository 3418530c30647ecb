// recommend_test.cpp — the guide's size table (domain brief section 5) as recommendSettings.
#include "qklab/config/recommend.h"

#include <gtest/gtest.h>

#include "qklab/util/error.h"

using namespace qklab;

namespace {

std::string reasonFor(const Recommendation& r, const std::string& key) {
    for (const auto& [k, reason] : r.reasons)
        if (k == key) return reason;
    return "";
}

Recommendation forSize(double parameters, bool ship = false) {
    RecommendRequest q;
    q.parameters = parameters;
    q.shipWithoutQkNorm = ship;
    return recommendSettings(q);
}

}  // namespace

TEST(Recommend, EachSizeRowOfTheGuide) {
    const Recommendation small = forSize(50e6);
    EXPECT_EQ(small.tier, "< 100M");
    EXPECT_EQ(small.config.attention.qkNorm, QkNormVariant::None);
    EXPECT_EQ(small.config.dHead(), 64);
    EXPECT_DOUBLE_EQ(small.config.attention.softcap.c, 30);
    EXPECT_DOUBLE_EQ(small.config.optim.lr, 2.5e-3);  // the guide's LR without QK-norm

    const Recommendation mid = forSize(150e6);
    EXPECT_EQ(mid.tier, "100M-300M");
    EXPECT_EQ(mid.config.attention.qkNorm, QkNormVariant::Rms);
    EXPECT_EQ(mid.config.dHead(), 64);
    EXPECT_DOUBLE_EQ(mid.config.attention.softcap.c, 50);
    EXPECT_DOUBLE_EQ(mid.config.optim.lr, 3e-3);
    EXPECT_EQ(mid.config.model.dModel, 768);  // the nearest standard shape: 125M, 12 x 768
    EXPECT_EQ(mid.config.model.nLayers, 12);

    const Recommendation big = forSize(300e6);
    EXPECT_EQ(big.tier, "300M-1B");
    EXPECT_EQ(big.config.model.dModel, 1024);  // 350M: 24 x 1024
    EXPECT_EQ(big.config.model.nHeads, 16);

    const Recommendation huge = forSize(1.3e9);
    EXPECT_EQ(huge.tier, "1B-3B");
    EXPECT_EQ(huge.config.dHead(), 128);
    EXPECT_DOUBLE_EQ(huge.config.attention.softcap.c, 100);
    EXPECT_EQ(huge.config.run.dtype, Precision::Bf16);
    // One sentence of reason per choice.
    for (const char* key : {"model.d_model", "model.n_heads", "attention.qk_norm",
                            "attention.scale", "attention.softcap.c", "optim.lr", "run.dtype"})
        EXPECT_FALSE(reasonFor(huge, key).empty()) << key;
}

TEST(Recommend, ShippingWithoutQkNormAnnealsOverTheLastEightPercent) {
    const Recommendation r = forSize(300e6, true);
    EXPECT_DOUBLE_EQ(r.config.anneal.qkNorm.start, 0.92);
    EXPECT_DOUBLE_EQ(r.config.anneal.qkNorm.end, 1.0);
    EXPECT_NE(reasonFor(r, "anneal.qk_norm.start").find("8%"), std::string::npos);
    // Below 100M QK-norm is off: nothing to anneal, and it says so.
    const Recommendation small = forSize(50e6, true);
    EXPECT_DOUBLE_EQ(small.config.anneal.qkNorm.start, 1.0);
    EXPECT_NE(reasonFor(small, "anneal.qk_norm.start").find("nothing to anneal"),
              std::string::npos);
}

TEST(Recommend, ExplicitShapeAndHeadWidth) {
    RecommendRequest q;
    q.dModel = 768;
    q.nLayers = 12;  // 12 * 12 * 768^2 = 84.9M in the blocks: the < 100M row
    q.dHead = 48;
    const Recommendation r = recommendSettings(q);
    EXPECT_EQ(r.tier, "< 100M");
    EXPECT_EQ(r.config.model.nHeads, 16);
    q.dHead = 100;
    EXPECT_THROW(recommendSettings(q), Error);                   // 768 is not a multiple of 100
    EXPECT_THROW(recommendSettings(RecommendRequest{}), Error);  // no size
}

TEST(Recommend, ParameterCounts) {
    EXPECT_DOUBLE_EQ(parseParameterCount("300M"), 300e6);
    EXPECT_DOUBLE_EQ(parseParameterCount("1.3B"), 1.3e9);
    EXPECT_DOUBLE_EQ(parseParameterCount("125e6"), 125e6);
    EXPECT_DOUBLE_EQ(parseParameterCount("50k"), 50e3);
    EXPECT_THROW(parseParameterCount("300X"), Error);
    EXPECT_THROW(parseParameterCount("abc"), Error);
    EXPECT_THROW(parseParameterCount("-5M"), Error);
}

TEST(Recommend, PresetListsOnlyWhatItChangesAndParsesBack) {
    const nlohmann::json j = recommendationToJson(forSize(300e6));
    EXPECT_TRUE(j["why"].get<std::string>().find("300M-1B") != std::string::npos);
    EXPECT_FALSE(j.contains("probes"));  // unchanged sections are left out
    const RunConfig back = configFromJson(j);
    EXPECT_EQ(back.model.dModel, 1024);
    EXPECT_EQ(back.attention.qkNorm, QkNormVariant::Rms);
}
