#include "bench_cli.h"

#include "command_line.h"
#include "harness/run_description.h"
#include "harness/runner.h"
#include "harness/scenario_runner.h"
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
  if (bench::is_scenario(options.workloads.front())) bench::validate_scenarios(options, nranks);
  // Ranks on several nodes with nowhere to meet fail here, before any GPU work.
  if (launch.is_process_mode()) bench::planned_rendezvous(launch, options.launch_request);
  return nranks;
}

}  // namespace

void add_bench_options(CLI::App* cmd, const std::shared_ptr<BenchCli>& cli) {
  // nccl-tests style help: options in groups, each with its default (or what happens without it).
  auto& o = cli->options;
  const std::string max_bytes = bench::size_text(bench::kMaxBytes);
  const std::string max_iters = std::to_string(bench::kMaxIters);
  const std::string sizes = "Sizes and steps", what = "What to run", ranks = "Ranks and launch", output = "Output",
                    scenarios = "Scenarios (docs/WORKLOADS.md)";
  cmd->add_option("-b,--minbytes", cli->min_bytes,
                  "Smallest collective size, e.g. 64M: B, K, M, G (binary); at most " + max_bytes)
      ->default_str(bench::size_text(o.min_bytes))
      ->group(sizes);
  cmd->add_option("-e,--maxbytes", cli->max_bytes, "Largest collective size")->default_str("-b")->group(sizes);
  cmd->add_option("-f,--stepfactor", o.step_factor,
                  "Size multiplier between steps, from 1.01 to 1024; at most " + std::to_string(bench::kMaxSweepSizes) +
                      " sizes from -b to -e")
      ->capture_default_str()
      ->group(sizes);
  cmd->add_option("-n,--iters", o.iters, "Timed steps per measurement, from 1 to " + max_iters)
      ->capture_default_str()
      ->group(sizes);
  cmd->add_option("-w,--warmup,--warmup_iters", o.warmup,
                  "Untimed steps before each measurement, from 0 to " + max_iters)
      ->capture_default_str()
      ->group(sizes);
  cmd->add_option("-c,--check", cli->check, "Check every result under every policy (1/0)")
      ->capture_default_str()
      ->group(sizes);
  cmd->add_flag("--balance,!--no-balance", o.balance, "Choose the compute count so t_compute ~ t_comm (default: on)")
      ->group(sizes);
  cmd->add_flag("--balance-size", o.balance_size,
                "Then resize the collective until t_comm is within 5 % of t_compute, at most 3 times (for compute "
                "units too coarse to match it) (default: off)")
      ->group(sizes);
  cmd->add_option("--count", o.count, "Fixed compute units per step, from 1 to " + max_iters + " (turns --balance off)")
      ->default_str("set by --balance")
      ->group(sizes)
      ->each([cli](const std::string&) { cli->fixed_count = true; });

  cmd->add_option("--workload", o.workloads,
                  "Compute workloads: gemm, tiled-gemm, stream; or training scenarios (docs/WORKLOADS.md): "
                  "dp-backward, tp-mlp, tp-attention, fsdp, moe. Each once")
      ->delimiter(',')
      ->default_str("gemm,tiled-gemm,stream")
      ->group(what);
  cmd->add_option("--collective", o.collectives,
                  "Collectives: all-reduce, all-gather, reduce-scatter, all-to-all. Each once")
      ->delimiter(',')
      ->default_str("all-reduce")
      ->group(what);
  cmd->add_option("-d,--dtype,--datatype", cli->dtype, "bf16, fp16 or fp32 (collective and GEMM)")
      ->capture_default_str()
      ->group(what);
  cmd->add_option("--gemm-shape", cli->gemm_shape,
                  "MxNxK for gemm and tiled-gemm, each from 1 to " + std::to_string(bench::kMaxGemmDim))
      ->default_str("8192x8192x8192, tiled-gemm 4096x4096x512")
      ->group(what);
  cmd->add_option("--stream-bytes", cli->stream_bytes, "Bytes per stream array, from 1 to " + max_bytes)
      ->default_str("256M")
      ->group(what);
  cmd->add_flag("--in-place", o.in_place,
                "Collectives in place: all-gather input in its chunk of the output, all-reduce on one buffer, "
                "reduce-scatter output in its chunk of the input (not all-to-all) (default: out of place)")
      ->group(what);

  cmd->add_option("-g,--gpus", o.gpus,
                  "GPUs (ranks) to use, one thread each, at most " + std::to_string(bench::kMaxGpus))
      ->default_str("all visible")
      ->group(ranks);
  // Several processes (README "Several processes and nodes"): mpirun, torchrun, srun.
  auto& l = o.launch_request;
  cmd->add_option("--launch", l.launch,
                  "auto (from the launcher's environment), threads, mpi, torchrun, slurm or env; "
                  "launcher world sizes up to " +
                      std::to_string(bench::kMaxWorldSize))
      ->check(CLI::IsMember({"auto", "threads", "mpi", "torchrun", "slurm", "env"}))
      ->capture_default_str()
      ->group(ranks);
  cmd->add_option("--rendezvous", l.rendezvous, "Directory where one-process-per-rank runs meet (shared across nodes)")
      ->default_str("$TANDEM_RENDEZVOUS, NCCL_COMM_ID, MPI, or a folder under /tmp")
      ->group(ranks);
  cmd->add_option("--device", l.device,
                  "With one process per rank: this process's GPU, from 0 to " + std::to_string(bench::kMaxDevice))
      ->default_str("its local rank")
      ->group(ranks);
  cmd->add_flag("--allow-shared-gpu", l.allow_shared_gpu,
                "With one process per rank: let ranks share a GPU (default: off)")
      ->group(ranks);
  cmd->add_option("-T,--timeout", o.timeout_s,
                  "Seconds before an unfinished step aborts the communicators: above 0, at most 604800 (a week)")
      ->capture_default_str()
      ->check(decimal_number())
      ->group(ranks);

  cmd->add_option("--json", o.json_path,
                  "Write results as JSON (docs/BENCH_JSON.md); the file's folder must be writable before the run")
      ->default_str("none")
      ->group(output);
  cmd->add_flag("-q,--quiet", cli->quiet, "No progress lines on stderr (default: off, progress on)")->group(output);

  // Training scenarios (docs/WORKLOADS.md).
  auto& sc = o.scenario;
  cmd->add_option("--hidden", sc.hidden, "Model hidden size, 1 to 131072")->capture_default_str()->group(scenarios);
  cmd->add_option("--seq", sc.seq, "Tokens per micro-batch per rank, 1 to 1048576")
      ->capture_default_str()
      ->group(scenarios);
  cmd->add_option("--layers", sc.layers, "Transformer layers, 1 to 1024")->capture_default_str()->group(scenarios);
  cmd->add_option("--ffn", sc.ffn, "MLP width, up to 1048576")
      ->default_str("3.5 x hidden, rounded up to 128")
      ->group(scenarios);
  cmd->add_option("--heads", sc.heads, "Attention heads, up to 4096")->default_str("hidden / 128")->group(scenarios);
  cmd->add_option("--kv-heads", sc.kv_heads, "Key/value heads, up to 4096")
      ->default_str("min(8, heads)")
      ->group(scenarios);
  cmd->add_option("--bucket-mb", sc.bucket_mb, "dp-backward: DDP bucket cap in MiB, above 0, at most 1048576")
      ->capture_default_str()
      ->group(scenarios);
  cmd->add_option("--first-bucket-mb", sc.first_bucket_mb,
                  "dp-backward: DDP first-bucket cap in MiB, above 0, at most 1048576")
      ->capture_default_str()
      ->group(scenarios);
  cmd->add_option("--micro-batches", sc.micro_batches,
                  "tp-mlp, tp-attention, moe: interleaved micro-batches, 1 to 1024")
      ->capture_default_str()
      ->group(scenarios);
  cmd->add_flag("--sequence-parallel", sc.sequence_parallel,
                "tp-mlp, tp-attention: all-gather + reduce-scatter instead of all-reduce (default: off)")
      ->group(scenarios);
  cmd->add_option("--experts", sc.experts, "moe: experts in total, 1 to 4096")->capture_default_str()->group(scenarios);
  cmd->add_option("--top-k", sc.top_k, "moe: experts per token, 1 to --experts")
      ->capture_default_str()
      ->group(scenarios);
  cmd->add_option("--expert-ffn", sc.expert_ffn, "moe: expert MLP width, up to 1048576")
      ->default_str("--ffn")
      ->group(scenarios);
}

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

nlohmann::json results_json(const bench::RunInfo& info, const std::vector<bench::Row>& rows,
                            const std::vector<std::string>& notes, bool complete, bool scenarios) {
  return bench::results_json(info, rows, notes, complete, scenarios);
}

void write_json(const std::string& path, const nlohmann::json& doc) { bench::write_results_json(path, doc); }

}  // namespace tandem::cli
