#pragma once
// Runs the command of `tandem run` as a child process and returns what a shell would: its exit
// status, or 128 + the signal that killed it (127 if it could not be executed).
#include <string>
#include <vector>

#include "run_environment.h"

namespace tandem::cli {

int run_child(const std::vector<std::string>& command, const std::vector<EnvChange>& environment);

}  // namespace tandem::cli
