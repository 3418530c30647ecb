// step_graph_plugin.cpp — libqklab_step_graph.so: StepGraph (engine/step_graph.h) over
// at::cuda::CUDAGraph. Links LibTorch's CUDA half; loaded by engine/step_graph.cpp only in
// processes that already loaded that half (core/engine/src/cuda_backend.cpp).
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>

#include "step_graph.h"

namespace qklab {
namespace {

class CudaStepGraph final : public StepGraph {
  public:
    void capture(const std::function<void()>& body) override {
        // A graph is captured on a side stream (never the legacy default stream), with the
        // device idle so that nothing launched before leaks into the recording; LibTorch's
        // allocator serves the body from the graph's private pool, which the graph keeps.
        torch::cuda::synchronize();
        auto side = c10::cuda::getStreamFromPool();
        {
            c10::cuda::CUDAStreamGuard onSide(side);
            m_graph.capture_begin();
            try {
                body();
            } catch (...) {
                // End the stream's capture mode whatever state it is in, then report.
                try {
                    m_graph.capture_end();
                } catch (...) {
                }
                m_graph.reset();
                throw;
            }
            m_graph.capture_end();
        }
        torch::cuda::synchronize();
    }

    void replay() override { m_graph.replay(); }

  private:
    at::cuda::CUDAGraph m_graph;
};

}  // namespace
}  // namespace qklab

extern "C" __attribute__((visibility("default"))) qklab::StepGraph* qklab_new_step_graph() {
    return new qklab::CudaStepGraph();
}
