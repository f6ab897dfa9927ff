// `tandem bench`: the paper's experiment on the visible GPUs.
#include <cuda_runtime.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "bench_cli.h"
#include "commands.h"
#include "harness/registry.h"
#include "harness/runner.h"
#include "harness/scenario_runner.h"
#include "harness/trace.h"
#include "tandem/build_info.h"
#include "tandem/cuda_check.h"
#include "tandem/device.h"

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
  const bench::RowSink print_row = [](const bench::Row& row) {
    std::fputs(bench::row_text(row).c_str(), stdout);
    std::fflush(stdout);
  };
  const bench::ProgressSink print_progress = [&](const std::string& line) {
    if (options.progress) std::fprintf(stderr, "tandem bench: %s\n", line.c_str());
  };
  // Training scenarios (docs/WORKLOADS.md) have their own runner; validate() forbids mixing.
  const bool scenarios = bench::is_scenario(options.workloads.front());
  const auto outcome = scenarios ? bench::run_scenarios(options, nranks, print_row, print_progress)
                                 : bench::run_bench(options, nranks, print_row, print_progress);
  info.hbm_bandwidth_gbps = outcome.hbm_bandwidth_gbps;
  if (printer) std::fputs(bench::footer_text(outcome.rows, outcome.notes).c_str(), stdout);
  if (printer && !options.json_path.empty()) {
    auto doc = bench::to_json(info, outcome.rows, outcome.notes);
    if (scenarios) bench::add_scenario_json_fields(doc);
    write_json(options.json_path, doc);
  }
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
  CLI::App* cmd = app.add_subcommand("bench", "Measure compute/collective overlap under each policy (default: the paper's suite)");
  add_bench_options(cmd, cli);
  cmd->add_option("-p,--policy", cli->policies, "Comma-separated policies (see docs/POLICIES.md); default: the paper's set");
  cmd->add_option("--trace", cli->options.trace_path,
                  "Scenarios: write one more iteration per policy as a Chrome trace of every operation on every "
                  "rank's streams (open in ui.perfetto.dev)");
  cmd->callback([cli, &exit_code] { exit_code = run(*cli); });
}

}  // namespace tandem::cli
