// input_fuzz_test.cpp — seeded mutations of the shipped sweep files and lessons (issue 22):
// deep nesting, huge and odd numbers, wrong types, special paths (/dev/zero, a FIFO, a folder),
// control characters, long strings and arrays, missing and unknown keys, cut and flipped bytes.
// Each mutant is read the way qklab reads it and must be accepted or refused with a
// qklab::Error (exit 2 through qklab-cli) — never a crash, another exception or a hang. Runs in
// seconds; the seed is fixed, so a failure names a mutant that can be replayed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "qklab/analysis/lesson.h"
#include "qklab/config/sweep.h"
#include "qklab/util/error.h"
#include "qklab/util/input_file.h"
#include "support/cli_run.h"
#include "support/test_files.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string sq(const std::string& s) {
    return qklab::testsupport::shellWord(s);
}

using qklab::testsupport::readAll;

// Mutates JSON documents; `special` are paths of files no reader may open for long.
class Mutator {
  public:
    Mutator(uint64_t seed, std::vector<std::string> special)
        : m_rng(seed), m_special(std::move(special)) {}

    // One mutant of `doc` as file text, and what was done (for the failure message).
    std::pair<std::string, std::string> mutate(json doc) {
        const int n = pick(2) ? 1 : 2 + int(pick(3));  // mostly one change: more get far
        std::string what;
        for (int i = 0; i < n; ++i) what += treeMutation(doc) + "; ";
        std::string text = doc.dump(pick(2) ? 2 : -1, ' ', false, json::error_handler_t::replace);
        if (pick(5) == 0) what += textMutation(text);
        return {text, what};
    }

  private:
    size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(m_rng); }

    static void nodes(json& j, std::vector<json*>& out) {
        out.push_back(&j);
        if (j.is_structured())
            for (auto& child : j) nodes(child, out);
    }

    json oddValue() {
        static const std::vector<json> odd = {nullptr,
                                              true,
                                              0,
                                              -1,
                                              3.5,
                                              "text",
                                              json::array(),
                                              json::object(),
                                              {1, 2},
                                              json::parse(R"({"k": 1})"),
                                              1e308,
                                              -1e308,
                                              9223372036854775807LL,
                                              json(18446744073709551615ULL),
                                              json(-9223372036854775807LL - 1),
                                              1e-320,
                                              2147483648LL,
                                              4294967296LL,
                                              "",
                                              "a\nb",
                                              "\r",
                                              std::string("nul\0x", 5),
                                              "\x1b[2J",
                                              "tab\there",
                                              "\xff\xfe",
                                              "../../../../etc/passwd",
                                              "%s%n",
                                              "$(touch PWNED)"};
        switch (pick(5)) {
            case 0: {  // nesting beyond the parser's limit
                json v = 1;
                for (int d = 0; d < 40 + int(pick(60)); ++d) v = json::array({v});
                return v;
            }
            case 1:
                return std::string(1 + pick(200000), "ax\n"[pick(3)]);
            case 2:
                return m_special[pick(m_special.size())];
            case 3: {
                json a = json::array();
                for (size_t i = 0, n = 1 + pick(20000); i < n; ++i) a.push_back(i % 7);
                return a;
            }
            default:
                return odd[pick(odd.size())];
        }
    }

    std::string treeMutation(json& doc) {
        std::vector<json*> all;
        nodes(doc, all);
        json& node = *all[pick(all.size())];
        if (node.is_object() && !node.empty() && pick(3) == 0) {
            auto it = std::next(node.begin(), static_cast<long>(pick(node.size())));
            const std::string key = it.key();
            node.erase(key);
            return "removed \"" + key + "\"";
        }
        if (node.is_object() && pick(3) == 0) {
            const std::string key = pick(2) ? "unknown_key" : "layer";
            node[key] = oddValue();
            return "added \"" + key + "\"";
        }
        node = oddValue();
        return "replaced a value with " +
               node.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 60);
    }

    std::string textMutation(std::string& text) {
        if (text.empty()) return "";
        const size_t at = pick(text.size());
        switch (pick(3)) {
            case 0:
                text.resize(at);
                return "cut at " + std::to_string(at);
            case 1:
                text[at] = static_cast<char>(pick(256));
                return "flipped byte " + std::to_string(at);
            default:
                text.insert(at, "\"dup\": 1, \"dup\": 2, ");
                return "inserted duplicate keys at " + std::to_string(at);
        }
    }

    std::mt19937_64 m_rng;
    std::vector<std::string> m_special;
};

// A scratch folder with a FIFO and a copy of experiments/ (a sweep's "base" is found next to it).
class FuzzTest : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/qklab-fuzz-XXXXXX";
        m_dir = mkdtemp(tmpl);
        fs::copy(qklab::testpaths::source("/experiments"), m_dir + "/experiments",
                 fs::copy_options::recursive);
        ASSERT_EQ(mkfifo((m_dir + "/fifo.json").c_str(), 0600), 0);
        m_special = {"/dev/zero",  m_dir + "/fifo.json", m_dir,
                     "/dev/stdin", "/proc/self/mem",     "/dev/null"};
    }
    void TearDown() override { fs::remove_all(m_dir); }

    static std::vector<json> documents(const std::vector<fs::path>& files) {
        std::vector<json> out;
        for (const auto& f : files) out.push_back(json::parse(readAll(f)));
        return out;
    }

    // Runs `read` on every mutant: accepted, or an Error; anything else fails with the mutant.
    void fuzz(const std::vector<json>& docs, const std::string& file, int count, uint64_t seed,
              const std::function<void(const std::string&)>& read) {
        Mutator m(seed, m_special);
        int accepted = 0, refused = 0;
        for (int i = 0; i < count; ++i) {
            auto [text, what] = m.mutate(docs[size_t(i) % docs.size()]);
            std::ofstream(file, std::ios::trunc | std::ios::binary) << text;
            try {
                read(file);
                ++accepted;
            } catch (const qklab::Error&) {
                ++refused;
            } catch (const std::exception& e) {
                ADD_FAILURE() << "mutant " << i << " (" << what
                              << "): not a qklab::Error: " << e.what();
            }
        }
        // Both outcomes occur: the mutants are neither all harmless nor all garbage.
        EXPECT_GT(accepted, 0);
        EXPECT_GT(refused, count / 4);
        std::cout << count << " mutants: " << accepted << " accepted, " << refused << " refused\n";
    }

    std::vector<fs::path> filesIn(const std::string& dir) {
        std::vector<fs::path> out;
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().extension() == ".json") out.push_back(e.path());
        std::sort(out.begin(), out.end());
        return out;
    }

    std::string m_dir;
    std::vector<std::string> m_special;
};

Result cliStatus(const std::string& cmd, const std::string& err) {
    return runCli(cmd, err);
}

class SweepFileFuzz : public FuzzTest {};
class LessonFileFuzz : public FuzzTest {};

}  // namespace

TEST_F(SweepFileFuzz, MutantsAreAcceptedOrRefusedWithAnError) {
    const auto docs = documents(filesIn(m_dir + "/experiments/sweeps"));
    ASSERT_FALSE(docs.empty());
    fuzz(docs, m_dir + "/experiments/sweeps/mutant.json", 2000, 22, [](const std::string& path) {
        qklab::SweepDefinition d = qklab::loadSweepFile(path);
        qklab::checkSweepName(d.name);
        const auto points = qklab::expandSweep(d);
        // The stored form reads back to the same grid.
        EXPECT_EQ(qklab::parseSweep(qklab::sweepToJson(d).dump(), "stored").pointCount(),
                  points.size());
    });
}

TEST_F(LessonFileFuzz, MutantsAreAcceptedOrRefusedWithAnError) {
    std::vector<fs::path> files = filesIn(qklab::testpaths::source("/resources/lessons"));
    files.push_back(qklab::testpaths::source("/tests/app/gui/lesson_test.json"));
    const auto docs = documents(files);
    const std::vector<std::string> dirs = {m_dir + "/experiments"};
    const qklab::LessonPresetLookup presets = [&dirs](const std::string& name) {
        const std::string path = qklab::resolveLessonPreset(name, dirs, [](const std::string& p) {
            std::error_code ec;
            return fs::exists(p, ec);
        });
        return path.empty()
                   ? std::nullopt
                   : std::optional<std::string>(qklab::readInputFile(path, qklab::kPresetFile));
    };
    fuzz(docs, m_dir + "/mutant-lesson.json", 2000, 23, [&presets](const std::string& path) {
        qklab::parsePlayableLesson(qklab::readInputFile(path, qklab::kLessonFile), path, presets);
    });
}

// Through qklab-cli: every mutant exits 0 or 2 (no crash: 139; no hang: the 60 s kill, 137).
TEST_F(SweepFileFuzz, ThroughTheCliEveryMutantExitsZeroOrTwo) {
    const auto docs = documents(filesIn(m_dir + "/experiments/sweeps"));
    Mutator m(2201, m_special);
    for (int i = 0; i < 8; ++i) {
        auto [text, what] = m.mutate(docs[size_t(i) % docs.size()]);
        const std::string file = m_dir + "/experiments/sweeps/cli-mutant.json";
        std::ofstream(file, std::ios::trunc | std::ios::binary) << text;
        const std::string out = m_dir + "/slurm-" + std::to_string(i);
        const Result r = cliStatus(
            "bash -c " + sq("exec timeout -s KILL 60 " + std::string(qklab::testpaths::cliPath()) +
                            " sweep " + sq(file) + " --slurm " + sq(out) + " </dev/null"),
            m_dir + "/stderr.txt");
        EXPECT_TRUE(r.status == 0 || r.status == 2)
            << "mutant " << i << " (" << what << "): exit " << r.status << ": " << r.err;
        if (r.status == 0) {
            EXPECT_EQ(std::system(("bash -n " + sq(out + "/sweep.sbatch")).c_str()), 0);
        } else
            EXPECT_FALSE(fs::exists(out));
    }
}

TEST_F(LessonFileFuzz, ThroughTheCliEveryMutantExitsZeroOrTwo) {
    std::vector<fs::path> files = filesIn(qklab::testpaths::source("/resources/lessons"));
    const auto docs = documents(files);
    Mutator m(2202, m_special);
    for (int i = 0; i < 8; ++i) {
        auto [text, what] = m.mutate(docs[size_t(i) % docs.size()]);
        const std::string file = m_dir + "/cli-lesson.json";
        std::ofstream(file, std::ios::trunc | std::ios::binary) << text;
        const Result r = cliStatus(
            "bash -c " + sq("exec timeout -s KILL 60 " + std::string(qklab::testpaths::cliPath()) +
                            " lesson " + sq(file) + " --presets " + sq(m_dir + "/experiments") +
                            " </dev/null"),
            m_dir + "/stderr.txt");
        EXPECT_TRUE(r.status == 0 || r.status == 2)
            << "mutant " << i << " (" << what << "): exit " << r.status << ": " << r.err;
    }
}
