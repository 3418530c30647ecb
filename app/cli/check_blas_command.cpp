// check_blas_command.cpp — `qklab-cli check-blas`: the BLAS in use, its matmul speed (warns
// when slow), and the CUDA backend.
#include "check_blas_command.h"

#include <cstdio>

#include "qklab/engine/environment.h"

namespace qklab::cli {

void addCheckBlasOptions(CLI::App&, CheckBlasArgs&, Database&) {}  // it has none

int cmdCheckBlas(const CheckBlasArgs&) {
    const BlasCheck r = checkBlasSpeed();
    const CudaBackend cuda = cudaBackend();
    std::printf("matmul: %.1f GFLOP/s%s on %d thread%s\nblas: %s\ncuda: %s, %d GPU(s)\n", r.gflops,
                r.slow ? " (slow)" : "", r.threads, r.threads == 1 ? "" : "s", r.blas.c_str(),
                cuda.detail.c_str(), cuda.devices);
    if (!r.message.empty())
        std::fprintf(stderr, "%s: %s\n", r.slow ? "warning" : "note", r.message.c_str());
    return 0;
}

}  // namespace qklab::cli
