// input_files_test.cpp — core's one reader of files someone else made (qklab/util/input_file.h):
// regular files only, within the limit, never blocking; databases that are no regular file are
// refused before SQLite opens them; a sweep's point count cannot wrap; a sweep's name follows
// the run-name rules; and the lesson check that the app and `qklab-cli lesson` share
// (checkLessonPlayable) refuses what playing the lesson would fail on.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "qklab/analysis/lesson.h"
#include "qklab/config/sweep.h"
#include "qklab/store/run_store.h"
#include "qklab/util/input_file.h"

using namespace qklab;
namespace fs = std::filesystem;

namespace {

class InputFileTest : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/qklab-input-XXXXXX";
        m_dir = mkdtemp(tmpl);
    }
    void TearDown() override { fs::remove_all(m_dir); }

    // readInputFile on a detached thread: its error, or "timeout" when it blocks (the test then
    // fails instead of hanging; a writer is opened to let the thread go).
    std::string readError(const std::string& path, ErrorCode* code = nullptr) {
        auto done = std::make_shared<std::promise<std::pair<std::string, ErrorCode>>>();
        auto result = done->get_future();
        std::thread([path, done] {
            try {
                readInputFile(path, kPresetFile);
                done->set_value({"", ErrorCode::Internal});
            } catch (const Error& e) {
                done->set_value({e.what(), e.code()});
            } catch (const std::exception& e) {
                done->set_value(
                    {std::string("not a qklab::Error: ") + e.what(), ErrorCode::Internal});
            }
        }).detach();
        if (result.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
            std::ofstream(path) << "";
            return "timeout";
        }
        auto [message, c] = result.get();
        if (code) *code = c;
        return message;
    }

    std::string m_dir;
};

bool has(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

}  // namespace

TEST_F(InputFileTest, RegularFilesAreReadWhole) {
    const std::string path = m_dir + "/p.json";
    const std::string text = "{\"why\": \"x\"}\n" + std::string(100000, ' ');
    std::ofstream(path) << text;
    EXPECT_EQ(readInputFile(path, kPresetFile), text);
    EXPECT_EQ(inputFileProblem(path, kPresetFile), "");
    fs::create_symlink(path, m_dir + "/link.json");  // a link to a regular file is fine
    EXPECT_EQ(readInputFile(m_dir + "/link.json", kPresetFile), text);
}

TEST_F(InputFileTest, SpecialFilesAreRefusedWithoutBlocking) {
    const std::string fifo = m_dir + "/fifo.json";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    fs::create_symlink(fifo, m_dir + "/to-fifo.json");
    const std::string sock = m_dir + "/s.sock";
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const std::map<std::string, std::string> cases = {
        {fifo, "a FIFO (named pipe)"},
        {m_dir + "/to-fifo.json", "a FIFO (named pipe)"},
        {"/dev/zero", "a character device"},
        {m_dir, "a directory"},
        {sock, "a socket"}};
    for (const auto& [path, kind] : cases) {
        ErrorCode code = ErrorCode::Internal;
        const std::string e = readError(path, &code);
        ASSERT_NE(e, "timeout") << path;
        EXPECT_EQ(code, ErrorCode::InvalidConfig) << e;
        EXPECT_TRUE(has(e, "preset: \"" + path + "\" is " + kind + ", not a regular file")) << e;
        EXPECT_EQ(inputFileProblem(path, kPresetFile), e);
    }
    close(fd);
}

TEST_F(InputFileTest, MissingAndOversizedFilesNameTheLimit) {
    ErrorCode code = ErrorCode::Internal;
    std::string e = readError(m_dir + "/missing.json", &code);
    EXPECT_EQ(code, ErrorCode::MissingFile);
    EXPECT_TRUE(has(e, "no such file")) << e;
    // Sparse: one byte over the limit is refused from its size, never read.
    const std::string big = m_dir + "/big.json";
    std::ofstream(big).put('{');
    fs::resize_file(big, uintmax_t(kMaxJsonFileBytes) + 1);
    e = readError(big, &code);
    EXPECT_EQ(code, ErrorCode::InvalidConfig);
    EXPECT_TRUE(has(e, "has 4194305 bytes; the limit is 4 MiB (4194304 bytes)")) << e;
    fs::resize_file(big, uintmax_t(kMaxJsonFileBytes));
    EXPECT_EQ(readInputFile(big, kPresetFile).size(), size_t(kMaxJsonFileBytes));
    EXPECT_EQ(limitText(int64_t(1) << 30), "1 GiB");
    EXPECT_EQ(limitText(4096), "4 KiB");
    EXPECT_EQ(limitText(1000), "1000 bytes");
}

TEST_F(InputFileTest, DatabasesThatAreNoRegularFileAreRefusedBeforeSqlite) {
    const std::string fifo = m_dir + "/runs.db";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(specialFileProblem(m_dir + "/absent.db", "database"), "");
    EXPECT_TRUE(has(specialFileProblem(fifo, "database"), "is a FIFO (named pipe)"));
    for (StoreAccess access : {StoreAccess::ReadWrite, StoreAccess::ReadOnly}) {
        for (const std::string& path : {fifo, std::string("/dev/zero"), m_dir}) {
            auto done = std::async(std::launch::async, [&] {
                try {
                    RunStore store(path, access);
                } catch (const Error& e) {
                    return std::pair<ErrorCode, std::string>(e.code(), e.what());
                }
                return std::pair<ErrorCode, std::string>(ErrorCode::Internal, "opened");
            });
            ASSERT_EQ(done.wait_for(std::chrono::seconds(20)), std::future_status::ready) << path;
            const auto [code, message] = done.get();
            EXPECT_EQ(code, ErrorCode::InvalidRequest) << path << ": " << message;
            EXPECT_TRUE(has(message, "not a regular file")) << message;
        }
    }
    EXPECT_FALSE(fs::exists(m_dir + "/absent.db"));
}

// ---- sweeps ---------------------------------------------------------------------------------

TEST(SweepPointCount, IsCheckedNotWrapped) {
    SweepDefinition d;
    for (const char* key : {"a", "b", "c", "d"})
        d.axes.push_back({key, std::vector<nlohmann::json>(8192, 1)});
    d.axes.push_back({"e", std::vector<nlohmann::json>(4096, 1)});
    EXPECT_EQ(d.pointCount(), std::numeric_limits<size_t>::max());  // 2^64 was 0
    d.axes.pop_back();
    EXPECT_EQ(d.pointCount(), size_t(1) << 52);
    d.seeds = {1, 2, 3};
    EXPECT_EQ(d.dimensionSizes(), (std::vector<size_t>{8192, 8192, 8192, 8192, 3}));
    try {
        parseSweep(R"({"axes": {"optim.lr": {"log": [1e-4, 1e-1], "points": 8192},
            "optim.eps": {"log": [1e-9, 1e-6], "points": 8192},
            "schedule.min_lr_ratio": {"linear": [0.01, 0.5], "points": 8192},
            "model.rope_base": {"log": [1000, 100000], "points": 8192},
            "model.mlp_ratio": {"linear": [1, 4], "points": 4096}}})",
                   "huge.json");
        FAIL() << "2^64 points were accepted";
    } catch (const Error& e) {
        EXPECT_TRUE(has(e.what(),
                        "huge.json: the grid has 4096 x 8192 x 8192 x 8192 x 8192 = "
                        "more than 2^64 points; at most 10000"))
            << e.what();
    }
}

TEST(SweepName, FollowsTheRunNameRules) {
    const auto error = [](const std::string& name) {
        try {
            parseSweep(R"({"name": )" + name + R"(, "axes": {"optim.lr": [0.01]}})", "s.json");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_TRUE(has(error(R"("a\nb")"), "s.json: name: a sweep name cannot hold control"));
    EXPECT_TRUE(has(error("12"), "s.json: name: expected text"));
    EXPECT_TRUE(has(error(R"("")"), "a sweep name cannot be empty"));
    EXPECT_TRUE(has(error("\"" + std::string(201, 'x') + "\""), "at most 200 bytes"));
    EXPECT_EQ(error(R"x("lr sweep (v2)")x"), "");
    EXPECT_THROW(checkSweepName("x\ty"), Error);
}

// ---- lessons: the check the app and the CLI share ----------------------------------------------

namespace {

const LessonPresetLookup kPresets = [](const std::string& name) -> std::optional<std::string> {
    if (name == "tiny" || name == "tiny.json")
        return R"({"model": {"d_model": 32, "n_layers": 1, "n_heads": 2}})";
    if (name == "broken") return R"({"model": {"d_model": -1}})";
    if (name == "special") return readInputFile("/dev/zero", kPresetFile);
    return std::nullopt;
};

std::string playError(const std::string& action, const std::string& origin = "/l/01-x.json") {
    try {
        parsePlayableLesson(R"({"title": "t", "steps": [{"text": "a"}, {"title": "Go", "text": "b",
            "action": {"kind": "start_preset", )" +
                                action + "}}]}",
                            origin, kPresets);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(LessonPlayable, StartPresetStepsAreCheckedAsTheAppPlaysThem) {
    EXPECT_EQ(
        playError(R"("preset": "tiny.json", "set": {"optim.lr": 0.01, "schedule.steps": "40"})"),
        "");
    const std::string at = "/l/01-x.json: step 2 (\"Go\"): ";
    EXPECT_TRUE(
        has(playError(R"("preset": "nope")"),
            at + "action.preset: there is no preset file or shipped preset called \"nope\""));
    EXPECT_TRUE(has(playError(R"("preset": "broken")"), at + "action.preset: preset \"broken\""));
    EXPECT_TRUE(
        has(playError(R"("preset": "special")"), at + "action.preset: preset: \"/dev/zero\""));
    EXPECT_TRUE(has(playError(R"("preset": "tiny", "set": {"optim.lr": "fast"})"),
                    at + "action.set.optim.lr: "));
    EXPECT_TRUE(has(playError(R"("preset": "tiny", "set": {"model.n_heads": 3})"),
                    at + "action: the preset with the step's \"set\" is not a valid config: "
                         "model.n_heads"));
    EXPECT_TRUE(has(playError(R"("preset": "tiny", "set": {"data.source": "/dev/zero"})"),
                    at + "action: data.source: \"/dev/zero\" is a character device"));
    // The run's default name comes from the file's name: one the store would refuse is caught.
    EXPECT_TRUE(has(playError(R"("preset": "tiny")", "/l/bad\nname.json"), "action.name"));
    EXPECT_TRUE(has(playError(R"("preset": "tiny", "name": "")"), "action.name"));
}

TEST(LessonPlayable, TheParserBoundsWhatTheTablesOnlyType) {
    const auto error = [](const std::string& step) {
        try {
            parseLesson(R"({"title": "t", "steps": [)" + step + "]}", "l.json");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    const std::string replay = R"({"text": "x", "action": {"kind": "replay", "run": "r", )";
    EXPECT_EQ(error(replay + R"("steps_per_second": 20}})"), "");
    for (const char* sps : {"0", "-5", "1e7"})
        EXPECT_TRUE(has(error(replay + R"("steps_per_second": )" + sps + "}}"),
                        "step 1: action.steps_per_second: expected a number above 0"))
            << sps;
    EXPECT_TRUE(
        has(error(R"({"text": "x", "layer": 1024})"), "layer: expected an integer from 0 to 1023"));
    EXPECT_TRUE(has(error(R"({"text": "x", "head": -1})"), "head: expected an integer from 0"));
    const std::string compare = R"({"text": "x", "action": {"kind": "compare", )";
    EXPECT_TRUE(has(error(compare + R"("runs": ["a"]}})"), "compare takes 2 to 12 runs, got 1"));
    EXPECT_TRUE(
        has(error(compare + R"("runs": ["a", 2]}})"), "action.runs: expected list of text"));
    EXPECT_TRUE(has(error(compare + R"("runs": ["a", "b"], "comparison": "c"}})"),
                    "\"runs\" or \"comparison\" (one of them)"));
    EXPECT_TRUE(
        has(error(compare + R"("runs": ["a", "b\u0000c"]}})"), "action.runs[1]: a run name"));
    EXPECT_TRUE(
        has(error(R"({"text": "x", "action": {"kind": "start_preset", "preset": "a\u0000b"}})"),
            "action.preset: not a file name"));
    EXPECT_TRUE(has(error(R"({"text": "x", "action": {"kind": "start_preset", "preset": "p",
                              "set": {"optim.lrr": 1}}})"),
                    "action.set: \"optim.lrr\" is not a config key (did you mean \"optim.lr\"?)"));
}

TEST(LessonPlayable, PresetNamesResolveAsTheAppResolvesThem) {
    const std::set<std::string> files = {"/shipped/default.json", "/user/mine.json", "rel.json"};
    const auto exists = [&files](const std::string& p) { return files.count(p) > 0; };
    const std::vector<std::string> dirs = {"/shipped", "/user"};
    EXPECT_EQ(resolveLessonPreset("default", dirs, exists), "/shipped/default.json");
    EXPECT_EQ(resolveLessonPreset("default.json", dirs, exists), "/shipped/default.json");
    EXPECT_EQ(resolveLessonPreset("mine.json", dirs, exists), "/user/mine.json");
    EXPECT_EQ(resolveLessonPreset("rel.json", dirs, exists), "rel.json");  // a path first
    EXPECT_EQ(resolveLessonPreset("nope", dirs, exists), "");
    EXPECT_EQ(lessonSetAssignments(nlohmann::json::parse(R"({"a.b": "x", "c.d": 2.5})")),
              (std::vector<std::string>{"a.b=x", "c.d=2.5"}));
}
