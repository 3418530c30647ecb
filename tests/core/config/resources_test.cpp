// resources_test.cpp — the memory estimate counts the model as model.cpp builds it, refuses
// absurd sizes before anything is allocated, data.source accepts only regular files, and
// run.threads is capped to the machine.
#include "qklab/config/resources.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "qklab/config/corpus.h"
#include "qklab/util/error.h"

using namespace qklab;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system temp dir, removed by the destructor.
struct TempDir {
    std::string path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "qklab-resources-XXXXXX").string();
        if (mkdtemp(tmpl.data())) path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        if (!path.empty()) fs::remove_all(path, ec);
    }
};

// loadCorpus(source) on a detached thread: the error it throws, or "timeout" when it does not
// come back within `limit` (a FIFO read blocks; the test must fail, not hang).
std::string loadError(const std::string& source, double limit, ErrorCode* code) {
    auto done = std::make_shared<std::promise<std::pair<std::string, ErrorCode>>>();
    auto result = done->get_future();
    std::thread([source, done] {
        try {
            loadCorpus(source);
            done->set_value({"", ErrorCode::Internal});
        } catch (const Error& e) {
            done->set_value({e.what(), e.code()});
        } catch (const std::exception& e) {
            done->set_value({std::string("not a qklab::Error: ") + e.what(), ErrorCode::Internal});
        }
    }).detach();
    if (result.wait_for(std::chrono::duration<double>(limit)) != std::future_status::ready)
        return "timeout";
    auto [message, c] = result.get();
    *code = c;
    return message;
}

std::string contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos ? "" : "\"" + part + "\" not in: " + text;
}

}  // namespace

// ---- the estimate ------------------------------------------------------------------------

TEST(MemoryEstimate, DefaultParametersAreCountedExactly) {
    const RunConfig c;  // d_model 128, 2 layers, 4 heads, mlp 4, RoPE, untied, shared gains
    ASSERT_EQ(c.model.dModel, 128);
    ASSERT_EQ(c.model.nLayers, 2);
    ASSERT_EQ(c.model.nHeads, 4);
    ASSERT_EQ(c.model.mlpRatio, 4);
    ASSERT_TRUE(c.model.rope);
    ASSERT_FALSE(c.model.tieEmbeddings);
    ASSERT_FALSE(c.attention.qkGainPerHead);
    // By hand, tensor by tensor (model.cpp): tokens 256x128; per block qkv 128x384, proj
    // 128x128, q_gain and k_gain 1x32, whole_q_gain and whole_k_gain 128, l2_scale 4, norm1 and
    // norm2 128, fc 128x512, out 512x128; final_norm 128; head 128x256.
    const int64_t tokens = 256 * 128;
    const int64_t block =
        128 * 384 + 128 * 128 + 32 + 32 + 128 + 128 + 4 + 128 + 128 + 128 * 512 + 512 * 128;
    const int64_t expected = tokens + 2 * block + 128 + 128 * 256;
    EXPECT_EQ(expected, 460040);
    const MemoryEstimate m = estimateMemory(c);
    EXPECT_EQ(m.parameterCount, double(expected));
    EXPECT_EQ(m.parameters, 4.0 * expected);  // fp32
    EXPECT_EQ(m.gradients, 4.0 * expected);
    EXPECT_EQ(m.optimizer, 8.0 * expected);  // AdamW: two fp32 moments
    EXPECT_DOUBLE_EQ(m.total, m.parameters + m.gradients + m.optimizer + m.activations +
                                  m.attention + m.logits + m.buffers + m.data + m.validation);
}

TEST(MemoryEstimate, ShapeSwitchesChangeTheCountAsTheModelDoes) {
    const double base = estimateMemory(RunConfig{}).parameterCount;
    RunConfig c;
    c.model.rope = false;  // learned positions: seq_len x d_model
    EXPECT_EQ(estimateMemory(c).parameterCount, base + 128 * 128);
    c = RunConfig{};
    c.model.tieEmbeddings = true;  // no separate head
    EXPECT_EQ(estimateMemory(c).parameterCount, base - 256 * 128);
    c = RunConfig{};
    c.attention.qkGainPerHead = true;  // q/k gains: 4 x 32 instead of 1 x 32, per block
    EXPECT_EQ(estimateMemory(c).parameterCount, base + 2 * 2 * 3 * 32);
    c = RunConfig{};
    c.run.dtype = Precision::Bf16;  // autocast's bf16 copy of each weight
    EXPECT_EQ(estimateMemory(c).parameters, 6.0 * base);
}

TEST(MemoryEstimate, DefaultRunIsWithinTwiceAHandCountOfOneStep) {
    const RunConfig c;
    const double B = 16, T = 128, C = 128, H = 4, L = 2, V = 256, f = 4;
    // What one default step holds, by hand: weights, gradients and AdamW moments (16 bytes a
    // parameter); per block the RMSNorms' inputs, normalised and scaled outputs (6), the qkv
    // output (3), q, k, the attention output and its merged copy (4), the GELU's input and
    // output (2 x 512 wide); per block the softmax output and, on a probe step, the captured
    // raw logits (B, H, T, T); the log-softmax of the logits and its gradient; the built-in
    // corpus twice. (The peak RSS of a default CLI run, less that of a tiny one, is ~130 MiB.)
    const double hand = 16 * 460040 + L * B * T * (13 * C + 2 * 4 * C) * f +
                        L * 2 * B * H * T * T * f + 2 * B * T * V * f + 2 * 2e6;
    const MemoryEstimate m = estimateMemory(c);
    EXPECT_GE(m.total, hand);  // never below what can be counted by hand
    EXPECT_LT(m.total, hand * 2);
    EXPECT_LT(m.total, 256.0 * 1024 * 1024);  // a laptop-sized default
    EXPECT_EQ(memoryProblem(c), "");          // fits in this machine's available memory
}

TEST(MemoryEstimate, AbsurdSizesAreRefusedBeforeAnythingIsAllocated) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"data.batch_size=1000000000", "data.batch_size"},
        {"model.seq_len=100000", "model.seq_len"},
        {"model.d_model=1000000", "model.d_model"},
        {"model.mlp_ratio=1000000000", "model.mlp_ratio"},
        {"model.n_layers=1000000", "model.n_layers"},
        {"eval.batches=1000000000", "eval.batches"},
    };
    for (const auto& [assignment, key] : cases) {
        RunConfig c;
        applyOverride(c, assignment);
        // Whether or not a validation range refuses the value too, the estimate must, by
        // counting (an allocation of this size would fail or be killed, not be slow).
        // A limit a large workstation has: every case needs far more than 256 GiB.
        c.run.maxMemoryGiB = 256;
        const std::string problem = memoryProblem(c);
        EXPECT_EQ(contains(problem, "the run needs about"), "") << assignment;
        EXPECT_EQ(contains(problem, "run.max_memory allows 256 GiB"), "") << assignment;
        EXPECT_EQ(contains(problem, key), "") << assignment;  // the key to lower is named
        // With the machine's own memory (run.max_memory = 0) as the limit, on any machine
        // with less than 256 GiB available.
        c.run.maxMemoryGiB = 0;
        if (availableMemoryBytes() < 256.0 * 1024 * 1024 * 1024) {
            EXPECT_EQ(contains(memoryProblem(c), "the machine's available memory"), "")
                << assignment;
        }
    }
}

TEST(MemoryEstimate, LimitIsRunMaxMemoryAndCudaIsCheckedOnlyAgainstIt) {
    RunConfig c;
    c.run.maxMemoryGiB = 1.0 / 1024;  // 1 MiB: the default run needs ~100 MiB
    EXPECT_EQ(contains(memoryProblem(c), "run.max_memory allows 1.0 MiB"), "");
    c.run.maxMemoryGiB = -1;
    EXPECT_EQ(contains(memoryProblem(c), "run.max_memory = -1"), "");
    c = RunConfig{};
    c.run.device = DeviceKind::Cuda;
    c.data.batchSize = 1'000'000'000;
    EXPECT_EQ(memoryLimitBytes(c), 0);  // the host's memory is not the GPU's
    EXPECT_EQ(memoryProblem(c), "");
    c.run.maxMemoryGiB = 80;
    EXPECT_EQ(contains(memoryProblem(c), "run.max_memory allows 80.0 GiB"), "");
    ASSERT_NE(findField("run.max_memory"), nullptr);
    applyOverride(c, "run.max_memory=12.5");
    EXPECT_EQ(c.run.maxMemoryGiB, 12.5);
}

TEST(MemoryEstimate, AvailableMemoryIsKnownAndBytesAreFormatted) {
    EXPECT_GT(availableMemoryBytes(), 64.0 * 1024 * 1024);
    EXPECT_EQ(formatBytes(512), "512 bytes");
    EXPECT_EQ(formatBytes(12.5 * 1024 * 1024), "12.5 MiB");
    EXPECT_EQ(formatBytes(300.0 * 1024 * 1024 * 1024), "300 GiB");
    EXPECT_FALSE(formatBytes(1e300).empty());
}

// ---- data.source -------------------------------------------------------------------------

TEST(DataSource, FifoIsRefusedWithoutBlocking) {
    TempDir dir;
    ASSERT_FALSE(dir.path.empty());
    const std::string fifo = dir.path + "/corpus.fifo";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    const std::string link = dir.path + "/link-to-fifo.txt";
    fs::create_symlink(fifo, link);
    for (const std::string& source : {fifo, link}) {
        EXPECT_EQ(contains(dataSourceProblem(source), "data.source"), "");
        EXPECT_EQ(contains(dataSourceProblem(source), "FIFO"), "");
        ErrorCode code = ErrorCode::Internal;
        const std::string error = loadError(source, 5.0, &code);
        if (error == "timeout") {
            // Unblock the reader (a writer that opens and closes) so the process can exit.
            std::ofstream(fifo) << "";
            FAIL() << "loadCorpus(" << source << ") blocked on a FIFO";
        }
        EXPECT_EQ(code, ErrorCode::InvalidConfig);
        EXPECT_EQ(contains(error, "data.source"), "");
        EXPECT_EQ(contains(error, source), "");
    }
}

// By their type, before a byte is read: the error says so. (No clock: a machine under load is
// slow, and a read of /dev/zero up to the size limit would still be refused; loadError's
// bound only keeps a blocking read from hanging the test.)
TEST(DataSource, DevZeroAndDirectoriesAreRefusedByTheirType) {
    for (const std::string source : {"/dev/zero", "/tmp"}) {
        if (!fs::exists(source)) continue;
        ErrorCode code = ErrorCode::Internal;
        const std::string error = loadError(source, 60.0, &code);
        EXPECT_EQ(code, ErrorCode::InvalidConfig) << error;
        EXPECT_EQ(contains(error, "data.source"), "");
        EXPECT_EQ(contains(error, source), "");
        EXPECT_EQ(contains(error, "not a regular text file"), "");
    }
    EXPECT_EQ(contains(dataSourceProblem("/dev/zero"), "character device"), "");
}

TEST(DataSource, RegularFilesWithinTheLimitsAreAccepted) {
    TempDir dir;
    ASSERT_FALSE(dir.path.empty());
    const std::string text = dir.path + "/small.txt";
    std::ofstream(text) << std::string(8192, 'a');
    EXPECT_EQ(dataSourceProblem(text), "");
    EXPECT_EQ(loadCorpus(text).size(), 8192u);
    EXPECT_EQ(dataSourceProblem("builtin"), "");

    const std::string tiny = dir.path + "/tiny.txt";
    std::ofstream(tiny) << "too short";
    EXPECT_EQ(contains(dataSourceProblem(tiny), "at least 4096"), "");

    // A sparse file one byte over the limit: refused from its size, never read.
    const std::string huge = dir.path + "/huge.txt";
    std::ofstream(huge).put('x');
    fs::resize_file(huge, static_cast<uintmax_t>(kMaxCorpusBytes) + 1);
    ErrorCode code = ErrorCode::Internal;
    const std::string error = loadError(huge, 5.0, &code);
    EXPECT_EQ(code, ErrorCode::InvalidConfig);
    EXPECT_EQ(contains(error, "the limit is 1 GiB"), "");

    const std::string missing = dir.path + "/missing.txt";
    EXPECT_EQ(contains(dataSourceProblem(missing, &code), missing), "");
    EXPECT_EQ(code, ErrorCode::MissingFile);
}

// ---- run.threads -------------------------------------------------------------------------

TEST(Threads, RequestsAboveTheCoreCountAreCappedWithAWarning) {
    const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
    std::string warning;
    EXPECT_EQ(cappedThreads(1000000, &warning), cores);
    EXPECT_EQ(contains(warning, "1000000"), "");
    EXPECT_EQ(contains(warning, std::to_string(cores) + " cores"), "");
    EXPECT_EQ(cappedThreads(0, &warning), cores);  // 0 = all cores
    EXPECT_EQ(warning, "");
    EXPECT_EQ(cappedThreads(1, &warning), 1);
    EXPECT_EQ(warning, "");
}
