// captured_step.cpp — GraphStepper: when a step replays, when it is captured, and the static
// tensors a graph reads and writes. See captured_step.h.
#include "captured_step.h"

#include <utility>

namespace qklab {

GraphStepper::GraphStepper(StepGraphFactory factory, int stableSteps)
    : m_factory(std::move(factory)), m_stableSteps(stableSteps) {}

namespace {

void copyInto(torch::Tensor& target, const torch::Tensor& value) {
    if (!target.defined()) target = torch::empty_like(value);  // in the graph's pool
    target.copy_(value);
}

StepTensors clones(const StepTensors& t) {
    return {t.loss.clone(), t.gradNorm.clone(), t.outputLogits.clone(), t.updateNorm.clone()};
}

}  // namespace

void GraphStepper::runBody() {
    const StepTensors t = m_body(m_x, m_y);
    copyInto(m_out.loss, t.loss);
    copyInto(m_out.gradNorm, t.gradNorm);
    copyInto(m_out.outputLogits, t.outputLogits);
    copyInto(m_out.updateNorm, t.updateNorm);
}

bool GraphStepper::capture(const GraphKey& key, const torch::Tensor& x, const torch::Tensor& y,
                           Body body) {
    m_graph.reset();  // frees the previous graph's pool first
    m_capturedKey.reset();
    m_out = {};
    m_x = x.clone();
    m_y = y.clone();
    m_body = std::move(body);
    try {
        auto graph = m_factory();
        graph->capture([this] { runBody(); });
        m_graph = std::move(graph);
    } catch (const std::exception& e) {
        // Nothing the body launched ran; the caller runs this step eagerly, and graphs stay
        // off for the rest of the run (the trainer reports why).
        m_failure = std::string("CUDA graph capture failed: ") + e.what();
        m_out = {};
        return false;
    }
    m_capturedKey = key;
    ++m_captures;
    return true;
}

std::optional<StepTensors> GraphStepper::tryStep(const GraphKey& key, const torch::Tensor& x,
                                                 const torch::Tensor& y, Body body) {
    if (!m_failure.empty()) return std::nullopt;
    m_sameKeySteps = m_lastKey && *m_lastKey == key ? m_sameKeySteps + 1 : 1;
    m_lastKey = key;
    const bool captured = m_capturedKey && *m_capturedKey == key;
    if (!captured) {
        // The first steps of a key run eagerly (they count); then the key is captured.
        if (m_sameKeySteps <= m_stableSteps || !capture(key, x, y, std::move(body)))
            return std::nullopt;
    } else {
        m_x.copy_(x);
        m_y.copy_(y);
    }
    m_graph->replay();  // after a capture, this runs the step for the first time
    ++m_replays;
    return clones(m_out);
}

}  // namespace qklab
