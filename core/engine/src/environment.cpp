// environment.cpp — the facts of qklab/engine/environment.h: LibTorch's version, CUDA's
// availability and a quick matmul that tells a fast BLAS from the reference one.
#include "qklab/engine/environment.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Version.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <fstream>
#include <string>

namespace qklab {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

}  // namespace

std::string torchVersion() {
    return TORCH_VERSION;
}

bool cudaAvailable() {
    return torch::cuda::is_available();
}

namespace {

// The optimised BLAS libraries mapped into this process, from /proc/self/maps (Linux).
std::string optimisedBlasLoaded() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    for (const char* name : {"openblas", "libmkl", "libblis", "libatlas"}) {
        maps.clear();
        maps.seekg(0);
        while (std::getline(maps, line))
            if (line.find(name) != std::string::npos) return name;
    }
    return {};
}

// The BLAS LibTorch was built against, from its build configuration ("BLAS_INFO=mkl").
std::string builtInBlas() {
    const std::string config = at::show_config();
    const auto pos = config.find("BLAS_INFO=");
    if (pos == std::string::npos) return {};
    const auto end = config.find_first_of(", \n", pos);
    return config.substr(pos + 10, end == std::string::npos ? std::string::npos : end - pos - 10);
}

// One line naming the BLAS in use: MKL linked into the PyTorch wheel's libtorch_cpu, or a
// shared BLAS (Debian's LibTorch calls libblas.so.3, which the alternatives system points at
// OpenBLAS or at the slow reference BLAS).
std::string describeBlas(const std::string& mapped) {
    const std::string built = builtInBlas();
    if (built == "mkl") return "Intel MKL (linked into LibTorch " + torchVersion() + ")";
    if (!mapped.empty())
        return mapped + " (shared library; LibTorch " + torchVersion() + " BLAS_INFO=" + built +
               ")";
    return "reference BLAS or unknown (LibTorch " + torchVersion() +
           " BLAS_INFO=" + (built.empty() ? "?" : built) + ")";
}

}  // namespace

BlasCheck checkBlasSpeed() {
    torch::NoGradGuard noGrad;
    const int64_t n = 384;
    // Its own generator: the global one is shared with whatever trains in this process.
    auto generator = at::make_generator<at::CPUGeneratorImpl>(1);
    auto a = torch::randn({n, n}, generator), b = torch::randn({n, n}, generator);
    torch::mm(a, b);  // warm-up (thread pool start)
    const auto t0 = Clock::now();
    int reps = 0;
    while (seconds(t0, Clock::now()) < 0.05 || reps < 3) {
        torch::mm(a, b);
        ++reps;
    }
    BlasCheck r;
    r.gflops = 2.0 * n * n * n * reps / seconds(t0, Clock::now()) / 1e9;
    r.threads = torch::get_num_threads();
    // The reference BLAS does ~1-3 GFLOP/s here, OpenBLAS and MKL tens to hundreds. A busy
    // machine can also measure low, so the verdict needs both: slow, and no optimised BLAS.
    const std::string mapped = optimisedBlasLoaded();
    const bool optimised = !mapped.empty() || builtInBlas() == "mkl";
    r.blas = describeBlas(mapped);
    r.slow = r.gflops < 5.0 && !optimised;
    if (r.slow)
        r.message = "matrix multiply runs at only " + std::to_string(r.gflops).substr(0, 5) +
                    " GFLOP/s and no optimised BLAS is loaded: LibTorch is probably using the "
                    "reference BLAS. On Debian/Ubuntu install libopenblas0-openmp (training is "
                    "~20x faster).";
    else if (r.gflops < 5.0)
        r.message = "matrix multiply measured only " + std::to_string(r.gflops).substr(0, 5) +
                    " GFLOP/s with " + r.blas + ": is the machine busy?";
    return r;
}

}  // namespace qklab
