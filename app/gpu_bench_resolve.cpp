// The shared options of `tandem bench` and `tandem tune` resolved into BenchOptions, the rank count,
// the run's description and its JSON document (bench_cli.h). In the GPU commands module
// (gpu_commands.h): resolving asks for the visible GPUs.
#include "bench_cli.h"
#include "command_line.h"
#include "harness/case_loop.h"
#include "harness/run_description.h"
#include "ranks/local_ranks.h"
#include "ranks/process_rank.h"
#include "report/json_reporter.h"
#include "tandem/device.h"
#include "tandem/error.h"
#include "tandem/printable.h"

namespace tandem::cli {
namespace {

// resolve_ranks' checks.
int count_ranks(const bench::BenchOptions& options) {
  const int visible = visible_gpu_count();
  const bench::LaunchEnv& launch = options.launch;
  int nranks = 0;
  if (launch.is_process_mode()) {
    if (options.gpus && options.gpus != launch.world_size)
      TANDEM_USER_ERROR("--gpus " + std::to_string(options.gpus) + " but the launcher started " +
                        std::to_string(launch.world_size) + " ranks (" + launch.source + "), one GPU each");
    bench::choose_device(launch, options.launch_request, visible);  // a bad mapping fails before any rendezvous
    nranks = launch.world_size;
  } else {
    if (options.gpus > visible)
      TANDEM_USER_ERROR("--gpus " + std::to_string(options.gpus) + " but only " + std::to_string(visible) +
                        " GPU(s) are visible");
    nranks = options.gpus ? options.gpus : visible;
  }
  bench::validate_for_ranks(options, nranks);
  // Ranks on several nodes with nowhere to meet fail here, before any GPU work.
  if (launch.is_process_mode()) bench::planned_rendezvous(launch, options.launch_request);
  return nranks;
}

}  // namespace

bench::BenchOptions resolve_bench_options(const BenchCli& cli, const std::vector<OutputFile>& more_outputs) {
  // Everything here checks what the user gave: any error reads as one plain line.
  return checking_input([&] {
    bench::BenchOptions o = cli.options;
    o.dtype = parse_dtype(cli.dtype);
    if (!cli.policies.empty()) {
      o.policies = parse_policy_list(cli.policies);
      o.policies_given = true;
    }
    if (!cli.min_bytes.empty()) o.min_bytes = bench::parse_size(cli.min_bytes, "--minbytes");
    if (!cli.max_bytes.empty())
      o.max_bytes = bench::parse_size(cli.max_bytes, "--maxbytes");
    else if (!cli.min_bytes.empty())
      o.max_bytes = o.min_bytes;
    if (!cli.stream_bytes.empty()) {
      o.workload.stream_bytes = static_cast<int64_t>(bench::parse_size(cli.stream_bytes, "--stream-bytes"));
      TANDEM_CHECK_INPUT(o.workload.stream_bytes > 0,
                         "--stream-bytes must be positive (got " + quoted_value(cli.stream_bytes) + ")");
    }
    if (!cli.gemm_shape.empty()) bench::parse_gemm_shape(cli.gemm_shape, o.workload);
    if (cli.fixed_count) o.balance = false;
    TANDEM_CHECK_INPUT(cli.check == 0 || cli.check == 1,
                       "--check " + std::to_string(cli.check) + ": expected 1 (check every result) or 0");
    o.check = cli.check != 0;
    o.progress = !cli.quiet;
    o.launch = bench::detect_launch(o.launch_request.launch, bench::process_environment());
    bench::validate(o);  // before any GPU is touched: bad input fails the same way everywhere
    std::vector<OutputFile> outputs = {{"--json", o.json_path}, {"--trace", o.trace_path}};
    outputs.insert(outputs.end(), more_outputs.begin(), more_outputs.end());
    // Only rank 0 writes; the other ranks may not even share its file system.
    if (prints(o)) bench::check_output_files(outputs);
    return o;
  });
}

int resolve_ranks(const bench::BenchOptions& options) {
  return checking_input([&] { return count_ranks(options); });
}

bool prints(const bench::BenchOptions& options) { return bench::reports_results(options.launch); }

bench::RunInfo describe_run(const bench::BenchOptions& options, int nranks, const std::string& tool) {
  return bench::describe_run(options, nranks, tool, command_line());
}

void write_json(const std::string& path, const nlohmann::json& doc) { bench::write_results_json(path, doc); }

}  // namespace tandem::cli
