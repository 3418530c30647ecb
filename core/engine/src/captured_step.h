// captured_step.h — training steps replayed from a CUDA graph (private to core).
//
// A tiny model's step is a few hundred kernel launches of a few microseconds each: the GPU
// waits on the host. A graph records the launches of one whole step (forward, backward, clip,
// AdamW) once and replays them with one call. What a replay may not change is everything the
// launches were recorded with other than tensor contents: the attention switches (QK-norm
// variant and alpha, softcap kind and width, fused or explicit attention) and the shapes. So a
// graph belongs to a GraphKey; a step whose key differs runs eagerly, and a key that has held
// for a few eligible steps in a row is captured anew. The caller decides which steps are
// eligible at all (not probe or event steps: they run eagerly around the graph).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>

#include "attention.h"
#include "step_graph.h"

namespace qklab {

struct GraphKey {
    AttentionSwitches switches;
    int64_t batch = 0, seqLen = 0;
    bool frozenGains = false;                   // an anneal's QK gains: no update
    bool operator==(const GraphKey& o) const {  // the switches by their one equality
        return switches == o.switches && batch == o.batch && seqLen == o.seqLen &&
               frozenGains == o.frozenGains;
    }
};

// What a training step leaves for the readback: the loss, the pre-clip gradient norm, the
// output-logit statistics and the update norm, as device tensors.
struct StepTensors {
    torch::Tensor loss, gradNorm, outputLogits, updateNorm;
};

class GraphStepper {
  public:
    // The body of a step: forward on (x, y), backward, clip and optimizer step, launches only.
    using Body = std::function<StepTensors(const torch::Tensor& x, const torch::Tensor& y)>;

    // stableSteps: eligible eager steps with one key before that key is captured (the caches,
    // cuBLAS workspaces and the optimizer's masks exist by then).
    explicit GraphStepper(StepGraphFactory factory, int stableSteps = 2);

    // Runs one eligible step through the graph when it can: replays the graph of `key`, or
    // captures `body` for it and replays, when `key` held for stableSteps steps. Returns fresh
    // copies of the step's tensors, or nullopt: run the step eagerly (it counts toward
    // stability). `body` must capture what it uses by value: a replay may re-run it later.
    std::optional<StepTensors> tryStep(const GraphKey& key, const torch::Tensor& x,
                                       const torch::Tensor& y, Body body);

    int64_t captures() const { return m_captures; }
    int64_t replays() const { return m_replays; }
    // Why graphs stopped for this run (a failed capture); empty while they work.
    const std::string& failure() const { return m_failure; }

  private:
    bool capture(const GraphKey& key, const torch::Tensor& x, const torch::Tensor& y, Body body);
    void runBody();  // what the graph records: the body on the static inputs, into m_out

    StepGraphFactory m_factory;
    int m_stableSteps;
    std::unique_ptr<StepGraph> m_graph;
    std::optional<GraphKey> m_capturedKey, m_lastKey;
    int m_sameKeySteps = 0;
    Body m_body;
    torch::Tensor m_x, m_y;  // static inputs: each step's batch is copied in
    StepTensors m_out;       // static outputs: written by every replay
    int64_t m_captures = 0, m_replays = 0;
    std::string m_failure;
};

}  // namespace qklab
