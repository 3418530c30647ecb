// function_length_test.cpp — the rule "functions are at most 80 lines", checked over the source
// tree (core/ and app/ under the checkout). A function's length is the lines from its
// opening brace to the matching closing brace, both included: free functions, member functions
// defined out of line or in their class, constructors with their initialiser lists. Lambdas
// count in the function that holds them; class bodies, namespaces, enums and brace-initialised
// tables are not functions. Comments, string and character literals and preprocessor lines are
// blanked first, so braces inside them do not count.
//
// The scanner is a heuristic, not a C++ parser; the Scanner tests below hold it to the shapes
// this codebase uses. Add a shape there when the tree grows one it gets wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_paths.h"

namespace fs = std::filesystem;

namespace {

constexpr int kMaxFunctionLines = 80;

struct FunctionSpan {
    std::string name;  // as written at the definition: "main", "RunWriter::Impl::writeRows"
    int line = 0;      // of the opening brace (1-based)
    int lines = 0;     // opening to closing brace, both included
};

// ---- code only: comments, literals and preprocessor lines blanked, newlines kept ----------

// The index after a raw string literal starting at `i` (at the R of R"delim( ... )delim").
size_t skipRawString(const std::string& s, size_t i, std::string& out) {
    const size_t open = s.find('(', i + 2);
    if (open == std::string::npos) return i + 1;
    const std::string close = ")" + s.substr(i + 2, open - i - 2) + "\"";
    size_t end = s.find(close, open);
    end = end == std::string::npos ? s.size() : end + close.size();
    for (size_t k = i; k < end; ++k) out += s[k] == '\n' ? '\n' : ' ';
    return end;
}

// The index after a quoted literal (string or character) starting at `i`.
size_t skipQuoted(const std::string& s, size_t i, std::string& out) {
    const char quote = s[i];
    size_t k = i + 1;
    while (k < s.size() && s[k] != quote && s[k] != '\n') k += s[k] == '\\' ? 2 : 1;
    k = std::min(k + 1, s.size());
    out.append(k - i, ' ');
    return k;
}

// The index after a comment starting at `i` (// to the line's end, /* to */).
size_t skipComment(const std::string& s, size_t i, std::string& out) {
    const bool line = s[i + 1] == '/';
    size_t end = line ? s.find('\n', i) : s.find("*/", i + 2);
    end = end == std::string::npos ? s.size() : (line ? end : end + 2);
    for (size_t k = i; k < end; ++k) out += s[k] == '\n' ? '\n' : ' ';
    return end;
}

// The index after a preprocessor line starting at `i` (its continuations included).
size_t skipDirective(const std::string& s, size_t i, std::string& out) {
    size_t k = i;
    while (k < s.size() && !(s[k] == '\n' && s[k - 1] != '\\')) out += s[k++] == '\n' ? '\n' : ' ';
    return k;
}

bool startsLine(const std::string& s, size_t i) {
    size_t k = i;
    while (k > 0 && (s[k - 1] == ' ' || s[k - 1] == '\t')) --k;
    return k == 0 || s[k - 1] == '\n';
}

bool isIdentChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Whether the R at `i` starts a raw string: nothing of an identifier before it but an
// encoding prefix (u8R"(...)", LR"(...)").
bool rawStringPrefix(const std::string& s, size_t i) {
    size_t k = i;
    while (k > 0 && isIdentChar(s[k - 1])) --k;
    const std::string prefix = s.substr(k, i - k);
    return prefix.empty() || prefix == "u8" || prefix == "u" || prefix == "U" || prefix == "L";
}

std::string codeOnly(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const char c = s[i];
        const char next = i + 1 < s.size() ? s[i + 1] : '\0';
        if (c == '/' && (next == '/' || next == '*')) {
            i = skipComment(s, i, out);
        } else if (c == 'R' && next == '"' && rawStringPrefix(s, i)) {
            i = skipRawString(s, i, out);
        } else if (c == '"' || (c == '\'' && (i == 0 || !std::isxdigit(s[i - 1])))) {
            i = skipQuoted(s, i, out);  // not a digit separator as in 1'000'000
        } else if (c == '#' && startsLine(s, i)) {
            i = skipDirective(s, i, out);
        } else {
            out += c;
            ++i;
        }
    }
    return out;
}

// ---- what a `{` at namespace or class scope opens ------------------------------------------

enum class Opens { Scope, Function, MemberInit, Data };

std::string trim(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t\n");
    if (a == std::string::npos) return {};
    return s.substr(a, s.find_last_not_of(" \t\n") - a + 1);
}

// The head without what may precede a declaration at class or namespace scope: access
// specifiers (Qt's slots and signals too), a leading template <...>, attributes, and lines
// that are only a macro call (Q_OBJECT, Q_DECLARE_METATYPE(X)) before the last line.
std::string declarationOf(std::string head) {
    static const std::regex access(
        R"((\b(public|protected|private)(\s+(slots|Q_SLOTS))?|\bsignals|\bQ_SIGNALS)\s*:(?!:))");
    static const std::regex macroLine(R"(^\s*[A-Z][A-Z0-9_]*\s*(\([^()]*\))?\s*$)");
    static const std::regex attribute(R"(\[\[[^\]]*\]\])");
    head = std::regex_replace(head, access, " ");
    head = std::regex_replace(head, attribute, " ");
    std::istringstream in(head);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        if (!trim(line).empty()) lines.push_back(line);
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i)
        if (i + 1 == lines.size() || !std::regex_match(lines[i], macroLine)) out += lines[i] + "\n";
    out = trim(out);
    if (out.rfind("template", 0) == 0) {  // template <...> with nested angle brackets
        int depth = 0;
        for (size_t i = out.find('<'); i != std::string::npos && i < out.size(); ++i) {
            depth += out[i] == '<' ? 1 : out[i] == '>' ? -1 : 0;
            if (depth == 0) return trim(out.substr(i + 1));
        }
    }
    return out;
}

// Positions of the top-level parenthesised groups of `s`: (open, close) pairs.
std::vector<std::pair<size_t, size_t>> parenGroups(const std::string& s) {
    std::vector<std::pair<size_t, size_t>> groups;
    int depth = 0;
    size_t open = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '(' && depth++ == 0) open = i;
        if (s[i] == ')' && --depth == 0) groups.emplace_back(open, i);
    }
    return groups;
}

// Where a constructor's initialiser list starts (its ':'), or npos: a lone ':' at paren depth
// 0 after the parameter list.
size_t ctorInitColon(const std::string& decl) {
    const auto groups = parenGroups(decl);
    if (groups.empty()) return std::string::npos;
    int depth = 0;
    for (size_t i = groups.front().second + 1; i < decl.size(); ++i) {
        depth += decl[i] == '(' ? 1 : decl[i] == ')' ? -1 : 0;
        const bool lone =
            decl[i] == ':' && (i + 1 >= decl.size() || decl[i + 1] != ':') && decl[i - 1] != ':';
        if (depth == 0 && lone) return i;
    }
    return std::string::npos;
}

// Whether `decl` (no ctor-initialiser) ends like a function head: a parameter list, then only
// qualifiers or a trailing return type.
bool endsLikeFunctionHead(const std::string& decl) {
    static const std::regex tail(
        R"(^\s*((const|volatile|noexcept|override|final|mutable|try|&&|&)\s*)*(->[^;{}=]*)?$)");
    const auto groups = parenGroups(decl);
    if (groups.empty()) return false;
    return std::regex_match(decl.substr(groups.back().second + 1), tail);
}

bool hasTopLevelAssignment(const std::string& decl) {
    if (decl.find("operator") != std::string::npos) return false;
    int depth = 0;
    for (size_t i = 0; i < decl.size(); ++i) {
        depth += decl[i] == '(' || decl[i] == '[' ? 1 : decl[i] == ')' || decl[i] == ']' ? -1 : 0;
        if (depth == 0 && decl[i] == '=' && (i + 1 >= decl.size() || decl[i + 1] != '='))
            return true;
    }
    return false;
}

int parenDepth(const std::string& s) {
    int depth = 0;
    for (char c : s) depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    return depth;
}

Opens classify(const std::string& head) {
    static const std::regex scope(R"(^(inline\s+)?namespace\b|^extern\s*$)");
    static const std::regex type(R"(^(class|struct|union)\b)");
    const std::string decl = declarationOf(head);
    if (parenDepth(decl) > 0) return Opens::Data;  // a default argument's braces
    if (std::regex_search(decl, scope) || std::regex_search(decl, type)) return Opens::Scope;
    if (decl.rfind("enum", 0) == 0 || hasTopLevelAssignment(decl)) return Opens::Data;
    const size_t colon = ctorInitColon(decl);
    if (colon != std::string::npos) {
        const std::string before = trim(decl);
        const char last = before.empty() ? ' ' : before.back();
        // In an initialiser list a brace after a name (m_x{1}) initialises a member; the body
        // follows a complete initialiser, `)` or `}`.
        if (isIdentChar(last) || last == '>') return Opens::MemberInit;
        return endsLikeFunctionHead(decl.substr(0, colon)) ? Opens::Function : Opens::Data;
    }
    return endsLikeFunctionHead(decl) ? Opens::Function : Opens::Data;
}

// Template argument brackets open before `pos` (a `->` and operator< are no brackets).
int angleDepth(const std::string& s, size_t pos) {
    int depth = 0;
    for (size_t i = 0; i < pos; ++i) {
        if (s.compare(i, 8, "operator") == 0) {
            i += 8;
            while (i < pos && std::string("<>=!+-*/%&|^~[] ").find(s[i]) != std::string::npos) ++i;
            --i;
            continue;
        }
        depth += s[i] == '<' ? 1 : s[i] == '>' && (i == 0 || s[i - 1] != '-') ? -1 : 0;
    }
    return depth;
}

// The function's name as written: the qualified identifier before its parameter list, the
// first parenthesised group outside template arguments that follows a name other than an
// attribute or a specifier (std::function<void(int)> f(...), __attribute__((x)) void g()).
std::string functionName(const std::string& head) {
    static const std::regex name(
        R"(((?:[A-Za-z_~][\w]*\s*::\s*)*(?:operator\s*\S+?|~?[A-Za-z_]\w*))\s*$)");
    static const std::regex notAName(
        R"((^|::)(decltype|noexcept|alignas|__attribute__|operator)$)");
    std::string decl = declarationOf(head);
    if (const size_t colon = ctorInitColon(decl); colon != std::string::npos)
        decl = decl.substr(0, colon);
    for (const auto& [open, close] : parenGroups(decl)) {
        std::smatch m;
        const std::string before = decl.substr(0, open);
        if (angleDepth(decl, open) > 0 || !std::regex_search(before, m, name)) continue;
        std::string n = m[1];
        n.erase(std::remove_if(n.begin(), n.end(), [](char c) { return std::isspace(c); }),
                n.end());
        if (!std::regex_search(n, notAName)) return n;  // operator() is the next group's name
    }
    return trim(decl);
}

// ---- the scan -----------------------------------------------------------------------------

class Scanner {
  public:
    explicit Scanner(const std::string& source) : m_code(codeOnly(source)) {}

    // Every function definition, in the order they appear.
    std::vector<FunctionSpan> functions() {
        while (m_pos < m_code.size()) scanScope();  // a stray `}` ends one pass, not the scan
        return m_found;
    }

  private:
    // Reads declarations until the `}` closing the current scope (or the end of the file).
    void scanScope() {
        std::string head;
        while (m_pos < m_code.size()) {
            const char c = m_code[m_pos];
            if (c == '}') {
                ++m_pos;
                return;
            }
            if (c == ';') {
                head.clear();
                ++m_pos;
            } else if (c == '{') {
                openBrace(head);
            } else {
                head += c;
                ++m_pos;
            }
        }
    }

    void openBrace(std::string& head) {
        const int line = lineAt(m_pos);
        switch (classify(head)) {
            case Opens::Scope:
                ++m_pos;
                scanScope();
                head.clear();
                return;
            case Opens::Function: {
                const size_t close = matchingBrace(m_pos);
                m_found.push_back({functionName(head), line, lineAt(close) - line + 1});
                m_pos = close + 1;
                head.clear();
                return;
            }
            case Opens::MemberInit:
            case Opens::Data:
                m_pos = matchingBrace(m_pos) + 1;
                head += "{}";  // the declaration goes on: `= {...};`, `m_x{1}, m_y(2) {`
                return;
        }
    }

    size_t matchingBrace(size_t open) const {
        int depth = 0;
        for (size_t i = open; i < m_code.size(); ++i) {
            depth += m_code[i] == '{' ? 1 : m_code[i] == '}' ? -1 : 0;
            if (depth == 0) return i;
        }
        return m_code.size() - 1;
    }

    int lineAt(size_t pos) const {
        return 1 + static_cast<int>(std::count(m_code.begin(), m_code.begin() + pos, '\n'));
    }

    std::string m_code;
    size_t m_pos = 0;
    std::vector<FunctionSpan> m_found;
};

std::vector<FunctionSpan> functionsIn(const std::string& source) {
    return Scanner(source).functions();
}

// The spans as "name:lines" for compact comparisons.
std::vector<std::string> summary(const std::vector<FunctionSpan>& spans) {
    std::vector<std::string> out;
    for (const auto& f : spans) out.push_back(f.name + ":" + std::to_string(f.lines));
    return out;
}

std::string readFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
}

// A function of `bodyLines` lines between its braces, named `name`.
std::string functionOfLines(const std::string& name, int bodyLines) {
    std::string s = "int " + name + "(int x) {\n";
    for (int i = 0; i < bodyLines; ++i) s += "    x += " + std::to_string(i) + ";\n";
    return s + "    return x;\n}\n";
}

}  // namespace

// ---- the scanner on the shapes the tree uses ------------------------------------------------

TEST(FunctionLengthScanner, CountsFromTheOpeningToTheClosingBrace) {
    const auto spans = functionsIn(functionOfLines("f", 10) + "\nvoid g() {}\n");
    ASSERT_EQ(spans.size(), 2u);
    EXPECT_EQ(spans[0].name, "f");
    EXPECT_EQ(spans[0].line, 1);
    EXPECT_EQ(spans[0].lines, 13);  // the brace line, 10 statements, the return, the brace
    EXPECT_EQ(spans[1].name, "g");
    EXPECT_EQ(spans[1].lines, 1);
}

TEST(FunctionLengthScanner, ALambdaHeavyFunctionIsOneFunction) {
    const std::string source = R"(
namespace qklab {
void buildToolbar(Panel* p) {
    auto add = [&](const QString& name, auto slot) {
        auto* b = new QPushButton(name);
        QObject::connect(b, &QPushButton::clicked, p, [p, slot] { (p->*slot)(); });
        return b;
    };
    add("Open", &Panel::open);
    std::sort(v.begin(), v.end(), [](int a, int b) {
        return a < b;
    });
    connect(x, &X::y, this, [this](int v) { if (v) { m_v = v; } else { m_v = 0; } });
}
}  // namespace qklab
)";
    EXPECT_EQ(summary(functionsIn(source)), std::vector<std::string>{"buildToolbar:12"});
}

TEST(FunctionLengthScanner, ASwitchWithManyCasesIsOneFunction) {
    std::string source = "const char* toString(Kind k) {\n    switch (k) {\n";
    for (int i = 0; i < 40; ++i)
        source += "        case Kind::K" + std::to_string(i) + ": {\n            return \"k" +
                  std::to_string(i) + "\";\n        }\n";
    source += "    }\n    return \"\";\n}\n";
    EXPECT_EQ(summary(functionsIn(source)), std::vector<std::string>{"toString:125"});
}

TEST(FunctionLengthScanner, AClassBodyIsNotAFunctionButItsMethodsAre) {
    const std::string source = R"(
class RunWriter::Impl : public QObject {
    Q_OBJECT
  public:
    explicit Impl(int n) : m_n(n), m_v{1, 2}, m_w{} {
        init();
    }
    int n() const { return m_n; }
    auto twice() const -> int { return 2 * m_n; }
    bool operator()(int a) const noexcept { return a < m_n; }
    double Impl::operator()(int64_t step) const { return 0; }
    bool operator<(const Impl& other) const override { return m_n < other.m_n; }
    ~Impl() override {}
  signals:
    void changed();
  private slots:
    void onTimer() {
        tick();
    }
  private:
    struct Row {
        int x = 0;
        int twice() const { return 2 * x; }
    };
    enum class Mode { A, B };
    int m_n;
    std::vector<int> m_v;
    QTimer m_w{this};
    std::function<void(int)> m_f{[](int) {}};
};
void RunWriter::Impl::writeRows() {
    step();
}
)";
    EXPECT_EQ(summary(functionsIn(source)),
              (std::vector<std::string>{"Impl:3", "n:1", "twice:1", "operator():1",
                                        "Impl::operator():1", "operator<:1", "~Impl:1", "onTimer:3",
                                        "twice:1", "RunWriter::Impl::writeRows:3"}));
}

TEST(FunctionLengthScanner, TablesNamespacesAndInitialisersAreNotFunctions) {
    const std::string source = R"(
namespace qklab::gui {
namespace {
const std::vector<Column> kColumns = {
    {"step", [](const Row& r) { return r.step; }},
    {"loss", [](const Row& r) { return r.loss; }},
};
constexpr int kSizes[] = {1, 2, 3};
QColor colour{255, 0, 0};
enum Kind { A, B };
struct Point {
    double x, y;
};
}  // namespace
extern "C" {
int plain(int x) { return x; }
}
template <typename T = int>
T largest(const std::vector<T>& v = {}) {
    return v.empty() ? T{} : *std::max_element(v.begin(), v.end());
}
}  // namespace qklab::gui
Q_DECLARE_METATYPE(qklab::RunInfo)
int main(int argc, char** argv) {
    return run(argc, argv);
}
std::function<void(RunConfig&)> setterFor(const std::string& key) {
    return {};
}
__attribute__((constructor(101))) void loadAtStartUp() {}
)";
    EXPECT_EQ(summary(functionsIn(source)),
              (std::vector<std::string>{"plain:1", "largest:3", "main:3", "setterFor:3",
                                        "loadAtStartUp:1"}));
}

TEST(FunctionLengthScanner, BracesInCommentsStringsAndDirectivesDoNotCount) {
    const std::string source = R"src(
// void commented() {
/* int alsoCommented() { */
#define OPEN {
#define CLOSE \
    }
std::string quoted() {
    const char* a = "{ not a brace";
    const char b = '}';
    const char* c = R"json({"k": "}"})json";
    const char* d = u8R"({)";
    const int million = 1'000'000;
    return std::string(a) + b + c + d + std::to_string(million);
}
)src";
    EXPECT_EQ(summary(functionsIn(source)), std::vector<std::string>{"quoted:8"});
}

// ---- the rule, over the tree ----------------------------------------------------------------

// A function that grows past the limit is split into named parts, never waved through.
TEST(FunctionLength, NoFunctionInCoreOrAppIsLongerThan80Lines) {
    const fs::path root(qklab::testpaths::sourceDir());
    int files = 0, functions = 0;
    for (const char* top : {"core", "app"})
        for (auto it = fs::recursive_directory_iterator(root / top);
             it != fs::recursive_directory_iterator(); ++it) {
            const fs::directory_entry& e = *it;
            // `pip install ./app/python` builds in app/python/build: CMake's files, not qklab's.
            if (e.is_directory() && e.path().filename() == "build") {
                it.disable_recursion_pending();
                continue;
            }
            const std::string ext = e.path().extension().string();
            if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
            ++files;
            for (const FunctionSpan& f : functionsIn(readFile(e.path()))) {
                ++functions;
                EXPECT_LE(f.lines, kMaxFunctionLines)
                    << e.path().lexically_relative(root).string() << ":" << f.line << " " << f.name
                    << " is " << f.lines << " lines";
            }
        }
    EXPECT_GT(files, 100);  // the scan saw the tree
    EXPECT_GT(functions, 1000);
}
