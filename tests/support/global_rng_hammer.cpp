// global_rng_hammer.cpp — see global_rng_hammer.h.
#include "global_rng_hammer.h"

#include <torch/torch.h>

namespace qklab::testsupport {

void GlobalRngHammer::start() {
    stop();
    m_stop = false;
    m_thread = std::thread([this] {
        while (!m_stop.load()) {
            torch::randn({256});  // the global generator, as checkBlasSpeed's randn was
            ++m_draws;
        }
    });
}

void GlobalRngHammer::stop() {
    m_stop = true;
    if (m_thread.joinable()) m_thread.join();
}

}  // namespace qklab::testsupport
