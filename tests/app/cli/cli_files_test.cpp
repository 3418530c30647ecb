// cli_files_test.cpp — qklab-cli and files someone else made (issue 22, items 11, 12, 13, 17):
// special files (/dev/zero, a FIFO, a directory) and oversized files are refused with exit 2
// instead of reading until memory runs out or blocking; `lesson` refuses what the app could not
// play; `generate --threads` is bounded; `sweep --resume` never ends "finished" with exit 0
// while points another process still runs were skipped.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "qklab/analysis/lesson_fit.h"
#include "qklab/config/sweep.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "support/cli_run.h"
#include "support/test_files.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string sq(const std::string& s) {
    return qklab::testsupport::shellWord(s);
}

// A command's memory bound. AddressSanitizer (scripts/sanitize.sh) reserves terabytes of
// address space for its shadow memory and cannot even start under ulimit -v: there the bound
// is its own resident-memory limit, 4 GiB as well.
#ifdef __SANITIZE_ADDRESS__
const char* const kMemoryBound = "export ASAN_OPTIONS=\"$ASAN_OPTIONS:hard_rss_limit_mb=4096\"; ";
#else
const char* const kMemoryBound = "ulimit -v 4194304; ";
#endif

const char* const kTinyPreset = R"({"model": {"d_model": 32, "n_layers": 1, "n_heads": 2,
    "seq_len": 32}, "schedule": {"steps": 12, "warmup_steps": 2}, "data": {"batch_size": 4},
    "probes": {"every": 4}, "eval": {"every": 0, "batches": 1}})";

class CliFilesTest : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/qklab-files-XXXXXX";
        m_dir = mkdtemp(tmpl);
        m_db = m_dir + "/runs.db";
        m_fifo = m_dir + "/pipe.json";
        ASSERT_EQ(mkfifo(m_fifo.c_str(), 0600), 0);
        m_preset = m_dir + "/tiny.json";
        std::ofstream(m_preset) << kTinyPreset;
    }
    void TearDown() override { fs::remove_all(m_dir); }

    // Bounded: a command that blocks on a FIFO is killed after 60 s (exit 124), and one that
    // reads /dev/zero into memory is stopped at 4 GiB (kMemoryBound), so a regression fails
    // this test instead of hanging it or taking the machine's memory.
    Result cli(const std::string& args) {
        return runCli(args + " </dev/null", m_dir + "/stderr.txt");
    }
    Result bounded(const std::string& args) {
        const std::string cmd =
            "bash -c " + sq(std::string(kMemoryBound) + "exec timeout -s KILL 60 " +
                            std::string(qklab::testpaths::cliPath()) + " " + args + " </dev/null");
        const std::string err = m_dir + "/stderr.txt";
        Result r;
        FILE* p = popen((cmd + " 2>" + err).c_str(), "r");
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
        r.status = WEXITSTATUS(pclose(p));
        std::ifstream e(err);
        r.err.assign(std::istreambuf_iterator<char>(e), {});
        return r;
    }
    std::string write(const std::string& name, const std::string& text) {
        std::ofstream(m_dir + "/" + name, std::ios::trunc) << text;
        return m_dir + "/" + name;
    }

    std::string m_dir, m_db, m_fifo, m_preset;
};

}  // namespace

// ---- item 11: special files ------------------------------------------------------------------

TEST_F(CliFilesTest, RunSweepAndLessonRefuseSpecialFiles) {
    const std::string sweepWithBase =
        write("base.json", R"({"base": "/dev/zero", "axes": {"optim.lr": [0.01]}})");
    const std::string sweepWithFifoBase =
        write("fifobase.json", R"({"base": ")" + m_fifo + R"(", "axes": {"optim.lr": [0.01]}})");
    struct Case {
        std::string args, needle;
    };
    const std::vector<Case> cases = {
        {"run /dev/zero", "character device"},
        {"run " + sq(m_fifo), "FIFO"},
        {"run " + sq(m_dir), "directory"},
        {"sweep /dev/zero", "character device"},
        {"sweep " + sq(m_fifo), "FIFO"},
        {"sweep " + sq(sweepWithBase), "character device"},
        {"sweep " + sq(sweepWithFifoBase), "FIFO"},
        {"sweep " + sq(sweepWithBase) + " --slurm " + sq(m_dir + "/out"), "character device"},
        {"sweep-point --definition " + sq(m_fifo) + " --point 0", "FIFO"},
    };
    for (const Case& c : cases) {
        const Result r = bounded(c.args + " --db " + sq(m_db));
        EXPECT_EQ(r.status, 2) << c.args << ": " << r.err;
        EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << ": " << r.err;
        EXPECT_NE(r.err.find("not a regular"), std::string::npos) << c.args << ": " << r.err;
    }
    for (const Case& c : std::vector<Case>{{"lesson /dev/zero", "character device"},
                                           {"lesson " + sq(m_fifo), "FIFO"}}) {
        const Result r = bounded(c.args);
        EXPECT_EQ(r.status, 2) << c.args << ": " << r.err;
        EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << ": " << r.err;
        EXPECT_NE(r.err.find("not a regular"), std::string::npos) << c.args << ": " << r.err;
    }
    EXPECT_FALSE(fs::exists(m_db));  // nothing was stored
    EXPECT_FALSE(fs::exists(m_dir + "/out"));
}

TEST_F(CliFilesTest, FilesOverTheLimitAreRefusedUnread) {
    // Sparse: 4 MiB + 1 byte of nothing, refused from its size.
    const std::string big = m_dir + "/big.json";
    std::ofstream(big).put('{');
    fs::resize_file(big, (uintmax_t(4) << 20) + 1);
    for (const std::string& cmd : {"run " + sq(big) + " --db " + sq(m_db),
                                   "sweep " + sq(big) + " --db " + sq(m_db), "lesson " + sq(big)}) {
        const Result r = bounded(cmd);
        EXPECT_EQ(r.status, 2) << cmd << ": " << r.err;
        EXPECT_NE(r.err.find("the limit is 4 MiB"), std::string::npos) << cmd << ": " << r.err;
    }
    EXPECT_FALSE(fs::exists(m_db));
    // --help states it.
    EXPECT_NE(cli("run --help").out.find("4 MiB"), std::string::npos);
    EXPECT_NE(cli("lesson --help").out.find("4 MiB"), std::string::npos);
}

TEST_F(CliFilesTest, DatabasesThatAreNoRegularFilesAreRefusedBeforeSqliteOpensThem) {
    for (const std::string& cmd :
         {"list --db " + sq(m_fifo), "sweeps --db " + sq(m_fifo),
          std::string("list --db /dev/zero"), "run " + sq(m_preset) + " --db " + sq(m_fifo),
          "run " + sq(m_preset) + " --db " + sq(m_dir),
          "merge " + sq(m_fifo) + " --into " + sq(m_db), "merge /dev/zero --into " + sq(m_db),
          "import " + sq(m_fifo) + " --db " + sq(m_db)}) {
        const Result r = bounded(cmd);
        EXPECT_EQ(r.status, 2) << cmd << ": " << r.err;
        EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << cmd << ": " << r.err;
    }
}

// `export -o FIFO` blocked in the check whether the target is a SQLite file.
TEST_F(CliFilesTest, ExportRefusesAnOutputThatIsNoRegularFile) {
    ASSERT_EQ(cli("run " + sq(m_preset) + " --db " + sq(m_db) + " --name tiny").status, 0);
    for (const std::string& target : {m_fifo, m_dir}) {
        const Result r = bounded("export tiny --db " + sq(m_db) + " -o " + sq(target));
        EXPECT_EQ(r.status, 2) << target << ": " << r.err;
        EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
    }
    EXPECT_TRUE(fs::is_fifo(m_fifo));  // left as it was
}

// ---- item 12: the lesson checker refuses what the app cannot play ----------------------------

namespace {

// One step of a lesson around `step` (a JSON object), after a harmless first step.
std::string lessonWith(const std::string& step) {
    return R"({"title": "t", "steps": [{"text": "intro"}, )" + step + "]}";
}

}  // namespace

TEST_F(CliFilesTest, LessonCheckRefusesWhatTheAppCannotPlay) {
    struct Case {
        std::string step, field;
    };
    const std::string start = R"({"title": "S", "text": "x", "action": {"kind": "start_preset", )";
    const std::vector<Case> cases = {
        {start + R"("preset": "no-such-preset.json"}})", "action.preset"},
        {start + R"("preset": "/dev/zero"}})", "action.preset"},
        {start + R"("preset": ")" + m_fifo + R"("}})", "action.preset"},
        {start + R"("preset": "default", "set": {"optim.lrr": 1}}})", "action.set"},
        {start + R"("preset": "default", "set": {"optim.lr": "fast"}}})", "action.set.optim.lr"},
        {start + R"("preset": "default", "set": {"model.n_heads": 7}}})", "model.n_heads"},
        {start + R"("preset": "default", "name": "a\nb"}})", "action.name"},
        {R"({"title": "S", "text": "x", "action": {"kind": "compare", "runs": ["one"]}})",
         "action.runs"},
        {R"({"title": "S", "text": "x", "action": {"kind": "compare", "runs": [)" +
             std::string(R"("r", )") + R"("r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r",
             "r", "r", "r", "r", "r", "r", "r", "r"]}})",
         "action.runs"},
        {R"({"title": "S", "text": "x", "action": {"kind": "compare", "runs": [1, 2]}})",
         "action.runs"},
        {R"({"title": "S", "text": "x", "action": {"kind": "replay", "run": "r",
             "steps_per_second": -5}})",
         "action.steps_per_second"},
        {R"({"title": "S", "text": "x", "layer": 2147483648})", "layer"},
        {R"({"title": "S", "text": "x", "head": 18446744073709551615})", "head"},
        {R"({"title": "S", "text": "x", "pause": [{"kind": "probe_above", "metric": "loss",
             "threshold": 1, "layer": 4294967296}]})",
         "pause[0].layer"},
        {R"({"title": "S", "text": "x", "action": {"kind": "open_run", "run": ""}})", "action.run"},
    };
    for (const Case& c : cases) {
        const std::string file = write("case.json", lessonWith(c.step));
        const Result r = bounded("lesson " + sq(file) + " --presets " +
                                 sq(qklab::testpaths::source("/experiments")));
        EXPECT_EQ(r.status, 2) << c.step << ": " << r.err;
        EXPECT_NE(r.err.find("step 2 (\"S\")"), std::string::npos) << c.step << ": " << r.err;
        EXPECT_NE(r.err.find(c.field), std::string::npos) << c.step << ": " << r.err;
    }
    // What the app can play passes: a shipped preset by name, with or without ".json", a "set"
    // that applies, 2 runs to compare.
    const std::string good = write(
        "good.json", lessonWith(start + R"("preset": "default.json", "set": {"schedule.steps": "40",
            "optim.lr": 0.01}}}, {"text": "y", "action": {"kind": "start_preset",
            "preset": "healthy_attention"}}, {"text": "z", "action": {"kind": "compare",
            "runs": ["a", "b"]}})"));
    const Result ok =
        cli("lesson " + sq(good) + " --presets " + sq(qklab::testpaths::source("/experiments")));
    EXPECT_EQ(ok.status, 0) << ok.err;
}

// Issue 37: a text that would need scrolling in the lesson column at 1024x768 is refused with
// the lesson, step, field and how far over it is; one that just fits passes.
TEST_F(CliFilesTest, LessonCheckRefusesATextOneLineOverTheColumn) {
    const auto items = [](int n) {  // n one-line list items: n lines of the budget
        std::string t;
        for (int i = 0; i < n; ++i) t += "- a\\n";
        return t;
    };
    const auto check = [&](int lines) {
        const std::string file =
            write("long.json", lessonWith(R"({"title": "S", "text": ")" + items(lines) + R"("})"));
        return cli("lesson " + sq(file));
    };
    const Result fits = check(qklab::kLessonColumnLines);
    EXPECT_EQ(fits.status, 0) << fits.err;
    const Result over = check(qklab::kLessonColumnLines + 1);
    EXPECT_EQ(over.status, 2);
    EXPECT_NE(over.err.find("long.json: step 2 (\"S\"): text: the text takes " +
                            std::to_string(qklab::kLessonColumnLines + 1) + " lines"),
              std::string::npos)
        << over.err;
    EXPECT_NE(over.err.find(": 1 line over"), std::string::npos) << over.err;
}

TEST_F(CliFilesTest, ShippedLessonsPassTheCheckWithTheShippedPresets) {
    std::string files;
    for (const auto& e : fs::directory_iterator(qklab::testpaths::source("/resources/lessons")))
        files += " " + sq(e.path().string());
    const Result r = cli("lesson" + files);  // the default folder: the source tree's presets
    EXPECT_EQ(r.status, 0) << r.err;
}

// ---- item 13: generate --threads -------------------------------------------------------------

TEST_F(CliFilesTest, GenerateThreadsAreBounded) {
    ASSERT_EQ(cli("run " + sq(m_preset) + " --name tiny --db " + sq(m_db)).status, 0);
    for (const char* threads : {"100000", "2147483648", "-1", "1025"}) {
        const Result r = bounded(std::string("generate tiny --tokens 4 --threads ") + threads +
                                 " --db " + sq(m_db));
        EXPECT_EQ(r.status, 2) << threads << ": " << r.err;
        EXPECT_NE(r.err.find("--threads"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("1024"), std::string::npos) << r.err;
    }
    // Above the cores but within the bound: capped, as run.threads, and said.
    const Result capped = bounded("generate tiny --tokens 4 --threads 1000 --db " + sq(m_db));
    EXPECT_EQ(capped.status, 0) << capped.err;
    if (std::thread::hardware_concurrency() < 1000) {
        EXPECT_NE(capped.err.find("warning: --threads = 1000 is more than"), std::string::npos)
            << capped.err;
    }
    EXPECT_EQ(capped.out.size(), 5u);  // 4 tokens and the final newline
}

// ---- item 17: resuming a sweep while a killed sweep's workers still stop ---------------------

namespace {

const char* const kSweep = R"({"base": {"model": {"d_model": 32, "n_layers": 1, "n_heads": 2,
    "seq_len": 32}, "schedule": {"steps": 8, "warmup_steps": 2}, "data": {"batch_size": 4},
    "probes": {"every": 4}, "eval": {"every": 0, "batches": 1}},
    "axes": {"optim.lr": [0.003, 0.01]}})";

// Stores the sweep "lr" as a killed sweep leaves it (stopped, no points run) and returns its id.
int64_t storeStoppedSweep(const std::string& db) {
    qklab::SweepDefinition d = qklab::parseSweep(kSweep, "lr.json");
    d.name = "lr";
    d.uuid = qklab::newUuid();
    qklab::RunStore store(db);
    qklab::SweepInfo s;
    s.uuid = d.uuid;
    s.name = d.name;
    s.definitionJson = qklab::sweepToJson(d).dump();
    s.points = 2;
    const int64_t id = store.addSweep(s);
    store.setSweepStatus(id, "stopped");
    return id;
}

// A worker of the killed sweep that is still stopping: a process that holds point 1's run as
// running until `release` is written to (or closed), then records it stopped, as a worker
// does when its parent's death signals it.
pid_t startLingeringWorker(const std::string& db, int64_t sweepId, int* release) {
    int ready[2], go[2];
    // Close-on-exec: the qklab-cli the test starts must not hold the worker's pipe open.
    if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) return -1;
    const pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        close(go[1]);
        {
            qklab::NewRun nr;
            nr.name = "lr/p1 (stopping)";
            nr.sweep = qklab::SweepMembership{sweepId, 1, R"({"optim.lr":0.01})"};
            nr.configJson = "{}";
            qklab::RunWriter w(db, nr);
            qklab::StepMetrics m;
            m.loss = 5;
            w.addStep(m);
            w.flush();
            if (write(ready[1], "r", 1) != 1) _exit(1);
            char c;
            while (read(go[0], &c, 1) < 0) {
            }
            w.finish(qklab::RunStatus::Stopped, "stopped by its sweep");
        }
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    char c = 0;
    if (read(ready[0], &c, 1) != 1) return -1;
    close(ready[0]);
    *release = go[1];
    return pid;
}

std::map<int64_t, qklab::RunInfo> latestByPoint(const std::string& db) {
    qklab::RunStore store(db, qklab::StoreAccess::ReadOnly);
    std::map<int64_t, qklab::RunInfo> out;
    for (const auto& r : store.sweepRuns(store.findSweep("lr").id)) out[r.sweep->point] = r;
    return out;
}

}  // namespace

// The resume waits for the point still running, then resumes it with the rest: every point
// ends finished. Before: the point was skipped and the sweep said "finished", exit 0, 1 not run.
TEST_F(CliFilesTest, SweepResumeWaitsForPointsAKilledSweepStillRuns) {
    const int64_t id = storeStoppedSweep(m_db);
    int release = -1;
    const pid_t worker = startLingeringWorker(m_db, id, &release);
    ASSERT_GT(worker, 0);
    // The worker stops once the resume has said it waits for it (a thread: the resume blocks
    // us). Not after a fixed time: a resume slow to start on a busy machine would find the
    // point stopped already and never wait. The resume's own --wait-running (120 s) bounds it.
    const std::string errFile = m_dir + "/stderr.txt";
    std::thread stopper([release, errFile] {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
        while (std::chrono::steady_clock::now() < deadline) {
            std::ifstream err(errFile);
            const std::string text((std::istreambuf_iterator<char>(err)), {});
            if (text.find("still running in another process") != std::string::npos) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        close(release);
    });
    const Result r = cli("sweep --resume lr --jobs 1 --db " + sq(m_db));
    stopper.join();
    waitpid(worker, nullptr, 0);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("still running in another process"), std::string::npos) << r.err;
    const auto latest = latestByPoint(m_db);
    ASSERT_EQ(latest.size(), 2u) << r.err;
    for (const auto& [point, run] : latest)
        EXPECT_EQ(run.status, qklab::RunStatus::Finished) << "point " << point << ": " << r.err;
    qklab::RunStore store(m_db, qklab::StoreAccess::ReadOnly);
    EXPECT_EQ(store.sweep(id).status, "finished");
}

// A point that is still running when the wait is over: the sweep is partial, exit 1, never
// "finished" with exit 0.
TEST_F(CliFilesTest, SweepResumeThatCannotRunEveryPointIsPartial) {
    const int64_t id = storeStoppedSweep(m_db);
    int release = -1;
    const pid_t worker = startLingeringWorker(m_db, id, &release);
    ASSERT_GT(worker, 0);
    const Result r = cli("sweep --resume lr --jobs 1 --wait-running 1 --db " + sq(m_db));
    close(release);
    waitpid(worker, nullptr, 0);
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("1 not run"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
    qklab::RunStore store(m_db, qklab::StoreAccess::ReadOnly);
    EXPECT_EQ(store.sweep(id).status, "partial");
    EXPECT_EQ(latestByPoint(m_db).at(0).status, qklab::RunStatus::Finished);
    // Once that point has stopped, a resume completes the sweep.
    const Result again = cli("sweep --resume lr --jobs 1 --db " + sq(m_db));
    EXPECT_EQ(again.status, 0) << again.err;
    EXPECT_EQ(latestByPoint(m_db).at(1).status, qklab::RunStatus::Finished);
}
