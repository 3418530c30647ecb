// names.cpp — see qklab/config/names.h.
#include "qklab/config/names.h"

#include <algorithm>

#include "qklab/util/error.h"
#include "qklab/util/text_util.h"

namespace qklab {

void checkName(const std::string& name, const std::string& what) {
    if (name.empty()) throw Error(ErrorCode::InvalidRequest, what + " cannot be empty");
    if (name.size() > 200)
        throw Error(ErrorCode::InvalidRequest, what + " is at most 200 bytes; '" +
                                                   clipped(printableText(name), 60) + "' has " +
                                                   std::to_string(name.size()));
    const std::string unsafe = firstUnsafeCharacter(name);
    if (!unsafe.empty())
        throw Error(ErrorCode::InvalidRequest,
                    what +
                        " cannot hold control characters (newline, tab, ESC, U+0080..U+009F), "
                        "bidi controls or bytes that are not UTF-8; '" +
                        clipped(printableText(name), 80) + "' holds " + unsafe);
}

std::string nameUnderTheRule(const std::string& name) {
    if (name.empty()) return "unnamed";
    if (name.size() <= 200 && firstUnsafeCharacter(name).empty()) return name;
    std::string printable = printableText(name);  // ASCII escapes and whole UTF-8 characters
    size_t cut = std::min<size_t>(printable.size(), 200);
    while (cut > 0 && (static_cast<unsigned char>(printable[cut]) & 0xC0) == 0x80) --cut;
    return printable.substr(0, cut);
}

void checkRunName(const std::string& name) {
    checkName(name, "a run name");
}

void checkScalarName(const std::string& name) {
    checkName(name, "a scalar name");
}

int numberInSeries(const std::string& name, const std::string& base) {
    if (name == base) return 1;
    const std::string open = base + " (";
    if (name.size() <= open.size() + 1 || name.compare(0, open.size(), open) != 0 ||
        name.back() != ')')
        return 0;
    const std::string digits = name.substr(open.size(), name.size() - open.size() - 1);
    if (digits.empty() || digits.size() > 6 || digits[0] == '0' ||
        digits.find_first_not_of("0123456789") != std::string::npos)
        return 0;
    const int n = std::stoi(digits);
    return n >= 2 ? n : 0;
}

std::string numberedName(const std::string& base, const std::vector<std::string>& existing) {
    int highest = 0;
    for (const std::string& name : existing)
        highest = std::max(highest, numberInSeries(name, base));
    if (highest == 0) return base;
    if (highest >= 999999)
        throw Error(ErrorCode::InvalidRequest, "every numbered name of '" + clipped(base, 60) +
                                                   "' is taken; choose another name");
    return base + " (" + std::to_string(highest + 1) + ")";
}

}  // namespace qklab
