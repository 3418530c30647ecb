// tokenizer_run_test.cpp — a run with data.tokenizer = bpe (issue 41, item 6): its model has
// data.vocab_size rows, its batches are the encoded text, its checkpoints carry the merges
// (generation decodes with them; a hostile set is refused; a resume against a changed corpus
// is refused), and it resumes bit for bit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/src/data_loader.h"
#include "engine/src/model.h"
#include "qklab/config/corpus.h"
#include "qklab/engine/generate.h"
#include "qklab/engine/trainer.h"
#include "support/resume_pair.h"
#include "support/test_files.h"
#include "support/tiny_config.h"

using namespace qklab;

namespace {

RunConfig bpeConfig(int64_t steps) {
    RunConfig c = testsupport::tinyRunConfig(steps);
    c.data.tokenizer = TokenizerKind::Bpe;
    c.data.vocabSize = 320;
    return c;
}

void writeText(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

// Trains `c` to the end with checkpoints in `dir`; the last checkpoint's path.
std::string trainedCheckpoint(const RunConfig& c, const std::filesystem::path& dir) {
    Trainer t(c);
    t.setCheckpointDir(dir.string());
    testsupport::expectTrainsToAFiniteLoss(t, "bpe run");
    return (dir / ("step-" + std::to_string(c.schedule.steps) + ".pt")).string();
}

TrainerOptions resumingFrom(const std::string& path) {
    TrainerOptions options;
    options.resumeFrom = path;
    return options;
}

}  // namespace

// Each batch row is a window of the encoded training text: its targets are its inputs shifted
// by one, every id is below the vocabulary, and the row decodes to text of the corpus.
TEST(TokenizerRun, BatchesAreWindowsOfTheEncodedText) {
    const RunConfig c = bpeConfig(1);
    const std::string corpus = loadCorpus("builtin");
    const Tokenizer tokenizer = tokenizerFor(c.data, corpus);
    ASSERT_EQ(tokenizer.idCount(), 320);
    TokenDataLoader data(corpus, tokenizer, c.data.valFraction, c.maxSeqLen(), 5);
    const Batch b = data.trainBatch(4, c.model.seqLen);
    EXPECT_TRUE(
        torch::equal(b.x.narrow(1, 1, c.model.seqLen - 1), b.y.narrow(1, 0, c.model.seqLen - 1)));
    EXPECT_LT(b.y.max().item<int64_t>(), 320);
    EXPECT_GE(b.x.max().item<int64_t>(), 256);  // merged tokens occur
    const std::string training =
        corpus.substr(0, trainingSplitBytes(static_cast<int64_t>(corpus.size()), 0.1));
    for (int64_t r = 0; r < 4; ++r) {
        std::vector<int32_t> ids;
        for (int64_t i = 0; i < c.model.seqLen; ++i) ids.push_back(b.x[r][i].item<int32_t>());
        EXPECT_NE(training.find(tokenizer.decode(ids)), std::string::npos) << "row " << r;
    }
    // A dirty batch is its phrase's tokens, repeated.
    const Batch dirty = data.dirtyBatch("buy now buy now ", 2, c.model.seqLen);
    const auto phrase = tokenizer.encode("buy now buy now ");
    for (int64_t i = 0; i < c.model.seqLen; ++i)
        ASSERT_EQ(dirty.x[0][i].item<int32_t>(), phrase[static_cast<size_t>(i) % phrase.size()]);
}

TEST(TokenizerRun, TrainsAVocabularyOfDataVocabSizeAndKeepsTheMerges) {
    const RunConfig c = bpeConfig(6);
    const auto dir = testsupport::scratchDir("bpe-run");
    const std::string path = trainedCheckpoint(c, dir);
    Transformer model(c);
    EXPECT_EQ(model->outputEmbedding().size(0), 320);
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    torch::Tensor merges;
    ASSERT_TRUE(archive.try_read("bpe_merges", merges));
    EXPECT_EQ(tokenizerFromMerges(merges, "test").merges(),
              tokenizerFor(c.data, loadCorpus("builtin")).merges());

    // Generation decodes with the checkpoint's merges: each piece is one token's text.
    GenerateOptions options;
    options.tokens = 12;
    std::string pieces;
    int calls = 0;
    const auto result = generateFromCheckpoint(c, path, options, [&](const std::string& piece) {
        pieces += piece;
        return ++calls > 0;
    });
    EXPECT_EQ(calls, 12);
    EXPECT_EQ(result.text, pieces);
    EXPECT_GE(result.text.size(), 12u);  // a token is one byte or more
    std::filesystem::remove_all(dir);
}

// A checkpoint is a file someone else may have made: merges that join ids not yet made are
// refused with BadCheckpoint, before any text is decoded.
TEST(TokenizerRun, RefusesACheckpointWithHostileMerges) {
    const RunConfig c = bpeConfig(2);
    const auto dir = testsupport::scratchDir("bpe-hostile");
    Transformer model(c);
    torch::serialize::OutputArchive archive;
    model->save(archive);
    archive.write("next_step", torch::tensor(int64_t{2}));
    archive.write("bpe_merges", torch::tensor({300, 1}, torch::kInt32).view({1, 2}));
    const std::string path = (dir / "hostile.pt").string();
    archive.save_to(path);
    try {
        generateFromCheckpoint(c, path, GenerateOptions{});
        ADD_FAILURE() << "hostile merges were accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::BadCheckpoint);
        EXPECT_NE(std::string(e.what()).find("merge 0 joins ids 300 and 1"), std::string::npos)
            << e.what();
    }
    std::filesystem::remove_all(dir);
}

// The BPE is retrained from data.source when a run resumes: a changed text gives other merges,
// and the checkpoint is refused rather than trained on with ids that mean other words.
TEST(TokenizerRun, RefusesToResumeOnAChangedText) {
    const auto dir = testsupport::scratchDir("bpe-changed");
    RunConfig c = bpeConfig(4);
    c.data.source = (dir / "text.txt").string();
    const std::string text = builtinCorpus(60'000);
    writeText(c.data.source, text);
    const std::string path = trainedCheckpoint(c, dir / "ckpt");
    writeText(c.data.source, builtinCorpus(90'000).substr(30'000));
    try {
        Trainer resumed(c, resumingFrom(path));
        ADD_FAILURE() << "resumed against a changed text";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::BadCheckpoint);
        EXPECT_NE(std::string(e.what()).find("other BPE merges"), std::string::npos) << e.what();
    }
    writeText(c.data.source, text);  // the same text again: it resumes
    Trainer again(c, resumingFrom(path));
    EXPECT_EQ(again.startStep(), 4);
    std::filesystem::remove_all(dir);
}

// A text whose words are all one byte long ("a.a.a."): BPE merges within words, so it has no
// pair to join and learns no merge. The run is still a BPE run: its checkpoint says so (with
// no merges), generation from it decodes, and it resumes.
TEST(TokenizerRun, ATextWithNoPairToJoinStillCheckpointsAsBpe) {
    const auto dir = testsupport::scratchDir("bpe-no-pairs");
    RunConfig c = bpeConfig(2);
    c.data.source = (dir / "text.txt").string();
    std::string text;
    for (int i = 0; i < 4000; ++i) text += "a.";
    writeText(c.data.source, text);
    EXPECT_TRUE(tokenizerFor(c.data, text).merges().empty());
    const std::string path = trainedCheckpoint(c, dir / "ckpt");
    GenerateOptions options;
    options.tokens = 5;
    EXPECT_EQ(generateFromCheckpoint(c, path, options).text.size(), 5u);  // five bytes
    Trainer resumed(c, resumingFrom(path));
    EXPECT_EQ(resumed.startStep(), 2);
    std::filesystem::remove_all(dir);
}

TEST(TokenizerRun, ResumesBitForBit) {
    testsupport::expectResumedEqualsWhole(testsupport::trainedWholeAndResumed(bpeConfig(16), 7),
                                          16);
}
