// skip_step_test.cpp — the sigma skip-step rule (qklab/analysis/skip_step.h) against values
// worked out by hand: the threshold mean + k x sample sd, the warm-up of half the window, the
// window that keeps skipped steps, and a restored window that judges as the original.
#include "qklab/analysis/skip_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace qklab;

namespace {

// Window 4, k = 2, filled with losses 1.0 1.2 1.0 1.2 and grad norms all 1: loss mean 1.1,
// sample sd sqrt(4 x 0.01 / 3) = 0.115470, so the loss line is 1.1 + 0.230940 = 1.330940;
// the grad-norm sd is 0, so its line is 1 exactly.
SkipStepDetector filled() {
    SkipStepDetector d(4, 2.0);
    for (double loss : {1.0, 1.2, 1.0, 1.2}) EXPECT_FALSE(d.observe(loss, 1.0).skip);
    return d;
}

}  // namespace

TEST(SkipStep, TheLineIsTheMeanPlusKSampleDeviations) {
    SkipStepDetector below = filled();
    EXPECT_FALSE(below.observe(1.3309, 1.0).skip);
    SkipStepDetector above = filled();
    const SkipVerdict v = above.observe(1.3310, 1.0);
    EXPECT_TRUE(v.skip);
    EXPECT_EQ(v.why, "loss 1.331 > mean 1.1 + 2 x 0.115 = 1.331");
}

TEST(SkipStep, NoVerdictUntilHalfTheWindowIsIn) {
    SkipStepDetector d(8, 6.0);  // half of 8: four steps before the first verdict
    for (double loss : {2.0, 2.1, 2.0}) EXPECT_FALSE(d.observe(loss, 1.0).skip);
    EXPECT_FALSE(d.observe(100.0, 1.0).skip);  // only three before it
    EXPECT_TRUE(d.observe(1000.0, 1.0).skip);  // four before it, 100 among them
}

TEST(SkipStep, TheGradNormAloneSkipsAndSaysSo) {
    SkipStepDetector d = filled();
    const SkipVerdict v = d.observe(1.1, 1.0001);  // above an sd of 0
    EXPECT_TRUE(v.skip);
    EXPECT_EQ(v.why.rfind("grad norm 1 > mean 1 + 2 x 0 = 1", 0), 0u) << v.why;
}

TEST(SkipStep, SkippedStepsJoinTheWindow) {
    // After 1.5 is skipped the window is 1.2 1.0 1.2 1.5: mean 1.225, sd 0.20616, line
    // 1.63732. 1.6 passes now; it would have been skipped against the old window (1.331).
    SkipStepDetector d = filled();
    EXPECT_TRUE(d.observe(1.5, 1.0).skip);
    EXPECT_FALSE(d.observe(1.6, 1.0).skip);
    const std::vector<std::pair<double, double>> window{
        {1.0, 1.0}, {1.2, 1.0}, {1.5, 1.0}, {1.6, 1.0}};
    EXPECT_EQ(d.window(), window);  // the four latest, skipped or not
}

TEST(SkipStep, ANotFiniteValueSkips) {
    SkipStepDetector d = filled();
    EXPECT_TRUE(d.observe(std::numeric_limits<double>::quiet_NaN(), 1.0).skip);
}

TEST(SkipStep, ARestoredWindowJudgesAsTheOriginal) {
    SkipStepDetector a(6, 3.0);
    const double losses[] = {3.0, 2.9, 3.1, 2.8, 3.05, 2.95, 4.0, 3.0, 3.4, 2.9};
    SkipStepDetector b(6, 3.0);
    for (int i = 0; i < 10; ++i) {
        if (i == 5) b.restore(a.window());  // a resume after step 4
        const SkipVerdict va = a.observe(losses[i], 1.0 + 0.01 * i);
        if (i >= 5) {
            const SkipVerdict vb = b.observe(losses[i], 1.0 + 0.01 * i);
            EXPECT_EQ(va.skip, vb.skip) << "step " << i;
            EXPECT_EQ(va.why, vb.why);
        }
    }
}
