#pragma once
// `tandem tune [options] -- CMD ARGS...`: the options of tuning a program, their parsing, and the
// call into the program tuner (program_tools/program_tuner.h). The benchmark's options do not apply
// and are refused; -o/--out, --json, -q/--quiet and -T/--timeout are shared with the benchmark tune.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tandem::cli {

struct ProgramTuneCli {
  std::vector<std::string> command;  // after --
  std::string metric;                // regex with one capture group; "" for wall time
  bool higher_is_better = false;
  std::string objective;   // --objective: "" for metric with --metric, else wall (program_tools/program_objective.h)
  std::string step_range;  // --step-range, for the timeline objectives
  int rounds = 3;
  std::string candidates;  // comma-separated policies; "" for the default list
  std::string logs;        // "" for a private folder under the temporary directory
};

// The options tuned by the shared ones: where the policy file and JSON go, the per-run timeout
// (given or not), and whether progress lines are printed.
struct SharedTuneOutputs {
  std::string policy_file;
  std::string json_path;
  std::optional<double> timeout_s;  // -T/--timeout, when given
  bool progress = true;
};

void add_program_tune_options(CLI::App* cmd, const std::shared_ptr<ProgramTuneCli>& cli);
// Refuses options given to `cmd` that only the benchmark tune reads (one plain line naming the first).
void refuse_benchmark_options(const CLI::App& cmd);
// Runs the tune; returns tandem's exit status (0 when every round ran, 130 when interrupted).
int run_program_tune(const ProgramTuneCli& cli, const SharedTuneOutputs& shared);

}  // namespace tandem::cli
