// spikes_test.cpp — rolling z-score detection and the guide's three spike cases and tiers.
#include "qklab/spikes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

using namespace qklab;

TEST(RollingZScore, SilentUntilMinHistoryThenMatchesBruteForce) {
    RollingZScore z(8, 4);
    std::vector<double> xs{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    std::vector<double> seen;
    for (double x : xs) {
        auto r = z.push(x);
        if (seen.size() < 4) {
            EXPECT_FALSE(r.has_value());
        } else {
            // Window = the last up-to-8 values before x.
            std::vector<double> w(seen.end() - std::min<size_t>(seen.size(), 8), seen.end());
            const double mean = std::accumulate(w.begin(), w.end(), 0.0) / w.size();
            double var = 0;
            for (double v : w) var += (v - mean) * (v - mean);
            var /= w.size();
            ASSERT_TRUE(r.has_value());
            EXPECT_NEAR(*r, (x - mean) / std::sqrt(var), 1e-4);
        }
        seen.push_back(x);
    }
    EXPECT_EQ(z.size(), 8);
}

TEST(RollingZScore, FlagsAJumpAndIgnoresNonFinite) {
    RollingZScore z(64, 20);
    for (int i = 0; i < 40; ++i) z.push(2.0 + 0.01 * (i % 3));
    EXPECT_FALSE(z.push(std::nan("")).has_value());
    EXPECT_GT(*z.push(2.5), 5.0);
    EXPECT_LT(std::fabs(*z.push(2.01)), 5.0);
}

namespace {
std::vector<ProbeSummary> history(double baseMax, double baseNorm, double lastMax,
                                  double lastNorm) {
    std::vector<ProbeSummary> h;
    for (int i = 0; i < 8; ++i) h.push_back({i * 10, baseMax, baseMax / 2, baseNorm});
    h.push_back({80, lastMax, lastMax / 2, lastNorm});
    return h;
}
Spike diagnose(const std::vector<ProbeSummary>& h, bool qkNorm = false) {
    Spike s;
    s.step = 85;
    diagnoseSpike(s, h, DiagnosisContext{qkNorm, 1, 86});
    return s;
}
}  // namespace

TEST(SpikeDiagnosis, LengthRunawayPrescribesQkNorm) {
    const Spike s = diagnose(history(12, 5, 35, 8));
    EXPECT_EQ(s.kind, SpikeKind::QkRunaway);
    EXPECT_EQ(s.tier, 3);
    EXPECT_EQ(s.probeStep, 80);
    EXPECT_DOUBLE_EQ(s.baselineMaxLogit, 12);
    EXPECT_NE(s.diagnosis.find("QK-norm"), std::string::npos);
}

TEST(SpikeDiagnosis, TokenSpikeWithFlatNormsPrescribesSoftcap) {
    const Spike s = diagnose(history(5, 5, 21, 5.1));
    EXPECT_EQ(s.kind, SpikeKind::TokenSpike);
    EXPECT_EQ(s.tier, 2);
    EXPECT_NE(s.diagnosis.find("softcap"), std::string::npos);
}

TEST(SpikeDiagnosis, NormalLogitsPointAtTheData) {
    const Spike s = diagnose(history(6, 5, 6.5, 5.05));
    EXPECT_EQ(s.kind, SpikeKind::DataOrAccumulation);
    EXPECT_EQ(s.tier, 1);
}

TEST(SpikeDiagnosis, StillSpikingWithQkNormIsTierFour) {
    EXPECT_EQ(diagnose(history(5, 5, 21, 5.1), /*qkNorm=*/true).tier, 4);
    EXPECT_EQ(diagnose(history(6, 5, 6.5, 5.0), /*qkNorm=*/true).tier, 1);
}

TEST(SpikeDiagnosis, ChronicBlowUpIsARunawayNotATokenSpike) {
    // Logits have sat above 1000 for a while, norms flat lately but 60x the first probe.
    std::vector<ProbeSummary> h{{0, 0.3, 0.2, 1.5}};
    for (int i = 1; i < 9; ++i) h.push_back({i * 10, 1450, 860, 94.6});
    h.push_back({90, 1440, 866, 94.9});
    const Spike s = diagnose(h);
    EXPECT_EQ(s.kind, SpikeKind::QkRunaway);
    EXPECT_EQ(s.tier, 3);
    EXPECT_NE(s.diagnosis.find("ran away earlier"), std::string::npos) << s.diagnosis;
    // The same plateau without the norm growth stays a token spike (softcap, tier 2).
    h[0].qkNorm = 90;
    EXPECT_EQ(diagnose(h).kind, SpikeKind::TokenSpike);
}

TEST(SpikeDiagnosis, NoProbesSaysSo) {
    const Spike s = diagnose({});
    EXPECT_EQ(s.probeStep, -1);
    EXPECT_NE(s.diagnosis.find("probes.every"), std::string::npos);
}

TEST(SpikeDiagnosis, SummaryUsesLayerRowsAndRawNorms) {
    std::vector<ProbeStats> rows(3);
    rows[0].layer = 0, rows[0].head = -1, rows[0].logitMaxRaw = 7, rows[0].qRawNormP90 = 3,
    rows[0].kRawNormP90 = 4;
    rows[1].layer = 1, rows[1].head = -1, rows[1].logitMaxRaw = 9, rows[1].qRawNormP90 = 2,
    rows[1].qNormP90 = 50;
    rows[2].layer = 1, rows[2].head = 0, rows[2].logitMaxRaw = 99;  // a head row: ignored
    const ProbeSummary s = summarizeProbes(10, rows);
    EXPECT_EQ(s.maxLogit, 9);
    EXPECT_EQ(s.qkNorm, 4);
}
