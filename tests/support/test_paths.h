// test_paths.h — where a test finds the checkout and the programs this build made.
//
// These paths were compile definitions on every test, which put an absolute path into every
// test file's flags: a second clone then missed ccache for each of them (ccache's base
// directory rewrites paths in arguments, not in macro values). Only test_paths.cpp holds them
// now, so every other test object is the same in any checkout.
#pragma once

#include <string>

namespace qklab::testpaths {

const char* sourceDir();     // the checkout's root
const char* sharedData();    // ../shared/data beside the checkout (may be absent)
const char* cliPath();       // build/app/cli/qklab-cli
const char* appPath();       // build/app/gui/qklab ("" when the app is not built)
const char* extraCliPath();  // qklab-cli with an extra record column (record_columns_test)

// sourceDir() + relative, e.g. source("/experiments").
inline std::string source(const std::string& relative) {
    return std::string(sourceDir()) + relative;
}

}  // namespace qklab::testpaths
