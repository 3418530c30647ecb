// trainer_setup.cpp — what a run builds once before its first step: the AdamW (fused or
// per-parameter, with Muon on the hidden matrices for optim.kind = muon) and, for run.cuda_graphs,
// the graph stepper.
#include <torch/version.h>

#include <string>
#include <utility>
#include <vector>

#include "trainer_impl.h"

namespace qklab {

void Trainer::Impl::buildOptimizer() {
    if (config.optim.fused == AutoSwitch::On && !kHaveFusedAdamW)
        throw Error(ErrorCode::Unsupported,
                    "optim.fused = on, but this build's LibTorch (" +
                        std::to_string(TORCH_VERSION_MAJOR) + "." +
                        std::to_string(TORCH_VERSION_MINOR) +
                        ") has no fused AdamW (2.4 or later); use optim.fused = auto or off");
    // auto: fused on CUDA, where the per-parameter update is ~10 launches per tensor. On the
    // CPU it gains a few percent of a step, and the per-parameter update keeps the documented
    // CPU numbers: chaotic (high-LR) runs follow the optimizer's rounding, and a lesson's seed
    // that had no spike gets one with the fused kernel's.
    const bool fused =
        kHaveFusedAdamW && (config.optim.fused == AutoSwitch::On ||
                            (config.optim.fused == AutoSwitch::Auto && device.is_cuda()));
    // optim.kind = muon: the fused kernel (if on) steps the AdamW groups, Muon its own.
    // optim.quack: the query/key weights take the per-parameter path (or Muon's) with their
    // per-row LR multipliers; the kernel steps the rest.
    optimizer = std::make_unique<DeviceAdamW>(
        parameterGroups(), config.optim.betas[0], config.optim.betas[1], config.optim.eps, fused,
        MuonSettings{config.optim.muonMomentum, config.optim.muonNsSteps},
        config.optim.quack ? model->quackPairs(config.model.initStd) : std::vector<QuackPair>{});
}

// run.cuda_graphs: a GraphStepper on CUDA with deferred readback where the plugin loads (or
// with the tests' stand-in graph); `on` fails where it cannot.
void Trainer::Impl::buildGraphs() {
    if (config.run.cudaGraphs == AutoSwitch::Off) return;
    StepGraphFactory factory = options.stepGraphFactory;
    std::string why;
    if (!factory) {
        if (!device.is_cuda()) return;  // validate() refuses `on` off cuda
        factory = cudaStepGraphFactory(why);
    }
    if (!deferredReadback) why = "run.readback = every_step reads the loss before the update";
    if (factory && deferredReadback) {
        graphs = std::make_unique<GraphStepper>(std::move(factory));
        return;
    }
    if (config.run.cudaGraphs == AutoSwitch::On)
        throw Error(ErrorCode::Unsupported, "run.cuda_graphs = on, but " + why);
}

}  // namespace qklab
