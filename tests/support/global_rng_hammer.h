// global_rng_hammer.h — a thread that draws from LibTorch's global CPU generator without pause,
// as anything else in the app's process may (the start-up BLAS check did): a run must come out
// the same whatever else draws meanwhile. Torch-free header, so Qt tests can use it.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace qklab::testsupport {

class GlobalRngHammer {
  public:
    GlobalRngHammer() = default;
    ~GlobalRngHammer() { stop(); }
    void start();
    void stop();
    int64_t draws() const { return m_draws.load(); }

  private:
    std::atomic<bool> m_stop{false};
    std::atomic<int64_t> m_draws{0};
    std::thread m_thread;
};

}  // namespace qklab::testsupport
