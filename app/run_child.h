#pragma once
// Runs the command of `tandem run` as a child process (process/child_process.h) and returns what a
// shell would: its exit status, or 128 + the signal that killed it (127 if it could not be executed).
#include <string>
#include <vector>

#include "process/child_process.h"
#include "run_environment.h"

namespace tandem::cli {

// How `tandem run` treats signals while the program runs (docs/RUN.md, Safety).
process::SignalPlan run_signal_plan();

// The child gets TANDEM_ROOT_PID=<its own pid> besides `environment`'s changes.
int run_child(process::Supervisor& supervisor, const std::vector<std::string>& command,
              const std::vector<EnvChange>& environment);

}  // namespace tandem::cli
