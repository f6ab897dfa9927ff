// `tandem bench`: the paper's experiment on the visible GPUs.
#include <cuda_runtime.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "command_line.h"
#include "commands.h"
#include "harness/registry.h"
#include "harness/runner.h"
#include "tandem/build_info.h"
#include "tandem/cuda_check.h"
#include "tandem/device.h"

namespace tandem::cli {
namespace {

struct BenchCli {
  bench::BenchOptions options;
  std::string policies;
  std::string dtype = "bf16";
  std::string min_bytes, max_bytes, stream_bytes, gemm_shape;
  int check = 1;
  bool quiet = false;
  bool fixed_count = false;
};

void parse_gemm_shape(const std::string& text, bench::WorkloadOptions& w) {
  long long m = 0, n = 0, k = 0;
  char x1 = 0, x2 = 0;
  if (std::sscanf(text.c_str(), "%lld%c%lld%c%lld", &m, &x1, &n, &x2, &k) != 5 || x1 != 'x' || x2 != 'x' || m <= 0 ||
      n <= 0 || k <= 0)
    TANDEM_THROW("bad --gemm-shape '" + text + "'; expected MxNxK, e.g. 8192x8192x4096");
  w.m = m;
  w.n = n;
  w.k = k;
}

bench::BenchOptions resolve(const BenchCli& cli) {
  bench::BenchOptions o = cli.options;
  o.dtype = bench::parse_dtype(cli.dtype);
  if (!cli.policies.empty()) {
    o.policies = parse_policy_list(cli.policies);
    o.policies_given = true;
  }
  if (!cli.min_bytes.empty()) o.min_bytes = bench::parse_size(cli.min_bytes);
  if (!cli.max_bytes.empty()) o.max_bytes = bench::parse_size(cli.max_bytes);
  else if (!cli.min_bytes.empty()) o.max_bytes = o.min_bytes;
  if (!cli.stream_bytes.empty()) o.workload.stream_bytes = static_cast<int64_t>(bench::parse_size(cli.stream_bytes));
  if (!cli.gemm_shape.empty()) parse_gemm_shape(cli.gemm_shape, o.workload);
  if (cli.fixed_count) o.balance = false;
  o.check = cli.check != 0;
  o.progress = !cli.quiet;
  return o;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

bench::RunInfo describe_run(const bench::BenchOptions& o, int nranks) {
  cudaDeviceProp prop{};
  TANDEM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const SoftwareVersions v = software_versions();
  bench::RunInfo info;
  info.tandem_version = TANDEM_VERSION_STRING;
  info.commit = TANDEM_GIT_COMMIT;
  info.command = command_line();
  info.date = bench::utc_now_iso8601();
  info.gpu = prop.name;
  info.gpus = nranks;
  info.driver = v.driver_text();
  info.cuda = v.runtime_text();
  info.nccl = v.nccl_text();
  std::string policies;
  for (const auto& p : bench::effective_policies(o)) policies += (policies.empty() ? "" : ",") + to_string(p);
  info.config = {
      "workloads " + join(o.workloads),
      "collectives " + join(o.collectives) + ", " + bench::to_string(o.dtype) + ", " + std::to_string(o.min_bytes) +
          ".." + std::to_string(o.max_bytes) + " B, factor " + std::to_string(o.step_factor),
      "policies  " + policies,
      std::string("balance   ") + (o.balance ? "on (compute count chosen so that t_compute ~ t_comm)"
                                             : "off, count " + std::to_string(o.count)),
      "timing    " + std::to_string(o.warmup) + " warm-up + " + std::to_string(o.iters) +
          " timed steps, median of the slowest rank; events on the GPU",
      std::string("check     ") + (o.check ? "on: collectives exact, GEMMs against an fp32 reference, every policy"
                                           : "off"),
  };
  for (const auto& name : o.workloads) {
    bench::WorkloadOptions w = o.workload;
    w.dtype = o.dtype;
    info.config.push_back("workload  " + bench::find_workload(name).make(w)->describe());
  }
  return info;
}

int run(const BenchCli& cli) {
  const bench::BenchOptions options = resolve(cli);
  bench::validate(options);  // before any GPU is touched: bad input fails the same way everywhere
  const int visible = visible_gpu_count();
  if (options.gpus > visible)
    TANDEM_THROW("--gpus " + std::to_string(options.gpus) + " but only " + std::to_string(visible) +
                 " GPU(s) are visible");
  const int nranks = options.gpus ? options.gpus : visible;
  bench::validate_for_ranks(options, nranks);

  bench::RunInfo info = describe_run(options, nranks);
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
  if (!options.json_path.empty()) {
    std::ofstream out(options.json_path);
    if (!out) TANDEM_THROW("cannot write --json file '" + options.json_path + "'");
    out << bench::to_json(info, outcome.rows, outcome.notes).dump(2) << "\n";
    if (!out) TANDEM_THROW("writing --json file '" + options.json_path + "' failed");
  }
  int64_t wrong = 0;
  for (const auto& r : outcome.rows) wrong += r.wrong;
  return wrong == 0 && !outcome.rows.empty() ? 0 : 1;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto cli = std::make_shared<BenchCli>();
  auto& o = cli->options;
  CLI::App* cmd = app.add_subcommand("bench", "Measure compute/collective overlap under each policy (default: the paper's suite)");
  cmd->add_option("-g,--gpus", o.gpus, "GPUs (ranks) to use, one thread each; default: all visible");
  cmd->add_option("--workload", o.workloads, "Compute workloads: gemm, tiled-gemm, stream")->delimiter(',');
  cmd->add_option("--collective", o.collectives, "Collectives: all-reduce, all-gather, reduce-scatter, all-to-all")
      ->delimiter(',');
  cmd->add_option("-p,--policy", cli->policies, "Comma-separated policies (see docs/POLICIES.md); default: the paper's set");
  cmd->add_option("-d,--dtype", cli->dtype, "bf16, fp16 or fp32 (collective and GEMM)");
  cmd->add_option("-b,--minbytes", cli->min_bytes, "Smallest collective size, e.g. 64M (default 512M)");
  cmd->add_option("-e,--maxbytes", cli->max_bytes, "Largest collective size (default: --minbytes)");
  cmd->add_option("-f,--stepfactor", o.step_factor, "Size multiplier between steps");
  cmd->add_option("--gemm-shape", cli->gemm_shape, "MxNxK for gemm and tiled-gemm (defaults 8192x8192x4096, 4096x4096x512)");
  cmd->add_option("--stream-bytes", cli->stream_bytes, "Bytes per stream array (default 256M)");
  cmd->add_flag("--balance,!--no-balance", o.balance, "Choose the compute count so t_compute ~ t_comm (default on)");
  cmd->add_option("--count", o.count, "Fixed compute units per step (turns --balance off)")
      ->each([cli](const std::string&) { cli->fixed_count = true; });
  cmd->add_option("-c,--check", cli->check, "Check every result under every policy (1/0, default 1)");
  cmd->add_option("-n,--iters", o.iters, "Timed steps per measurement");
  cmd->add_option("--warmup", o.warmup, "Untimed steps before each measurement");
  cmd->add_option("--timeout", o.timeout_s, "Seconds before an unfinished step aborts the communicators");
  cmd->add_option("--json", o.json_path, "Write results as JSON (docs/BENCH_JSON.md)");
  cmd->add_flag("-q,--quiet", cli->quiet, "No progress lines on stderr");
  cmd->callback([cli, &exit_code] { exit_code = run(*cli); });
}

}  // namespace tandem::cli
