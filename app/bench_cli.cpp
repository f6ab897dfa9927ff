// The options `tandem bench` and `tandem tune` share (bench_cli.h). Only their definitions: what
// resolves them needs the GPU libraries and is gpu_bench_resolve.cpp, in the GPU commands module.
#include "bench_cli.h"

#include "command_line.h"

namespace tandem::cli {

void add_bench_options(CLI::App* cmd, const std::shared_ptr<BenchCli>& cli) {
  // nccl-tests style help: options in groups, each with its default (or what happens without it).
  auto& o = cli->options;
  const std::string max_bytes = bench::size_text(bench::kMaxBytes);
  const std::string max_iters = std::to_string(bench::kMaxIters);
  const std::string sizes = "Sizes and steps", what = "What to run", ranks = "Ranks and launch", output = "Output",
                    scenarios = "Scenarios (docs/WORKLOADS.md)";
  // Each block of options below goes into its group; the options added after these keep the group they had.
  const std::string previous_group = cmd->option_defaults()->get_group();
  cmd->option_defaults()->group(sizes);
  cmd->add_option("-b,--minbytes", cli->min_bytes,
                  "Smallest collective size, e.g. 64M: B, K, M, G (binary); at most " + max_bytes)
      ->default_str(bench::size_text(o.min_bytes));
  cmd->add_option("-e,--maxbytes", cli->max_bytes, "Largest collective size")->default_str("-b");
  cmd->add_option("-f,--stepfactor", o.step_factor,
                  "Size multiplier between steps, from 1.01 to 1024; at most " + std::to_string(bench::kMaxSweepSizes) +
                      " sizes from -b to -e")
      ->capture_default_str();
  cmd->add_option("-n,--iters", o.iters, "Timed steps per measurement, from 1 to " + max_iters)->capture_default_str();
  cmd->add_option("-w,--warmup,--warmup_iters", o.warmup,
                  "Untimed steps before each measurement, from 0 to " + max_iters)
      ->capture_default_str();
  cmd->add_option("-c,--check", cli->check, "Check every result under every policy (1/0)")->capture_default_str();
  cmd->add_flag("--balance,!--no-balance", o.balance, "Choose the compute count so t_compute ~ t_comm (default: on)");
  cmd->add_flag("--balance-size", o.balance_size,
                "Then resize the collective until t_comm is within 5 % of t_compute, at most 3 times (for compute "
                "units too coarse to match it) (default: off)");
  cmd->add_option("--count", o.count, "Fixed compute units per step, from 1 to " + max_iters + " (turns --balance off)")
      ->default_str("set by --balance")
      ->each([cli](const std::string&) { cli->fixed_count = true; });

  cmd->option_defaults()->group(what);
  cmd->add_option("--workload", o.workloads,
                  "Compute workloads: gemm, tiled-gemm, stream; or training scenarios (docs/WORKLOADS.md): "
                  "dp-backward, tp-mlp, tp-attention, fsdp, moe. Each once")
      ->delimiter(',')
      ->default_str("gemm,tiled-gemm,stream");
  cmd->add_option("--collective", o.collectives,
                  "Collectives: all-reduce, all-gather, reduce-scatter, all-to-all. Each once")
      ->delimiter(',')
      ->default_str("all-reduce");
  cmd->add_option("-d,--dtype,--datatype", cli->dtype, "bf16, fp16 or fp32 (collective and GEMM)")
      ->capture_default_str();
  cmd->add_option("--gemm-shape", cli->gemm_shape,
                  "MxNxK for gemm and tiled-gemm, each from 1 to " + std::to_string(bench::kMaxGemmDim))
      ->default_str("8192x8192x8192, tiled-gemm 4096x4096x512");
  cmd->add_option("--stream-bytes", cli->stream_bytes, "Bytes per stream array, from 1 to " + max_bytes)
      ->default_str("256M");
  cmd->add_flag("--in-place", o.in_place,
                "Collectives in place: all-gather input in its chunk of the output, all-reduce on one buffer, "
                "reduce-scatter output in its chunk of the input (not all-to-all) (default: out of place)");

  cmd->option_defaults()->group(ranks);
  cmd->add_option("-g,--gpus", o.gpus,
                  "GPUs (ranks) to use, one thread each, at most " + std::to_string(bench::kMaxGpus))
      ->default_str("all visible");
  // Several processes (README "Several processes and nodes"): mpirun, torchrun, srun.
  auto& l = o.launch_request;
  cmd->add_option("--launch", l.launch,
                  "auto (from the launcher's environment), threads, mpi, torchrun, slurm or env; "
                  "launcher world sizes up to " +
                      std::to_string(bench::kMaxWorldSize))
      ->check(CLI::IsMember({"auto", "threads", "mpi", "torchrun", "slurm", "env"}))
      ->capture_default_str();
  cmd->add_option("--rendezvous", l.rendezvous, "Directory where one-process-per-rank runs meet (shared across nodes)")
      ->default_str("$TANDEM_RENDEZVOUS, NCCL_COMM_ID, MPI, or a folder under /tmp");
  cmd->add_option("--device", l.device,
                  "With one process per rank: this process's GPU, from 0 to " + std::to_string(bench::kMaxDevice))
      ->default_str("its local rank");
  cmd->add_flag("--allow-shared-gpu", l.allow_shared_gpu,
                "With one process per rank: let ranks share a GPU (default: off)");
  cmd->add_option("-T,--timeout", o.timeout_s,
                  "Seconds before an unfinished step aborts the communicators: above 0, at most 604800 (a week)")
      ->capture_default_str()
      ->check(decimal_number());

  cmd->option_defaults()->group(output);
  cmd->add_option("--json", o.json_path,
                  "Write results as JSON (docs/BENCH_JSON.md); the file's folder must be writable before the run")
      ->default_str("none");
  cmd->add_flag("-q,--quiet", cli->quiet, "No progress lines on stderr (default: off, progress on)");

  cmd->option_defaults()->group(scenarios);
  // Training scenarios (docs/WORKLOADS.md).
  auto& sc = o.scenario;
  cmd->add_option("--hidden", sc.hidden, "Model hidden size, 1 to 131072")->capture_default_str();
  cmd->add_option("--seq", sc.seq, "Tokens per micro-batch per rank, 1 to 1048576")->capture_default_str();
  cmd->add_option("--layers", sc.layers, "Transformer layers, 1 to 1024")->capture_default_str();
  cmd->add_option("--ffn", sc.ffn, "MLP width, up to 1048576")->default_str("3.5 x hidden, rounded up to 128");
  cmd->add_option("--heads", sc.heads, "Attention heads, up to 4096")->default_str("hidden / 128");
  cmd->add_option("--kv-heads", sc.kv_heads, "Key/value heads, up to 4096")->default_str("min(8, heads)");
  cmd->add_option("--bucket-mb", sc.bucket_mb, "dp-backward: DDP bucket cap in MiB, above 0, at most 1048576")
      ->capture_default_str();
  cmd->add_option("--first-bucket-mb", sc.first_bucket_mb,
                  "dp-backward: DDP first-bucket cap in MiB, above 0, at most 1048576")
      ->capture_default_str();
  cmd->add_option("--micro-batches", sc.micro_batches,
                  "tp-mlp, tp-attention, moe: interleaved micro-batches, 1 to 1024")
      ->capture_default_str();
  cmd->add_flag("--sequence-parallel", sc.sequence_parallel,
                "tp-mlp, tp-attention: all-gather + reduce-scatter instead of all-reduce (default: off)");
  cmd->add_option("--experts", sc.experts, "moe: experts in total, 1 to 4096")->capture_default_str();
  cmd->add_option("--top-k", sc.top_k, "moe: experts per token, 1 to --experts")->capture_default_str();
  cmd->add_option("--expert-ffn", sc.expert_ffn, "moe: expert MLP width, up to 1048576")->default_str("--ffn");
  cmd->option_defaults()->group(previous_group);
}

}  // namespace tandem::cli
