// `tandem bench`: the paper's experiment on the visible GPUs. The command parses, resolves the
// options and chooses the reporters; measuring and reporting happen in bench/ (harness/bench_run.h).
#include <memory>

#include "bench_cli.h"
#include "commands.h"
#include "harness/bench_run.h"
#include "report/console_reporter.h"
#include "report/json_reporter.h"
#include "report/trace_reporter.h"

namespace tandem::cli {
namespace {

int run(const BenchCli& cli) {
  const bench::BenchOptions options = resolve_bench_options(cli);
  const int nranks = resolve_ranks(options);
  const bench::RunInfo info = describe_run(options, nranks, "bench");
  // The table on stdout (progress on stderr), then the --json and --trace files, in that order.
  bench::Reporters reporter;
  reporter.add(std::make_unique<bench::ConsoleReporter>(options.progress));
  if (!options.json_path.empty()) reporter.add(std::make_unique<bench::JsonReporter>(options.json_path));
  if (!options.trace_path.empty()) reporter.add(std::make_unique<bench::TraceReporter>(options.trace_path));
  // With one process per rank only rank 0 reports; every rank exits with the same status (every
  // process holds the rows, with wrong elements summed over all ranks).
  const auto outcome = bench::run_benchmark(options, nranks, info, reporter);
  return bench::passed(outcome.rows) ? 0 : 1;
}

}  // namespace

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
  cmd->callback([cli, &exit_code] { exit_code = run(*cli); });
}

}  // namespace tandem::cli
