// `tandem bench`: the paper's experiment on the visible GPUs. Its options; what it runs is
// gpu_bench.cpp, in the GPU commands module (gpu_commands.h).
#include <memory>

#include "bench_cli.h"
#include "commands.h"
#include "gpu_commands.h"

namespace tandem::cli {

void add_bench_command(CLI::App& app, int& exit_code) {
  auto cli = std::make_shared<BenchCli>();
  CLI::App* cmd =
      app.add_subcommand("bench", "Measure compute/collective overlap under each policy (default: the paper's suite)");
  add_bench_options(cmd, cli);
  cmd->add_option("-p,--policy", cli->policies, "Comma-separated policies, each once (see docs/POLICIES.md)")
      ->default_str("the paper's set")
      ->group("What to run");
  cmd->add_option("--trace", cli->options.trace_path,
                  "Write one more iteration per policy (a scenario's operations, or a microbenchmark's compute "
                  "units and collective) as a Chrome trace of every rank's streams (open in ui.perfetto.dev); "
                  "the file's folder must be writable before the run")
      ->default_str("none")
      ->group("Output");
  cmd->callback([cli, &exit_code] { exit_code = gpu_commands().bench(*cli); });
}

}  // namespace tandem::cli
