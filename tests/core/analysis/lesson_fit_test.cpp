// lesson_fit_test.cpp — the lesson column's budget: how lines are counted, tables laid out as
// lists, the reading a spike callout shows, and the checker's message.
#include "qklab/analysis/lesson_fit.h"

#include <gtest/gtest.h>

#include "qklab/analysis/lesson.h"
#include "qklab/util/error.h"

using namespace qklab;

namespace {

// `n` list items of one short word: exactly n lines.
std::string items(int n) {
    std::string t;
    for (int i = 0; i < n; ++i) t += "- a\n";
    return t;
}

std::string error(const Lesson& l) {
    try {
        checkLessonFits(l, "l.json");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(LessonFit, WrapsAtWholeWords) {
    // 10 characters a line: "aaaa bbbb" (9) fits one line, "cccc" the next.
    EXPECT_EQ(lessonTextLines("aaaa bbbb cccc", 10), 2);
    EXPECT_EQ(lessonTextLines("aaaa bbbbb", 10), 1);             // exactly 10
    EXPECT_EQ(lessonTextLines("aaaa bbbbbb", 10), 2);            // 11: the word moves down whole
    EXPECT_EQ(lessonTextLines("abcdefghijklmnopqrstu", 10), 3);  // a word over a line: 3 lines
    EXPECT_EQ(lessonTextLines("", 10), 0);
}

TEST(LessonFit, BlocksStartLinesAndParagraphsAreSeparated) {
    EXPECT_EQ(lessonTextLines("one\n\ntwo", 10), 3);  // two paragraphs and the gap
    EXPECT_EQ(lessonTextLines("one\ntwo", 10), 1);    // one paragraph over two source lines
    EXPECT_EQ(lessonTextLines("- one\n- two\n1. three", 10), 3);
    EXPECT_EQ(lessonTextLines(items(24), 26), 24);
    // Emphasis marks are not shown; a placeholder counts as kPlaceholderChars.
    EXPECT_EQ(lessonTextLines("**aaaa** bbbbb", 10), 1);
    EXPECT_EQ(lessonTextLines("{{logit_max_raw at=10 layer=0}}", kPlaceholderChars), 1);
    EXPECT_EQ(lessonTextLines("{{loss last}} {{loss last}}", 2 * kPlaceholderChars + 1), 1);
    // UTF-8 characters, not bytes.
    EXPECT_EQ(lessonTextLines("√√√√√ →→→→", 10), 1);
}

TEST(LessonFit, TablesBecomeListsHeadedByTheirFirstCell) {
    const std::string md =
        "Before.\n\n| run | max | reading |\n|---|---|---|\n| LR 3e-2 | "
        "{{logit_max_raw last}} | runaway |\n| dirty | 7 | data |\n\nAfter.";
    EXPECT_EQ(lessonColumnMarkdown(md),
              "Before.\n\n**LR 3e-2**\n- max: {{logit_max_raw last}}\n- reading: runaway\n\n"
              "**dirty**\n- max: 7\n- reading: data\n\nAfter.");
    // Counted as shown: 1 + gap + (1 + 2) + gap + (1 + 2) + gap + 1.
    EXPECT_EQ(lessonTextLines(md, 40), 11);
    // A text without a table is left as it is.
    EXPECT_EQ(lessonColumnMarkdown("a | b\n\nc"), "a | b\n\nc");
}

TEST(LessonFit, ASpikeCalloutShowsTheVerdictParagraph) {
    EXPECT_EQ(calloutReading("Verdict. Tier 1: advice.\n\nEvidence: numbers."),
              "Verdict. Tier 1: advice.");
    // Too long: the verdict and the advice, and where the rest is.
    std::string middle;
    for (int i = 0; i < 40; ++i) middle += "More words of evidence here. ";
    const std::string r = calloutReading("Q/K runaway. " + middle + "Tier 3: QK-norm.");
    EXPECT_EQ(r, "Q/K runaway. Tier 3: QK-norm. (More in the Spikes view.)");
    EXPECT_LE(lessonTextLines(r, kLessonCalloutChars), kCalloutReadingLines);
}

// An alarm's reading keeps what passed the line, the verdict and the advice (lesson 7 step 2's
// alarm, as stored); the norms' numbers are the Spikes view's.
TEST(LessonFit, AnAlarmsReadingIsItsHeadlineVerdictAndAdvice) {
    const std::string alarm =
        "Layer 0, step 10: logit_max_raw 122 passed the intervention line (30); q/k norm p90 28: "
        "4.85x its median over the 2 probes before (5.77, z 5.18); 19x the layer's first probe "
        "(step 0, 1.47). The q/k lengths have grown 2x or more since the layer's first probe: "
        "the logits grew with them. Tier 3: turn on QK-norm (RMS, s = 1/sqrt(d_head)) and give "
        "it 1000 steps before judging.";
    EXPECT_EQ(alarmReading(alarm),
              "Layer 0, step 10: logit_max_raw 122 passed the intervention line (30). The q/k "
              "lengths have grown 2x or more since the layer's first probe: the logits grew with "
              "them. Tier 3: turn on QK-norm (RMS, s = 1/sqrt(d_head)) and give it 1000 steps "
              "before judging.");
    EXPECT_LE(lessonTextLines(alarmReading(alarm), kLessonCalloutChars), kCalloutReadingLines);
}

TEST(LessonFit, TheCheckerSaysWhichFieldIsOverAndByHowMuch) {
    Lesson l;
    l.steps.resize(2);
    l.steps[1].title = "Long";
    l.steps[1].text = items(kLessonColumnLines);
    EXPECT_EQ(error(l), "");
    l.steps[1].text = items(kLessonColumnLines + 1);
    EXPECT_EQ(error(l),
              "l.json: step 2 (\"Long\"): text: the text takes 27 lines of the lesson column, "
              "which holds 26 at 1024x768 in presenter mode (26 characters a line): 1 line over; "
              "shorten it");
    // A callout shares the column with the text, and its frame takes kCalloutFrameLines.
    PauseCondition c;
    c.kind = "step";
    c.callout = items(4);
    l.steps[1].pauses = {c};
    l.steps[1].text = items(kLessonColumnLines - kCalloutFrameLines - 4);
    EXPECT_EQ(error(l), "");
    l.steps[1].text += "- a\n";
    EXPECT_NE(error(l).find("pause[0].callout: the text and this callout together take 27 lines"),
              std::string::npos)
        << error(l);
    // A spike's callout keeps room for qklab's reading under it.
    l.steps[1].pauses[0].kind = "spike";
    l.steps[1].text = items(kLessonColumnLines - kCalloutFrameLines - 4 - kCalloutReadingLines - 1);
    EXPECT_EQ(error(l), "");
    // The status line under the text counts: "Training “r” live." and a warning, 3 lines.
    l.steps[1].pauses.clear();
    l.steps[1].text = items(kLessonColumnLines - 3);
    const std::map<size_t, std::string> status = {{1,
                                                   "Training \u201cr\u201d live.\nWarning: "
                                                   "attention.scale is wrong here"}};
    EXPECT_NO_THROW(checkLessonFits(l, "l.json", status));
    l.steps[1].text += "- a\n";
    EXPECT_THROW(checkLessonFits(l, "l.json", status), Error);
}

// Issue 37: the warning of lesson 4 step 3's set-up (QK-norm with attention.scale = 1) is in the
// line the player writes under the step, since presenter mode hides the setup dock.
TEST(LessonFit, TheStartStatusCarriesTheConfigsWarnings) {
    RunConfig c;
    EXPECT_EQ(lessonStartStatus("r", c), "Training \u201cr\u201d live.");
    c.attention.qkNorm = QkNormVariant::Rms;
    c.attention.scale = 1.0;
    const std::string s = lessonStartStatus("r", c);
    EXPECT_NE(s.find("\nWarning: attention.scale is above 1/sqrt(d_head) with QK-norm"),
              std::string::npos)
        << s;
}
