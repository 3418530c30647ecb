// stand_in_graph.h — a CUDA graph stand-in for the CPU (captured_step_test, output_centring_test):
// it records a step's body at capture and re-runs it on replay, on the same static tensors, so a
// trainer that hands a graph the wrong body (one missing a device op of the step) reports other
// losses than the eager run.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <utility>

#include "engine/src/step_graph.h"

namespace qklab::testing_support {

struct GraphCounts {
    int captures = 0, replays = 0;
    bool failCapture = false;
};

class StandInGraph final : public StepGraph {
  public:
    explicit StandInGraph(std::shared_ptr<GraphCounts> counts) : m_counts(std::move(counts)) {}
    void capture(const std::function<void()>& body) override {
        if (m_counts->failCapture) throw std::runtime_error("stand-in capture refused");
        m_body = body;  // recorded, not run: a capture launches nothing
        ++m_counts->captures;
    }
    void replay() override {
        m_body();
        ++m_counts->replays;
    }

  private:
    std::shared_ptr<GraphCounts> m_counts;
    std::function<void()> m_body;
};

}  // namespace qklab::testing_support
