// qklab/engine/environment.h — facts about the machine a run trains on: the LibTorch version,
// whether CUDA can be used (and why not), and how fast the BLAS is. Recorded with every run and
// shown by `qklab-cli check-blas`; the app warns once when the BLAS is the slow reference one.
#pragma once

#include <string>

namespace qklab {

std::string torchVersion();
bool cudaAvailable();

// LibTorch's CUDA half: loaded at start-up only where an NVIDIA driver is installed, so CPU
// runs do not carry it (QKLAB_CUDA=on|off overrides; core/engine/src/cuda_backend.cpp).
struct CudaBackend {
    bool loaded = false;
    int devices = 0;     // GPUs visible once loaded
    std::string detail;  // e.g. "not loaded: no NVIDIA driver ..."
};
CudaBackend cudaBackend();

// A quick matmul to tell a fast BLAS from the reference one (Debian without
// libopenblas0-openmp trains ~20x slower). Returns GFLOP/s and a warning when slow.
struct BlasCheck {
    double gflops = 0;
    int threads = 0;   // intra-op threads the measurement used
    std::string blas;  // which BLAS, e.g. "Intel MKL (linked into LibTorch 2.15.0)"
    bool slow = false;
    std::string message;
};
BlasCheck checkBlasSpeed();

}  // namespace qklab
