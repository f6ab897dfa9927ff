// `tandem bench`, run: resolves the options and chooses the reporters; measuring and reporting happen
// in bench/ (harness/bench_run.h). In the GPU commands module (gpu_commands.h).
#include <memory>
#include <utility>

#include "bench_cli.h"
#include "gpu_commands.h"
#include "harness/bench_options.h"
#include "harness/bench_run.h"
#include "report/console_reporter.h"
#include "report/json_reporter.h"
#include "report/trace_reporter.h"

namespace tandem::cli {

int run_bench(const BenchCli& cli) {
  bench::BenchOptions options = resolve_bench_options(cli);
  const int nranks = resolve_ranks(options);
  // One rank has nothing to overlap: the run shows what one GPU can (bench_options.h plan_for_ranks).
  options = bench::plan_for_ranks(std::move(options), nranks);
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

}  // namespace tandem::cli
