// resume_pair.h — a run trained whole, and the same config stopped after a step and resumed
// from its checkpoint, in one store: what the engine's resume tests compare (a resumed run
// must train exactly as one that never stopped).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "qklab/engine/run_session.h"
#include "qklab/engine/trainer.h"
#include "qklab/store/run_store.h"

namespace qklab::testsupport {

struct ResumePair {
    RunStatus fullStatus = RunStatus::Unknown, stoppedStatus = RunStatus::Unknown,
              resumedStatus = RunStatus::Unknown;
    int64_t resumedFrom = -1;  // the resumed session's first step
    std::vector<StepMetrics> full, resumed;
    std::vector<EventRecord> fullEvents, resumedEvents;
};

inline ResumePair trainedWholeAndResumed(const RunConfig& c, int64_t stopAfter) {
    char tmpl[] = "/tmp/qklab-resume-XXXXXX";
    const std::string dir = mkdtemp(tmpl), db = dir + "/runs.db";
    ResumePair out;
    int64_t fullId = 0, stoppedId = 0;
    {
        RunSession full(c, SessionOptions{db, "full", {}});
        fullId = full.runId();
        out.fullStatus = full.run().status;
    }
    {
        RunSession first(c, SessionOptions{db, "stopped", {}});
        stoppedId = first.runId();
        struct Stopper : TrainingObserver {
            Trainer* trainer = nullptr;
            int64_t after = 0;
            void onStep(const StepMetrics& m) override {
                if (m.step == after) trainer->requestStop();
            }
        } stopper;
        stopper.trainer = &first.trainer();
        stopper.after = stopAfter;
        out.stoppedStatus = first.run(&stopper).status;
    }
    auto again = RunSession::resume(db, stoppedId);
    out.resumedFrom = again->trainer().startStep();
    out.resumedStatus = again->run().status;
    RunStore store(db);
    out.full = store.stepMetrics(fullId);
    out.resumed = store.stepMetrics(stoppedId);
    out.fullEvents = store.events(fullId);
    out.resumedEvents = store.events(stoppedId);
    std::filesystem::remove_all(dir);
    return out;
}

// Trains `t` to the end: it must finish, with a finite loss at its last step.
inline void expectTrainsToAFiniteLoss(Trainer& t, const std::string& what) {
    struct Last : TrainingObserver {
        double loss = NAN;
        void onStep(const StepMetrics& m) override { loss = m.loss; }
    } last;
    EXPECT_EQ(t.run(last).status, RunStatus::Finished) << what;
    EXPECT_TRUE(std::isfinite(last.loss)) << what;
}

// The stopped run stopped, the resumed one finished, and both trained `steps` steps with the
// same loss and the same update norm at every step (the update norm reads the optimiser's
// state, which a checkpoint that lost any of it would change before the loss does).
inline void expectResumedEqualsWhole(const ResumePair& r, size_t steps) {
    EXPECT_EQ(r.stoppedStatus, RunStatus::Stopped);
    EXPECT_EQ(r.resumedStatus, RunStatus::Finished);
    ASSERT_EQ(r.full.size(), steps);
    ASSERT_EQ(r.resumed.size(), steps);
    for (size_t i = 0; i < steps; ++i) {
        EXPECT_EQ(r.full[i].loss, r.resumed[i].loss) << "step " << i;
        EXPECT_EQ(r.full[i].updateNorm, r.resumed[i].updateNorm) << "step " << i;
    }
}

}  // namespace qklab::testsupport
