// cli_run.h — runs the qklab-cli binary under test (testpaths::cliPath()) with its stderr in a
// file, for the CLI test suites.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "support/test_paths.h"

struct Result {
    int status = -1;
    std::string out, err;
};

// `qklab-cli ARGS` through the shell (or another build of it, `cli`); stderr goes through
// errFile.
inline Result runCli(const std::string& args, const std::string& errFile,
                     const std::string& cli = qklab::testpaths::cliPath()) {
    const std::string cmd = cli + " " + args + " 2>" + errFile;
    Result r;
    FILE* p = popen(cmd.c_str(), "r");
    std::array<char, 4096> buf{};
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    r.status = WEXITSTATUS(pclose(p));
    std::ifstream e(errFile);
    r.err.assign(std::istreambuf_iterator<char>(e), {});
    return r;
}
