// step_graph.h — a recorded sequence of device launches, replayed (private to core): the
// interface between the trainer and CUDA graphs.
//
// The engine links only LibTorch's CPU half (core/cmake/QklabTorch.cmake); at::cuda::CUDAGraph
// lives in its CUDA half. So the capture is in a small plugin, libqklab_step_graph.so
// (core/engine/src/step_graph_plugin.cpp), which links libtorch_cuda and is loaded with dlopen
// the first time a CUDA run asks for graphs, after cuda_backend.cpp loaded the CUDA half. The
// plugin returns a StepGraph through one C function; this header is all the two share.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace qklab {

class StepGraph {
  public:
    virtual ~StepGraph() = default;
    // Records what `body` launches (it must read nothing back to the host and allocate only
    // through LibTorch) without running it. Throws (c10::Error) when the capture fails; the
    // device state is then as before the call.
    virtual void capture(const std::function<void()>& body) = 0;
    // Runs the recorded launches again, on the current stream.
    virtual void replay() = 0;
};

using StepGraphFactory = std::function<std::unique_ptr<StepGraph>()>;

// The CUDA graph factory from the plugin, or an empty function with the reason in `why` (no
// plugin in this build, the plugin does not load, LibTorch's CUDA half is not loaded).
StepGraphFactory cudaStepGraphFactory(std::string& why);

// The C function the plugin exports: a new StepGraph the caller owns.
extern "C" using NewStepGraphFunction = StepGraph * (*)();
constexpr const char* kNewStepGraphSymbol = "qklab_new_step_graph";

}  // namespace qklab
