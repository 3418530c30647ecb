// qklab/util/version.h — which build this is.
#pragma once

#include <string>

namespace qklab {

// "<project version>+<git describe --always --dirty>", e.g. "0.1.0+1dcd6db" or
// "0.1.0+1dcd6db-dirty": stored with every run and printed by --version.
std::string appVersion();

}  // namespace qklab
