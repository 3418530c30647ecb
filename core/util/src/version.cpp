// version.cpp — the one place the build's version is read (from the header generated at
// build time by core/cmake/QklabVersion.cmake). Only this file recompiles when it changes.
#include "qklab/util/version.h"

#include "qklab_version_info.h"

namespace qklab {

std::string appVersion() {
    return QKLAB_VERSION_STRING;
}

}  // namespace qklab
