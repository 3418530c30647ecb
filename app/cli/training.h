// training.h — a run trained in the foreground (`run`, `resume`, `sweep-point`): warnings
// first, a progress bar on stderr, the run id on stdout for scripts.
#pragma once

#include <string>

#include "qklab/engine/run_session.h"

namespace qklab::cli {

// Trains the session to its end. Ctrl-C (or SIGTERM) stops it at the next step with a
// checkpoint. Returns the exit status: 0 when it finished or diverged (divergence is a
// result), 3 when stopped (resumable), 1 otherwise.
int trainSession(RunSession& session, const std::string& dbPath);

}  // namespace qklab::cli
