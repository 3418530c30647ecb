// names.cpp — see qklab/names.h.
#include "qklab/names.h"

#include <nlohmann/json.hpp>

#include "qklab/error.h"
#include "util/text_util.h"

namespace qklab {

void checkName(const std::string& name, const std::string& what) {
    if (name.empty()) throw Error(ErrorCode::InvalidRequest, what + " cannot be empty");
    if (name.size() > 200)
        throw Error(ErrorCode::InvalidRequest, what + " is at most 200 bytes; '" +
                                                   clipped(name, 60) + "' has " +
                                                   std::to_string(name.size()));
    for (unsigned char c : name)
        if (c < 0x20 || c == 0x7f)
            throw Error(ErrorCode::InvalidRequest,
                        what + " cannot hold control characters (newline, tab, ...): '" +
                            clipped(shortJson(nlohmann::json(name)), 60) + "'");
}

void checkRunName(const std::string& name) {
    checkName(name, "a run name");
}

}  // namespace qklab
