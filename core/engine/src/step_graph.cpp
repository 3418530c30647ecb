// step_graph.cpp — finds and loads the CUDA graph plugin (see step_graph.h).
#include "step_graph.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <string_view>
#include <vector>

#include "qklab/engine/environment.h"
#include "qklab/engine/trainer.h"

namespace qklab {
namespace {

constexpr const char* kPluginFile = "libqklab_step_graph.so";
#ifdef QKLAB_STEP_GRAPH_PLUGIN
constexpr std::string_view kBuiltPlugin = QKLAB_STEP_GRAPH_PLUGIN;
#else
constexpr std::string_view kBuiltPlugin;
#endif

// Where the plugin may be: where this build wrote it, then in ../lib of the running program
// (cmake --install puts programs in bin/ and the plugin in lib/).
std::vector<std::string> pluginCandidates() {
    std::vector<std::string> paths;
    // From a string_view: GCC 12 at -O3 warns (-Warray-bounds, a false positive) when this
    // std::string is built from the literal in place.
    if (!kBuiltPlugin.empty()) paths.emplace_back(kBuiltPlugin);
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) paths.push_back((exe.parent_path().parent_path() / "lib" / kPluginFile).string());
    return paths;
}

}  // namespace

StepGraphFactory cudaStepGraphFactory(std::string& why) {
    if (!cudaBackend().loaded) {
        why = "LibTorch's CUDA half is not loaded";
        return {};
    }
    std::string errors;
    for (const auto& path : pluginCandidates()) {
        if (!std::filesystem::exists(path)) continue;
        // Loaded once for the life of the process (never closed: graphs may outlive a run).
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char* e = dlerror();
            errors += std::string(errors.empty() ? "" : "; ") + (e ? e : path + ": dlopen failed");
            continue;
        }
        auto make = reinterpret_cast<NewStepGraphFunction>(dlsym(handle, kNewStepGraphSymbol));
        if (!make) {
            errors += (errors.empty() ? "" : "; ") + path + " has no " + kNewStepGraphSymbol;
            continue;
        }
        return [make] { return std::unique_ptr<StepGraph>(make()); };
    }
    why = errors.empty() ? std::string("this build has no CUDA graph plugin (") + kPluginFile +
                               ": it needs the CUDA toolkit at build time)"
                         : errors;
    return {};
}

}  // namespace qklab
