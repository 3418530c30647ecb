// names_test.cpp — one name rule (qklab/config/names.h) for every name that enters a database, and
// the user config that a Python run stores (issue 36, items 2 and 8).
//
// A run named with a C1 control (U+009B, a one-character CSI) was written by `run --name` and
// `sweep --name`, and a custom scalar with one by the Python package, but import refused the
// file: such a database, or every shard of a sweep, could never be merged. A user config with
// Python's bare NaN / Infinity was stored and then broke show, export and import.
#include "qklab/config/names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "qklab/store/run_export.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"
#include "support/hostile_db.h"

using namespace qklab;
using namespace hostile;

namespace {

// The message of checkRunName(name), "" when it accepts the name.
std::string ruleError(const std::string& name) {
    try {
        checkRunName(name);
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidRequest) << e.what();
        return e.what();
    }
    return "";
}

// Names the rule must refuse, with the character it must name.
const std::vector<std::pair<std::string, std::string>> kRefused = {
    {"a\xC2\x9B"
     "2J",
     "U+009B (a control character) at byte 1"},
    {"\xC2\x80x", "U+0080 (a control character) at byte 0"},
    {"x\xC2\x9F", "U+009F (a control character) at byte 1"},
    {"x\x1B[2J", "U+001B (a control character) at byte 1"},
    {"del\x7F", "U+007F (a control character) at byte 3"},
    {"txt.\xE2\x80\xAE"
     "exe",
     "U+202E (a bidi control) at byte 4"},
    {"\xE2\x80\xAA", "U+202A (a bidi control) at byte 0"},
    {"\xE2\x81\xA6x", "U+2066 (a bidi control) at byte 0"},
    {"\xE2\x81\xA9", "U+2069 (a bidi control) at byte 0"},
    {"\xE2\x80\x8E", "U+200E (a bidi control) at byte 0"},
    {"\xE2\x80\x8F", "U+200F (a bidi control) at byte 0"},
    {"\xD8\x9C", "U+061C (a bidi control) at byte 0"},
    {"a\xFF", "byte 0xFF (not UTF-8) at byte 1"},
    {"\xC0\xAF", "byte 0xC0 (not UTF-8) at byte 0"},      // an overlong '/'
    {"\xED\xA0\x80", "byte 0xED (not UTF-8) at byte 0"},  // a surrogate
};

// Names it must accept: the neighbours of every refused range, and ordinary Unicode.
const std::vector<std::string> kAccepted = {
    "lr sweep (v2)",
    "\xC2\xA0nbsp",              // U+00A0, just past C1
    "caf\xC3\xA9",               // é
    "\xE6\x97\xA5\xE6\x9C\xAC",  // 日本
    "\xE2\x80\x8D",              // U+200D (zero-width joiner), between the two marks and LRE
    "\xE2\x80\xAF",              // U+202F, just past RLO
    "\xE2\x81\xA5\xE2\x81\xAA",  // U+2065 and U+206A, either side of the isolates
    "\xF0\x9F\x98\x80",          // an emoji (4 bytes)
    std::string(200, 'x'),
};

// A hex literal for SQLite: the exact bytes of s as text, whatever they are.
std::string sqlText(const std::string& s) {
    static const char* digits = "0123456789ABCDEF";
    std::string hex;
    for (unsigned char c : s) hex += std::string{digits[c >> 4], digits[c & 15]};
    return "CAST(X'" + hex + "' AS TEXT)";
}

bool imports(const std::string& from, const std::string& into) {
    RunStore store(into);
    try {
        store.importRuns(from);
        return true;
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::NotQklabDatabase) << e.what();
        return false;
    }
}

}  // namespace

TEST(NameRule, RefusesControlsBidiControlsAndBadUtf8NamingTheCharacterEscaped) {
    for (const auto& [name, what] : kRefused) {
        const std::string msg = ruleError(name);
        EXPECT_NE(msg.find("a run name cannot hold"), std::string::npos) << msg;
        EXPECT_NE(msg.find("holds " + what), std::string::npos) << msg;
        // The message is printed on a terminal: the refused bytes appear only as \xNN.
        EXPECT_EQ(msg.find(name), std::string::npos) << msg;
        for (const std::string raw : {"\x1B", "\x7F", "\xC2\x9B", "\xE2\x80\xAE", "\xFF"})
            EXPECT_EQ(msg.find(raw), std::string::npos) << msg;
    }
    EXPECT_NE(ruleError(kRefused[0].first).find("'a\\xC2\\x9B2J'"), std::string::npos);
    EXPECT_NE(ruleError(std::string(201, 'x')).find("at most 200 bytes"), std::string::npos);
    EXPECT_NE(ruleError("").find("cannot be empty"), std::string::npos);
    EXPECT_THROW(checkScalarName("a\xC2\x9B"
                                 "2J"),
                 Error);
}

TEST(NameRule, AcceptsOtherUnicodeUpTo200Bytes) {
    for (const std::string& name : kAccepted) {
        EXPECT_EQ(ruleError(name), "") << name;
        EXPECT_NO_THROW(checkScalarName(name)) << name;
    }
}

// The invariant of the issue: whatever a file's run, sweep and custom scalar names, it imports
// (an older qklab wrote names this rule refuses: a database, or the shards of a sweep that
// already ran, must still merge); a name the rule accepts is stored as it is, any other under
// the rule (its refused bytes as \xNN), and the import says so.
TEST(NameRule, ImportStoresEveryNameUnderTheRule) {
    std::vector<std::string> names = kAccepted;
    for (const auto& [name, what] : kRefused) names.push_back(name);
    names.push_back(std::string(300, 'y'));  // longer than the rule's 200 bytes
    TempDir d;
    int k = 0;
    for (const std::string& name : names) {
        const std::string under = nameUnderTheRule(name);
        EXPECT_NO_THROW(checkRunName(under)) << sqlText(name);
        bool accepted = true;
        try {
            checkRunName(name);
        } catch (const Error&) {
            accepted = false;
        }
        EXPECT_EQ(under == name, accepted) << sqlText(name);
        for (const std::string column : {"runs.name", "custom_scalars.name"}) {
            const std::string shard = d / ("shard" + std::to_string(++k) + ".db");
            const std::string into = d / ("into" + std::to_string(k) + ".db");
            writeRun(shard, "plain", RunStatus::Finished, 2, false);
            const bool run = column == "runs.name";
            const std::string sql =
                run ? "UPDATE runs SET name = " + sqlText(name)
                    : "INSERT INTO custom_scalars VALUES(1, " + sqlText(name) + ", 0, 1.5)";
            ASSERT_TRUE(rawExec(shard, sql)) << sql;
            RunStore store(into);
            const ImportResult r = store.importRuns(shard);
            EXPECT_EQ(r.imported, 1) << sqlText(name);
            EXPECT_EQ(r.renamed.empty(), accepted) << sqlText(name);
            const std::string stored =
                rawText(into, run ? "SELECT name FROM runs" : "SELECT name FROM custom_scalars");
            EXPECT_EQ(stored, under) << sqlText(name);
        }
    }
    EXPECT_EQ(nameUnderTheRule("a\xC2\x9B"
                               "2J"),
              "a\\xC2\\x9B2J");
    EXPECT_EQ(nameUnderTheRule(""), "unnamed");
}

// Item 8: Python's json writes NaN and Infinity bare, which no JSON reader reads.
TEST(UserConfig, NonFiniteNumbersAreStoredAsStringsEveryReaderReads) {
    const std::string python =
        R"({"clip": Infinity, "floor": -Infinity, "l": [NaN, 1.5], "s": "NaN \"Infinity\""})";
    const std::string stored =
        R"({"clip": "inf", "floor": "-inf", "l": ["nan", 1.5], "s": "NaN \"Infinity\""})";
    EXPECT_EQ(storedUserConfig(python), stored);
    EXPECT_EQ(storedUserConfig(stored), stored);
    EXPECT_EQ(storedUserConfig(""), "");
    for (const std::string bad : {"[1]", "{\"a\": nan}", "{", "{\"a\": 1e999}"})
        EXPECT_THROW(storedUserConfig(bad), Error) << bad;
    TempDir d;
    const std::string db = d / "runs.db";
    NewRun run;
    run.name = "external";
    run.userConfigJson = python;
    { RunWriter(db, run).finish(RunStatus::Finished); }
    EXPECT_EQ(rawText(db, "SELECT user_config FROM runs"), stored);
    RunStore store(db, StoreAccess::ReadOnly);
    const auto config = runExportJson(store, 1)["user_config"];
    EXPECT_EQ(config["clip"], "inf");
    EXPECT_EQ(config["l"][0], "nan");
    EXPECT_EQ(config["l"][1], 1.5);
}

// Rows that older packages wrote hold the bare tokens: show, export and import read them.
TEST(UserConfig, RowsWithBareNanAndInfinityFromOlderPackagesAreRead) {
    TempDir d;
    const std::string old = d / "old.db", into = d / "into.db";
    writeRun(old, "external", RunStatus::Finished, 2, false);
    ASSERT_TRUE(rawExec(old, R"(UPDATE runs SET source = 'python',
                                user_config = '{"clip": Infinity, "dropout": NaN, "lr": 0.1}')"));
    {
        RunStore store(old, StoreAccess::ReadOnly);
        const auto config = userConfigJson(store, 1);
        EXPECT_EQ(config, nlohmann::json::parse(R"({"clip": "inf", "dropout": "nan", "lr": 0.1})"));
    }
    ASSERT_TRUE(imports(old, into));
    RunStore store(into, StoreAccess::ReadOnly);
    EXPECT_EQ(runExportJson(store, 1)["user_config"]["clip"], "inf");
}
