#pragma once
// What a run's header and JSON say about it (report/report.h RunInfo): versions, the GPU, the
// launch, and the resolved configuration as '#' lines, from the options the command line built.
#include <string>
#include <vector>

#include "harness/bench_options.h"
#include "report/report.h"

namespace tandem::bench {

// `tool`: "bench" or "tune" (tune chooses the policies itself: no "policies" line). `command`: the
// command line as typed (shell_command). Reads the GPU this process drives; no other GPU work.
RunInfo describe_run(const BenchOptions& options, int nranks, const std::string& tool, const std::string& command);
// The '#' header lines of a training-scenario run (configuration, timing, bound, check, one line per
// scenario).
std::vector<std::string> scenario_config_lines(const BenchOptions& options, int nranks);

}  // namespace tandem::bench
