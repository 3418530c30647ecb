// test_paths.cpp — the one file whose flags name this checkout and this build (test_paths.h).
#include "support/test_paths.h"

namespace qklab::testpaths {

const char* sourceDir() {
    return QKLAB_SOURCE_DIR;
}

const char* sharedData() {
    return QKLAB_SHARED_DATA;
}

const char* cliPath() {
    return QKLAB_CLI_PATH;
}

const char* appPath() {
    return QKLAB_APP_PATH;
}

const char* extraCliPath() {
    return QKLAB_EXTRA_CLI_PATH;
}

}  // namespace qklab::testpaths
