// `tandem bench`: the paper's experiment on the visible GPUs.
#include <cuda_runtime.h>

#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "bench_cli.h"
#include "commands.h"
#include "harness/registry.h"
#include "harness/runner.h"
#include "harness/scenario_runner.h"
#include "harness/trace.h"
#include "tandem/build_info.h"
#include "tandem/cuda_check.h"
#include "tandem/device.h"
#include "tandem/printable.h"
#include "tandem/safe_file.h"

namespace tandem::cli {
namespace {

int run(const BenchCli& cli) {
  const bench::BenchOptions options = resolve_bench_options(cli);
  const int nranks = resolve_ranks(options);
  bench::RunInfo info = describe_run(options, nranks, "bench");
  // With one process per rank, only rank 0 prints and writes; every rank exits with the same status
  // (every process holds the rows, with wrong elements summed over all ranks).
  const bool printer = prints(options);
  if (printer) {
    std::fputs(bench::header_text(info).c_str(), stdout);
    std::fputs(bench::column_header_text().c_str(), stdout);
    std::fflush(stdout);
  }
  // Training scenarios (docs/WORKLOADS.md) have their own runner; validate() forbids mixing.
  const bool scenarios = bench::is_scenario(options.workloads.front());
  // Every row reaches the --json file as soon as it is measured, in a document marked incomplete, so
  // a run that is interrupted (Ctrl-C, a lost rank, a time-out) keeps what it measured; the last
  // write marks it complete. Rows are few and each takes seconds: rewriting the file costs nothing.
  std::vector<bench::Row> measured;
  bool warned = false;
  const bench::RowSink print_row = [&](const bench::Row& row) {
    std::fputs(bench::row_text(row).c_str(), stdout);
    std::fflush(stdout);
    if (!printer || options.json_path.empty()) return;
    measured.push_back(row);
    const std::string why = try_write_file_atomically(
        options.json_path, bench::json_text(results_json(info, measured, {}, false, scenarios), 2) + "\n");
    if (!why.empty() && !std::exchange(warned, true))
      std::fprintf(stderr, "tandem bench: warning: %s (retried after every row)\n", printable(why, 1000).c_str());
  };
  const bench::ProgressSink print_progress = [&](const std::string& line) {
    if (options.progress) std::fprintf(stderr, "tandem bench: %s\n", line.c_str());
  };
  const auto outcome = scenarios ? bench::run_scenarios(options, nranks, print_row, print_progress)
                                 : bench::run_bench(options, nranks, print_row, print_progress);
  info.hbm_bandwidth_gbps = outcome.hbm_bandwidth_gbps;
  if (printer) std::fputs(bench::footer_text(outcome.rows, outcome.notes).c_str(), stdout);
  if (printer && !options.json_path.empty())
    write_json(options.json_path, results_json(info, outcome.rows, outcome.notes, true, scenarios));
  if (printer && !options.trace_path.empty()) {
    // The run's identity as the JSON results carry it (docs/BENCH_JSON.md), without the rows.
    nlohmann::json about = bench::to_json(info, {}, {});
    about.erase("rows");
    about.erase("notes");
    bench::write_trace(options.trace_path, outcome.traces, about);
  }
  int64_t wrong = 0;
  for (const auto& r : outcome.rows) wrong += r.wrong;
  return wrong == 0 && !outcome.rows.empty() ? 0 : 1;
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
