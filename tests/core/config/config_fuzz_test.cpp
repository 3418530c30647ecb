// config_fuzz_test.cpp — seeded mutations of the shipped presets, `--set` assignments and event
// lists: each case is either read (and then validates without a crash) or refused with a
// qklab::Error whose message is short text. Any other exception, or a crash, is a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include "qklab/config/events.h"
#include "qklab/config/run_config.h"
#include "qklab/util/error.h"
#include "support/test_paths.h"

using namespace qklab;
using nlohmann::json;

namespace {

constexpr uint32_t kSeed = 20240610;
constexpr int kPresetCases = 3000;
constexpr int kOverrideCases = 1500;
constexpr int kEventCases = 1500;

// Values that have broken a reader before: beyond a double or 64 bits, beyond float32, other
// types, huge.
std::vector<std::string> hostileValues() {
    std::istringstream words(
        "1e999 -1E400 18446744073709551615 9223372036854775808 -9223372036854775809 1e308 -1e308 "
        "3.5e38 1e-400 -0 0 -1 null true {} [] \"\" \"x\" 0.5 [0.9,0.95] \"rms\" \"none\" "
        "\"inv_sqrt_d\" 1e3 2.5 \"\\u0000\" \"\\ud800\"");
    std::vector<std::string> values{std::istream_iterator<std::string>(words), {}};
    values.push_back(std::string(400, '9'));
    return values;
}

class Mutator {
  public:
    explicit Mutator(uint32_t seed) : m_rng(seed) {}

    size_t below(size_t n) {
        return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(m_rng);
    }
    template <class T>
    T pick(const std::vector<T>& v) {
        return v[below(v.size())];
    }

    // One or two mutations of s.
    std::string mutate(std::string s) {
        const size_t n = 1 + below(2);
        for (size_t i = 0; i < n; ++i) mutateOnce(s);
        return s;
    }

  private:
    void mutateOnce(std::string& s) {
        const size_t at = below(s.size() + 1);
        switch (below(9)) {
            case 0:  // flip a bit, or write any byte
                if (!s.empty()) s[std::min(at, s.size() - 1)] ^= char(1u << below(8));
                break;
            case 1:  // delete a range
                s.erase(at, 1 + below(16));
                break;
            case 2: {  // duplicate a range (a key, a value, half an object)
                const std::string part = s.substr(below(s.size() + 1), 1 + below(40));
                s.insert(at, part);
                break;
            }
            case 3: {  // deep brackets, balanced or not
                const size_t depth = pick(std::vector<size_t>{10, 63, 64, 65, 100, 5000, 100000});
                const char open = below(2) ? '[' : '{';
                std::string deep(depth, open);
                if (below(2))
                    deep += (open == '[' ? "1" : "") + std::string(depth, open == '[' ? ']' : '}');
                s.insert(at, deep);
                break;
            }
            case 4:  // a hostile value in place of a number or after a colon
                replaceValue(s, pick(m_hostile));
                break;
            case 5: {  // a huge string or key, sometimes unterminated
                const std::string huge(1000 + below(100000), char('a' + below(26)));
                s.insert(at, "\"" + huge + (below(2) ? "\"" : ""));
                break;
            }
            case 6:  // a structural character
                s.insert(at, 1, "{}[]:,\"\\ "[below(9)]);
                break;
            case 7:  // a value of another type
                replaceValue(s, pick(std::vector<std::string>{"null", "true", "{}", "[]", "\"x\"",
                                                              "0.5", "-1", "[1,2]", "{\"a\":1}"}));
                break;
            default:  // a high byte, which is not UTF-8 on its own
                s.insert(at, 1, char(0x80 + below(128)));
        }
    }

    // Replaces the value after a random colon (else from the first digit on) by `value`.
    void replaceValue(std::string& s, const std::string& value) {
        size_t start = s.find(':', below(s.size() + 1));
        if (start == std::string::npos) start = s.find_first_of("0123456789");
        if (start == std::string::npos) {
            s += value;
            return;
        }
        if (s[start] == ':') ++start;
        const size_t end = std::min(s.find_first_of(",}]", start), s.size());
        s.replace(start, end - start, value);
    }

    std::mt19937 m_rng;
    const std::vector<std::string> m_hostile = hostileValues();
};

struct Tally {
    int accepted = 0, refused = 0;
};

// Runs one case: success, or a qklab::Error with a short UTF-8 message.
template <class F>
void expectReadOrError(const std::string& input, Tally& tally, F&& f) {
    const auto shown = [&] {
        return json(input.substr(0, 200)).dump(-1, ' ', true, json::error_handler_t::replace);
    };
    try {
        f();
        ++tally.accepted;
    } catch (const Error& e) {
        ++tally.refused;
        const std::string msg = e.what();
        EXPECT_LT(msg.size(), 1000u) << "unbounded message for " << shown();
        EXPECT_NO_THROW(json(msg).dump()) << "message is not UTF-8 for " << shown();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not a qklab::Error: " << e.what() << "\ninput: " << shown();
    }
}

// What a reader of a config does next; none of it may throw anything but Error.
void useConfig(const RunConfig& c) {
    const auto problems = validationProblems(c);
    if (problems.empty()) {
        validate(c);
        configWarnings(c);
        configToJson(c).dump();
        c.maxSeqLen();
    }
}

std::vector<std::string> presetTexts() {
    std::vector<std::string> texts;
    for (const auto& entry :
         std::filesystem::directory_iterator(qklab::testpaths::source("/experiments"))) {
        if (entry.path().extension() != ".json") continue;
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        texts.push_back(ss.str());
    }
    std::sort(texts.begin(), texts.end());  // directory order is not deterministic
    return texts;
}

// A config holding one event of every kind.
std::string eventListText() {
    json all = json::array();
    for (const auto& k : eventKinds()) all.push_back(k.example);
    return json{{"schedule", {{"steps", 1000}}}, {"events", all}}.dump();
}

}  // namespace

TEST(ConfigFuzz, MutatedPresetsAreReadOrRefusedWithAnError) {
    const auto seeds = presetTexts();
    ASSERT_GE(seeds.size(), 5u);
    Mutator m(kSeed);
    Tally tally;
    for (int i = 0; i < kPresetCases; ++i) {
        const std::string text = m.mutate(m.pick(seeds));
        const bool checkValues = i % 2 == 0;
        expectReadOrError(text, tally,
                          [&] { useConfig(configFromJsonText(text, "fuzz", checkValues)); });
    }
    EXPECT_GT(tally.refused, 0);
    EXPECT_GT(tally.accepted, 0);  // some mutations keep a preset valid
    std::cout << "presets: " << tally.accepted << " read, " << tally.refused << " refused\n";
}

TEST(ConfigFuzz, MutatedOverridesAreAppliedOrRefusedWithAnError) {
    std::vector<std::string> seeds;
    const RunConfig defaults;
    for (const auto& f : configFields()) seeds.push_back(f.key + "=" + f.get(defaults).dump());
    for (const auto& k : eventKinds()) seeds.push_back("events=[" + k.example.dump() + "]");
    Mutator m(kSeed + 1);
    Tally tally;
    for (int i = 0; i < kOverrideCases; ++i) {
        std::string assignment = m.pick(seeds);
        // Mostly the value, sometimes the whole assignment (key, '=' and all).
        if (i % 4 == 0) {
            assignment = m.mutate(assignment);
        } else {
            const size_t eq = assignment.find('=');
            assignment = assignment.substr(0, eq + 1) + m.mutate(assignment.substr(eq + 1));
        }
        expectReadOrError(assignment, tally, [&] {
            RunConfig c;
            applyOverride(c, assignment);
            useConfig(c);
        });
    }
    EXPECT_GT(tally.refused, 0);
    EXPECT_GT(tally.accepted, 0);
    std::cout << "overrides: " << tally.accepted << " applied, " << tally.refused << " refused\n";
}

TEST(ConfigFuzz, MutatedEventsAreReadOrRefusedWithAnError) {
    const std::string list = eventListText();
    Mutator m(kSeed + 2);
    Tally tally;
    for (int i = 0; i < kEventCases; ++i) {
        const EventKindInfo& k = eventKinds()[m.below(eventKinds().size())];
        if (i % 3 == 0) {  // a list of events in a preset
            const std::string text = m.mutate(list);
            expectReadOrError(text, tally, [&] { useConfig(configFromJsonText(text, "fuzz")); });
        } else if (i % 3 == 1) {  // a stored row: qklab parses the parameters text
            const Event example = eventFromJson(k.example, k.name);
            const std::string params = m.mutate(eventParamsJson(example).dump());
            const std::string kind = i % 10 == 1 ? m.mutate(k.name) : k.name;
            expectReadOrError(params, tally, [&] {
                const Event e = eventFromRecord(i, kind, params, i % 2 ? "config" : "user");
                eventToJson(e).dump();
                eventLabel(kind, params);
            });
        } else {  // JSON parsed elsewhere (nlohmann's own parser, no limits) and handed in
            const std::string text = m.mutate(k.example.dump());
            const json j = json::parse(text, nullptr, false);
            if (j.is_discarded()) continue;
            expectReadOrError(text, tally, [&] {
                RunConfig c;
                c.schedule.steps = 1000;
                c.events.push_back(eventFromJson(j, "fuzz"));
                useConfig(c);
                eventText(c.events.back());
                eventKindInfo(c.events.back().kind).label(c.events.back().args);
            });
        }
    }
    EXPECT_GT(tally.refused, 0);
    EXPECT_GT(tally.accepted, 0);
    std::cout << "events: " << tally.accepted << " read, " << tally.refused << " refused\n";
}
