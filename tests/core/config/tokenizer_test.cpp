// tokenizer_test.cpp — data.tokenizer (issue 41, item 6): the words BPE merges within, a BPE
// trained by hand on a text of four words (merge order, the tie rule, running out of pairs),
// encode and decode as inverses on text the BPE never read, the validation split kept out of
// training, and merges from a hostile checkpoint refused.
#include "qklab/config/tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "qklab/config/corpus.h"
#include "qklab/config/run_config.h"

using namespace qklab;

namespace {

std::vector<std::string> wordsOf(std::string_view text) {
    std::vector<std::string> out;
    for (auto w : splitWords(text)) out.emplace_back(w);
    return out;
}

}  // namespace

// A single space joins the word after it; a longer whitespace run keeps all but its last
// space; letters, digits and marks are separate words; bytes >= 0x80 count as letters, so a
// UTF-8 word stays whole.
TEST(Tokenizer, SplitsWordsAsGpt2DoesInBytes) {
    EXPECT_EQ(wordsOf("Hello, world!\n\n  foo 12ab caf\xc3\xa9\n"),
              (std::vector<std::string>{"Hello", ",", " world", "!", "\n\n ", " foo", " 12", "ab",
                                        " caf\xc3\xa9", "\n"}));
    EXPECT_EQ(wordsOf("  x"), (std::vector<std::string>{" ", " x"}));
    EXPECT_EQ(wordsOf(" "), (std::vector<std::string>{" "}));
    EXPECT_TRUE(wordsOf("").empty());
    const std::string text = builtinCorpus(20'000);
    std::string joined;
    for (const auto& w : wordsOf(text)) joined += w;
    EXPECT_EQ(joined, text);  // the words are the text, cut
}

// A text without spaces (Chinese, a minified file, a hostile one) is cut into words of at most
// 64 bytes, so that BPE's cost, quadratic in a word's length, stays bounded; nothing is lost.
TEST(Tokenizer, CutsRunsLongerThanAWord) {
    const std::string run(1000, 'x');
    const auto words = wordsOf(" " + run + std::string(130, '\n'));
    ASSERT_EQ(words.size(), 16u + 3u);  // " " + 1000 x: 1001 bytes = 15 x 64 + 41; 130 = 64+64+2
    EXPECT_EQ(words[0], " " + std::string(63, 'x'));
    EXPECT_EQ(words[15].size(), 41u);
    EXPECT_EQ(words[16], std::string(64, '\n'));
    EXPECT_EQ(words[18], "\n\n");
    const auto t = Tokenizer::trainBpe(run, 300);
    EXPECT_EQ(t.decode(t.encode(run)), run);
}

// "ab ab ab abc" has the words "ab", " ab" (twice) and " abc". Pairs: (a,b) 4, (' ',a) 3,
// (b,c) 1. Merge 0 joins a b -> 256; then (' ',256) 3, (256,c) 1: merge 1 joins ' ' 256 ->
// 257; then (257,c) 1: merge 2 -> 258. No pair is left, so a vocabulary of 300 gets 3 merges.
TEST(Tokenizer, LearnsTheMergesWorkedOutByHand) {
    const auto t = Tokenizer::trainBpe("ab ab ab abc", 300);
    EXPECT_EQ(t.merges(), (std::vector<Tokenizer::Merge>{{'a', 'b'}, {' ', 256}, {257, 'c'}}));
    EXPECT_EQ(t.idCount(), 259);
    EXPECT_EQ(t.encode("ab ab ab abc"), (std::vector<int32_t>{256, 257, 257, 258}));
    EXPECT_EQ(t.piece(258), " abc");
    // Text it never saw: "abd" has a b but not (257, d); " cab" has no space-a pair.
    EXPECT_EQ(t.encode(" abd cab"), (std::vector<int32_t>{257, 'd', ' ', 'c', 256}));
    // A vocabulary of 257 stops after the first merge.
    EXPECT_EQ(Tokenizer::trainBpe("ab ab ab abc", 257).merges().size(), 1u);
}

// "xy yx": (x,y), (' ',y) and (y,x) occur once each; the tie goes to the smallest pair of ids,
// (' ' = 32, y), then (x = 120, y = 121) before (y, x).
TEST(Tokenizer, BreaksTiesTowardTheSmallerPair) {
    const auto t = Tokenizer::trainBpe("xy yx", 259);
    EXPECT_EQ(t.merges(), (std::vector<Tokenizer::Merge>{{' ', 'y'}, {'x', 'y'}, {256, 'x'}}));
}

// "aaaa" joins left to right without overlap: a a -> 256 twice, then 256 256 -> 257.
TEST(Tokenizer, JoinsRepeatsWithoutOverlap) {
    const auto t = Tokenizer::trainBpe("aaaa aaa", 258);
    EXPECT_EQ(t.merges().front(), (Tokenizer::Merge{'a', 'a'}));
    EXPECT_EQ(t.encode("aaa"), (std::vector<int32_t>{256, 'a'}));
}

TEST(Tokenizer, DecodesWhatItEncodesOnTextItNeverRead) {
    const std::string text = builtinCorpus(200'000);
    const auto t = Tokenizer::trainBpe(std::string_view(text).substr(0, 150'000), 512);
    EXPECT_EQ(t.idCount(), 512);
    const std::string unseen = text.substr(150'000) + "\x01\xff unseen \xe2\x82\xac bytes\n";
    const auto ids = t.encode(unseen);
    EXPECT_EQ(t.decode(ids), unseen);
    // 256 merges of a word-level grammar: well under one token per byte.
    EXPECT_LT(static_cast<double>(ids.size()), 0.6 * static_cast<double>(unseen.size()));
    for (int32_t id : ids) ASSERT_LT(id, 512);
    // Bytes: the identity, every id one byte.
    const Tokenizer bytes;
    EXPECT_EQ(bytes.encode("\xff"
                           "A"),
              (std::vector<int32_t>{255, 65}));
    EXPECT_EQ(bytes.idCount(), 256);
    EXPECT_EQ(bytes.piece(0xe2), "\xe2");
    EXPECT_EQ(bytes.decode({104, 105}), "hi");
}

// The BPE reads only the training split: a word found only in the validation tail is never
// merged, and the split is the data loader's.
TEST(Tokenizer, TrainsOnTheTrainingSplitOnly) {
    std::string corpus;
    for (int i = 0; i < 90; ++i) corpus += "ab ";  // 270 bytes
    for (int i = 0; i < 10; ++i) corpus += "qq ";  // the last 30 bytes: 10 %
    DataConfig data;
    data.tokenizer = TokenizerKind::Bpe;
    data.vocabSize = 300;
    data.valFraction = 0.1;
    EXPECT_EQ(trainingSplitBytes(300, 0.1), 270);
    const auto t = tokenizerFor(data, corpus);
    for (const auto& [a, b] : t.merges()) {
        EXPECT_NE(a, 'q');
        EXPECT_NE(b, 'q');
    }
    EXPECT_FALSE(t.isBytes());
    data.tokenizer = TokenizerKind::Bytes;
    EXPECT_TRUE(tokenizerFor(data, corpus).isBytes());
}

// Merges read from a checkpoint someone else may have made: each must join ids that exist
// before it.
TEST(Tokenizer, RefusesMergesThatReferToLaterIds) {
    EXPECT_EQ(mergesProblem({{'a', 'b'}, {256, 'c'}}), "");
    EXPECT_NE(mergesProblem({{'a', 256}}).find("merge 0 joins ids 97 and 256"), std::string::npos);
    EXPECT_NE(mergesProblem({{-1, 3}}), "");
    EXPECT_NE(mergesProblem(std::vector<Tokenizer::Merge>(65536 - 255, {1, 2})), "");
    EXPECT_THROW(Tokenizer::fromMerges({{300, 1}}), Error);
    EXPECT_EQ(Tokenizer::fromMerges({{'a', 'b'}}).piece(256), "ab");
}

TEST(Tokenizer, SetsTheModelsVocabulary) {
    RunConfig c;
    EXPECT_EQ(c.vocabSize(), 256);
    c.data.tokenizer = TokenizerKind::Bpe;
    c.data.vocabSize = 1000;
    EXPECT_EQ(c.vocabSize(), 1000);
}
