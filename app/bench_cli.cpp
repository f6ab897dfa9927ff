#include "bench_cli.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <fstream>

#include "command_line.h"
#include "harness/registry.h"
#include "harness/runner.h"
#include "tandem/build_info.h"
#include "tandem/cuda_check.h"
#include "tandem/device.h"

namespace tandem::cli {
namespace {

void parse_gemm_shape(const std::string& text, bench::WorkloadOptions& w) {
  long long m = 0, n = 0, k = 0;
  char x1 = 0, x2 = 0;
  if (std::sscanf(text.c_str(), "%lld%c%lld%c%lld", &m, &x1, &n, &x2, &k) != 5 || x1 != 'x' || x2 != 'x' || m <= 0 ||
      n <= 0 || k <= 0)
    TANDEM_THROW("bad --gemm-shape '" + text + "'; expected MxNxK, e.g. 8192x8192x8192");
  w.m = m;
  w.n = n;
  w.k = k;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

void add_bench_options(CLI::App* cmd, const std::shared_ptr<BenchCli>& cli) {
  auto& o = cli->options;
  cmd->add_option("-g,--gpus", o.gpus, "GPUs (ranks) to use, one thread each; default: all visible");
  cmd->add_option("--workload", o.workloads, "Compute workloads: gemm, tiled-gemm, stream")->delimiter(',');
  cmd->add_option("--collective", o.collectives, "Collectives: all-reduce, all-gather, reduce-scatter, all-to-all")
      ->delimiter(',');
  cmd->add_option("-d,--dtype", cli->dtype, "bf16, fp16 or fp32 (collective and GEMM)");
  cmd->add_option("-b,--minbytes", cli->min_bytes, "Smallest collective size, e.g. 64M (default 512M)");
  cmd->add_option("-e,--maxbytes", cli->max_bytes, "Largest collective size (default: --minbytes)");
  cmd->add_option("-f,--stepfactor", o.step_factor, "Size multiplier between steps");
  cmd->add_option("--gemm-shape", cli->gemm_shape, "MxNxK for gemm and tiled-gemm (defaults 8192x8192x8192, 4096x4096x512)");
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
}

bench::BenchOptions resolve_bench_options(const BenchCli& cli) {
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
  bench::validate(o);  // before any GPU is touched: bad input fails the same way everywhere
  return o;
}

int resolve_ranks(const bench::BenchOptions& options) {
  const int visible = visible_gpu_count();
  if (options.gpus > visible)
    TANDEM_THROW("--gpus " + std::to_string(options.gpus) + " but only " + std::to_string(visible) +
                 " GPU(s) are visible");
  const int nranks = options.gpus ? options.gpus : visible;
  bench::validate_for_ranks(options, nranks);
  return nranks;
}

bench::RunInfo describe_run(const bench::BenchOptions& o, int nranks, const std::string& tool) {
  cudaDeviceProp prop{};
  TANDEM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const SoftwareVersions v = software_versions();
  bench::RunInfo info;
  info.tool = tool;
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
      "collectives " + join(o.collectives) + ", " + bench::to_string(o.dtype) + ", " + bench::size_text(o.min_bytes) +
          ".." + bench::size_text(o.max_bytes) + ", factor " + std::to_string(o.step_factor).substr(0, 4),
      std::string("balance   ") + (o.balance ? "on (compute count chosen so that t_compute ~ t_comm)"
                                             : "off, count " + std::to_string(o.count)),
      "timing    " + std::to_string(o.warmup) + " warm-up + " + std::to_string(o.iters) +
          " timed steps, median of the slowest rank; events on the GPU",
      std::string("check     ") + (o.check ? "on: collectives exact, GEMMs against an fp32 reference, every policy"
                                           : "off"),
  };
  if (tool == "bench") info.config.insert(info.config.begin() + 2, "policies  " + policies);
  for (const auto& name : o.workloads) {
    bench::WorkloadOptions w = o.workload;
    w.dtype = o.dtype;
    info.config.push_back("workload  " + bench::find_workload(name).make(w)->describe());
  }
  return info;
}

void write_json(const std::string& path, const nlohmann::json& doc) {
  std::ofstream out(path);
  if (!out) TANDEM_THROW("cannot write JSON file '" + path + "'");
  out << doc.dump(2) << "\n";
  if (!out) TANDEM_THROW("writing JSON file '" + path + "' failed");
}

}  // namespace tandem::cli
