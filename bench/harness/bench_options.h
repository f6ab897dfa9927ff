#pragma once
// Options of `tandem bench`, with defaults that make the bare command run the paper's suite, and
// validation that needs no GPU (so bad input is rejected before any device is touched).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "harness/scenario.h"
#include "harness/workload.h"
#include "ranks/launch_env.h"
#include "tandem/dtype.h"
#include "tandem/policy.h"

namespace tandem::bench {

// Bounds of the numeric options (checked by validate(), listed in --help). They keep every value
// far from where arithmetic wraps or a loop never ends, and well above what any GPU can use.
inline constexpr uint64_t kMaxBytes = 1ull << 40;  // -b, -e, --stream-bytes: 1 TiB
inline constexpr double kMinStepFactor = 1.01;     // -f: a smaller one repeats sizes
inline constexpr double kMaxStepFactor = 1024;
inline constexpr size_t kMaxSweepSizes = 100;            // sizes from -b to -e by -f
inline constexpr int kMaxIters = 1000000;                // -n, -w, --count
inline constexpr double kMaxTimeoutS = 7 * 24 * 3600.0;  // --timeout: one week
inline constexpr int64_t kMaxGemmDim = 1 << 20;          // each of --gemm-shape's M, N, K
inline constexpr int kMaxDevice = 4095;                  // --device
// --gpus, and the world size a launcher may give (ranks/launch_env.h).
inline constexpr int kMaxGpus = kMaxWorldSize;

struct BenchOptions {
  int gpus = 0;  // 0: every visible GPU
  std::vector<std::string> workloads{"gemm", "tiled-gemm", "stream"};
  std::vector<std::string> collectives{"all-reduce"};
  std::vector<OverlapPolicy> policies;  // empty: default_policies()
  bool policies_given = false;          // given explicitly: a policy that cannot apply is an error
  DType dtype = DType::BF16;
  uint64_t min_bytes = 512ull << 20;
  uint64_t max_bytes = 512ull << 20;
  double step_factor = 2.0;
  WorkloadOptions workload;
  ScenarioOptions scenario;  // training scenarios (harness/scenario.h); used when workloads name them
  bool balance = true;       // choose the compute count so that t_compute ~ t_comm
  int count = 1;             // compute units per step when not balancing
  // After balancing the count, resize the collective so that t_comm ~ t_compute (within 5 %): the
  // requested size is then only the starting point, and rows report the size measured.
  bool balance_size = false;
  // Collectives in NCCL's in-place form (all-gather input in its chunk of the output, all-reduce over
  // one buffer, reduce-scatter output in its chunk of the input), as FSDP2 and Megatron's distributed
  // optimizer issue all-gathers. All-to-all has none.
  bool in_place = false;
  bool check = true;
  int iters = 20;
  int warmup = 5;
  double timeout_s = 120;
  std::string json_path;
  // `tandem bench --trace FILE` (training scenarios): one more iteration per policy, each operation
  // bracketed by events, written as a Chrome trace (report/trace.h).
  std::string trace_path;
  bool progress = true;
  // How this process takes part (ranks/launch_env.h): threads over the visible GPUs, or one rank of
  // a launcher's world (mpirun, torchrun, srun), and what the command line asked for.
  LaunchRequest launch_request;
  LaunchEnv launch;
  // `tandem bench` on one rank (plan_for_ranks): each policy's compute tax, no overlap figures.
  bool one_gpu = false;
};

// The paper's controls and their combinations, as the suite runs them.
std::vector<OverlapPolicy> default_policies();
const std::vector<OverlapPolicy>& effective_policies(const BenchOptions&);
// The controls that change the computation itself, each alone: what one GPU can show of them.
std::vector<OverlapPolicy> one_gpu_policies();
// `tandem bench` on `nranks` ranks. One rank has no collective to overlap (NCCL copies locally), so
// the run measures each policy's compute tax instead (one_gpu), over one_gpu_policies() unless the
// user named policies. Any other rank count: `options` unchanged.
BenchOptions plan_for_ranks(BenchOptions options, int nranks);
// What the header of a one-GPU run says first: what one GPU can and cannot show, and how to see the
// rest.
std::vector<std::string> one_gpu_lines();
// min, min*f, ... up to max (nccl-tests' -b/-e/-f).
std::vector<uint64_t> size_sweep(uint64_t min_bytes, uint64_t max_bytes, double factor);
// "4096", "64K", "256M", "1G", "1GiB", "512MB": binary multiples, at most kMaxBytes. Throws
// tandem::UserError naming `flag` and the text on anything else (trailing junk, overflow).
uint64_t parse_size(const std::string& text, const std::string& flag = "size");
// MxNxK, each from 1 to kMaxGemmDim, nothing after K. Throws tandem::UserError.
void parse_gemm_shape(const std::string& text, WorkloadOptions& workload);
// Throws tandem::UserError naming the first bad option: unknown or repeated names, values out of
// their bounds (above), combinations that cannot run.
void validate(const BenchOptions& options);
// The result files a run will write, as (flag, path); empty paths are skipped. Each must be
// writable now (tandem::require_writable: its folder exists and is writable, it is not a folder, a
// link or a device), and no two may be the same file. Throws tandem::UserError.
void check_output_files(const std::vector<std::pair<std::string, std::string>>& files);
// The checks that depend on the rank count (collective sizes split across ranks, scenarios' shapes).
void validate_for_ranks(const BenchOptions& options, int nranks);

}  // namespace tandem::bench
