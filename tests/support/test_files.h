// test_files.h — small helpers the torch-free and CLI test suites share: a word for the shell,
// a file's bytes, a scratch folder of this process.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace qklab::testsupport {

// A string as one word for sh, whatever it holds (newlines and quotes included).
inline std::string shellWord(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

inline std::string readAll(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
}

// A fresh folder under the temp directory, named after `name` and this process.
inline std::filesystem::path scratchDir(const std::string& name) {
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("qklab-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

}  // namespace qklab::testsupport
