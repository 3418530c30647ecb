// cuda_backend.cpp — loads LibTorch's CUDA half at start-up, on machines that can use it.
//
// The engine links only libtorch_cpu (core/cmake/QklabTorch.cmake). libtorch_cuda, with
// cuBLAS, cuDNN, NCCL and NVRTC behind it, would cost every CPU-only process about 210 MB of
// resident memory, most of it cuBLASLt's static data written at load time. So it is loaded
// here, with dlopen, where an NVIDIA driver is installed (or when QKLAB_CUDA=on asks).
//
// It has to happen before main(): ATen asks its CUDA hooks registry once and caches the answer
// (torch::manual_seed asks, for example), so a CUDA library loaded after the first such call
// would be ignored for the life of the process. A constructor function in this translation
// unit runs after the shared libraries' own initialisers and before main().
#include <dlfcn.h>
#include <torch/torch.h>

#include <cctype>
#include <cstdlib>
#include <string>

#include "qklab/engine/environment.h"
#include "qklab/engine/trainer.h"

namespace qklab {
namespace {

struct LoadState {
    bool loaded = false;
    std::string detail = "this LibTorch has no CUDA";
};

LoadState& loadState() {
    static LoadState state;
    return state;
}

#ifdef QKLAB_TORCH_CUDA_LIBRARY
void loadCudaHalf() {
    LoadState& s = loadState();
    const char* env = std::getenv("QKLAB_CUDA");
    std::string mode = env ? env : "auto";
    for (auto& ch : mode) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (mode == "off" || mode == "0" || mode == "false" || mode == "no") {
        s.detail = "not loaded (QKLAB_CUDA=off)";
        return;
    }
    const bool forced = mode == "on" || mode == "1" || mode == "true" || mode == "yes";
    // The driver library is what any CUDA use needs first; without it nothing can run.
    if (!forced && !dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
        s.detail = "not loaded: no NVIDIA driver on this machine (libcuda.so.1 not found)";
        return;
    }
    void* handle = dlopen(QKLAB_TORCH_CUDA_LIBRARY, RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
        const char* first = dlerror();  // the reason that matters: the build's own library
        const std::string why = first ? first : "dlopen failed";
        handle = dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_GLOBAL);  // moved? via RUNPATH
        if (!handle) {
            s.detail = "not loaded: " + why;
            return;
        }
    }
    s.loaded = true;
    s.detail = std::string("loaded from ") + QKLAB_TORCH_CUDA_LIBRARY;
}

__attribute__((constructor(101))) void loadCudaHalfAtStartUp() {
    loadCudaHalf();
}
#endif

}  // namespace

CudaBackend cudaBackend() {
    CudaBackend b;
    b.loaded = loadState().loaded;
    b.detail = loadState().detail;
#ifndef QKLAB_TORCH_CUDA_LIBRARY
    // A LibTorch linked whole (Debian's, or a custom one) registers its CUDA half itself.
    b.loaded = torch::cuda::is_available();
    if (b.loaded) b.detail = "linked";
#endif
    b.devices = b.loaded ? static_cast<int>(torch::cuda::device_count()) : 0;
    return b;
}

}  // namespace qklab
