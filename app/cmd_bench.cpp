// `tandem bench`: the paper's experiment on the visible GPUs.
#include <cuda_runtime.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "bench_cli.h"
#include "commands.h"
#include "harness/registry.h"
#include "harness/runner.h"
#include "tandem/build_info.h"
#include "tandem/cuda_check.h"
#include "tandem/device.h"

namespace tandem::cli {
namespace {

int run(const BenchCli& cli) {
  const bench::BenchOptions options = resolve_bench_options(cli);
  const int nranks = resolve_ranks(options);
  bench::RunInfo info = describe_run(options, nranks, "bench");
  std::fputs(bench::header_text(info).c_str(), stdout);
  std::fputs(bench::column_header_text().c_str(), stdout);
  std::fflush(stdout);
  const auto outcome = bench::run_bench(
      options, nranks,
      [](const bench::Row& row) {
        std::fputs(bench::row_text(row).c_str(), stdout);
        std::fflush(stdout);
      },
      [&](const std::string& line) {
        if (options.progress) std::fprintf(stderr, "tandem bench: %s\n", line.c_str());
      });
  info.hbm_bandwidth_gbps = outcome.hbm_bandwidth_gbps;
  std::fputs(bench::footer_text(outcome.rows, outcome.notes).c_str(), stdout);
  if (!options.json_path.empty()) write_json(options.json_path, bench::to_json(info, outcome.rows, outcome.notes));
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
  cmd->callback([cli, &exit_code] { exit_code = run(*cli); });
}

}  // namespace tandem::cli
