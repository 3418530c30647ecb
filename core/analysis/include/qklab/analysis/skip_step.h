// qklab/analysis/skip_step.h — the sigma skip-step rule of optim.skip_step (issue 40): skip a
// step's update when its loss or its grad norm is more than k standard deviations above the
// mean of the previous N steps. This is OLMo-core's SkipStepAdamW rule (N = 128, k = 6; the
// same in MaxText's skip_step_on_spikes): every step's values join the window, skipped or not;
// the sample standard deviation (n - 1); no verdict until half the window (at least 2) is in.
//
// Torch-free and exact, so the trainer and its tests share it; its window is the state a
// checkpoint keeps (a resumed run skips the same steps as one that never stopped).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace qklab {

struct SkipVerdict {
    bool skip = false;
    std::string why;  // "loss 4.02 > mean 2.31 + 6 x 0.051 = 2.62" when skipped
};

class SkipStepDetector {
  public:
    SkipStepDetector(int64_t window, double sigma);

    // Judges one step against the window of the steps before it, then adds it.
    SkipVerdict observe(double loss, double gradNorm);

    // The window (loss, grad norm), oldest first: a checkpoint's copy of the state.
    std::vector<std::pair<double, double>> window() const;
    void restore(const std::vector<std::pair<double, double>>& window);

  private:
    int64_t m_size;
    double m_sigma;
    std::deque<std::pair<double, double>> m_window;
};

}  // namespace qklab
