#include "harness/bench_options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include "harness/case_loop.h"
#include "harness/checked_collective.h"
#include "harness/registry.h"
#include "tandem/error.h"
#include "tandem/printable.h"
#include "tandem/safe_file.h"
#include "tandem/text.h"

namespace tandem::bench {

std::vector<OverlapPolicy> default_policies() {
  return parse_policy_list(
      "sequential,concurrent,priority,comm-first,comm-first+priority,shape:auto,shape:auto+priority,"
      "shape:1+priority,shape:2+priority,shape:3+priority");
}

const std::vector<OverlapPolicy>& effective_policies(const BenchOptions& o) {
  static const std::vector<OverlapPolicy> defaults = default_policies();
  return o.policies.empty() ? defaults : o.policies;
}

std::vector<OverlapPolicy> one_gpu_policies() {
  return parse_policy_list("priority,shape:1,shape:2,shape:3,sm-target:96,sm-target:116,sm-target:124,green:96");
}

BenchOptions plan_for_ranks(BenchOptions options, int nranks) {
  if (nranks != 1) return options;
  options.one_gpu = true;
  if (!options.policies_given) options.policies = one_gpu_policies();
  return options;
}

std::vector<std::string> one_gpu_lines() {
  return {
      "one GPU   no collective to overlap: on one rank NCCL copies locally and launches no kernel, so no overlap "
      "figure (efficiency, reduction, slowdown) means anything here",
      "one GPU   shown instead: each policy's compute tax (the workloads alone under the policy against the "
      "workloads alone in the default configuration, with the spread), what a policy costs a step where nothing is "
      "in flight, and the residency plan of `tandem plan` for this GPU",
      "one GPU   the tax is that of the control on every launch, as `tandem bench` applies it; `tandem run` applies "
      "shape and sm-target by default only beside outstanding collectives",
      "one GPU   overlap needs two or more GPUs: run `tandem bench` on a machine with them, or across hosts with "
      "`mpirun -np 2 -H host1:1,host2:1 tandem bench` (docs/LAUNCHERS.md); --allow-shared-gpu with several ranks "
      "on this one GPU checks correctness only",
  };
}

std::vector<uint64_t> size_sweep(uint64_t min_bytes, uint64_t max_bytes, double factor) {
  std::vector<uint64_t> sizes;
  for (double s = static_cast<double>(min_bytes); s <= static_cast<double>(max_bytes) * (1 + 1e-9); s *= factor) {
    sizes.push_back(static_cast<uint64_t>(std::llround(s)));
    if (factor <= 1) break;
  }
  return sizes;
}

namespace {

// Every name of a list once: a repeated one would measure the same case twice under one label.
void require_distinct(const std::vector<std::string>& names, const std::string& flag) {
  std::set<std::string> seen;
  for (const auto& name : names)
    TANDEM_CHECK_INPUT(seen.insert(name).second, flag + " lists " + quoted_value(name) + " twice; give each once");
}

void require_in_range(int64_t value, int64_t least, int64_t most, const std::string& flag) {
  TANDEM_CHECK_INPUT(value >= least && value <= most, flag + " " + std::to_string(value) + " is out of bounds: from " +
                                                          std::to_string(least) + " to " + std::to_string(most));
}

// NaN and infinities fail every comparison that matters here, so the test is written to reject them.
void require_finite_in_range(double value, double least_exclusive, double most, const std::string& flag,
                             const std::string& unit) {
  TANDEM_CHECK_INPUT(std::isfinite(value) && value > least_exclusive && value <= most,
                     flag + " " + number(value) + " is out of bounds: " + unit + " above " + number(least_exclusive) +
                         ", at most " + number(most));
}

void validate_sweep(const BenchOptions& o) {
  TANDEM_CHECK_INPUT(o.min_bytes > 0, "--minbytes must be positive");
  TANDEM_CHECK_INPUT(o.min_bytes <= kMaxBytes && o.max_bytes <= kMaxBytes,
                     "--minbytes and --maxbytes must be at most " + size_text(kMaxBytes));
  TANDEM_CHECK_INPUT(o.max_bytes >= o.min_bytes, "--maxbytes (" + std::to_string(o.max_bytes) +
                                                     ") is below --minbytes (" + std::to_string(o.min_bytes) + ")");
  TANDEM_CHECK_INPUT(std::isfinite(o.step_factor) && o.step_factor >= kMinStepFactor && o.step_factor <= kMaxStepFactor,
                     "--stepfactor " + number(o.step_factor) + " is out of bounds: from " + number(kMinStepFactor) +
                         " to " + number(kMaxStepFactor));
  // Counted on the sweep itself, the one the run measures: a count worked out with logarithms
  // misses the sweep's own tolerance at the last size. The bounds above keep it short (at most
  // log(kMaxBytes) / log(kMinStepFactor) + 1, about 2800 sizes) before it is checked.
  const auto sizes = size_sweep(o.min_bytes, o.max_bytes, o.step_factor);
  TANDEM_CHECK_INPUT(sizes.size() <= kMaxSweepSizes,
                     "--minbytes " + size_text(o.min_bytes) + " to --maxbytes " + size_text(o.max_bytes) + " by " +
                         "--stepfactor " + number(o.step_factor) + " makes " + std::to_string(sizes.size()) +
                         " sizes; at most " + std::to_string(kMaxSweepSizes));
  for (size_t i = 1; i < sizes.size(); ++i)
    TANDEM_CHECK_INPUT(sizes[i] > sizes[i - 1], "--stepfactor " + number(o.step_factor) + " is too small for " +
                                                    std::to_string(sizes[i - 1]) +
                                                    " bytes: the next size rounds to the same");
}

void validate_scenario_options(const ScenarioOptions& s) {
  require_in_range(s.hidden, 1, 1 << 17, "--hidden");
  require_in_range(s.seq, 1, 1 << 20, "--seq");
  require_in_range(s.layers, 1, 1024, "--layers");
  require_in_range(s.ffn, 0, 1 << 20, "--ffn");
  require_in_range(s.heads, 0, 4096, "--heads");
  require_in_range(s.kv_heads, 0, 4096, "--kv-heads");
  require_finite_in_range(s.bucket_mb, 0, 1 << 20, "--bucket-mb", "MiB");
  require_finite_in_range(s.first_bucket_mb, 0, 1 << 20, "--first-bucket-mb", "MiB");
  require_in_range(s.micro_batches, 1, 1024, "--micro-batches");
  require_in_range(s.experts, 1, 4096, "--experts");
  require_in_range(s.top_k, 1, s.experts, "--top-k");
  require_in_range(s.expert_ffn, 0, 1 << 20, "--expert-ffn");
}

}  // namespace

uint64_t parse_size(const std::string& text, const std::string& flag) {
  const std::string expected =
      "; expected a number of bytes with an optional unit B, K, M or G (binary), at most " + size_text(kMaxBytes);
  const auto bytes = parse_byte_count(text, kMaxBytes);
  // Digits and a unit that is one, too large: say so; anything else is not a size at all.
  const size_t digits = std::min(text.find_first_not_of("0123456789"), text.size());
  const bool too_large = !bytes && digits > 0 && parse_byte_count("1" + text.substr(digits), kMaxBytes);
  TANDEM_CHECK_INPUT(bytes.has_value(),
                     "bad " + flag + " " + quoted_value(text) + (too_large ? ": too large" : "") + expected);
  return *bytes;
}

void parse_gemm_shape(const std::string& text, WorkloadOptions& w) {
  int64_t dims[3] = {0, 0, 0};
  const char* at = text.data();
  const char* const end = text.data() + text.size();
  bool ok = true;
  for (int i = 0; i < 3 && ok; ++i) {
    // from_chars: digits only (no sign, no spaces, no hexadecimal), and it reports overflow.
    const auto [next, error] = std::from_chars(at, end, dims[i]);
    ok = error == std::errc() && next != at && dims[i] >= 1 && dims[i] <= kMaxGemmDim;
    at = next;
    if (i < 2) ok = ok && at != end && *at++ == 'x';
  }
  TANDEM_CHECK_INPUT(ok && at == end, "bad --gemm-shape " + quoted_value(text) + "; expected MxNxK, each from 1 to " +
                                          std::to_string(kMaxGemmDim) + ", e.g. 8192x8192x8192");
  w.m = dims[0];
  w.n = dims[1];
  w.k = dims[2];
}

void validate(const BenchOptions& o) {
  TANDEM_CHECK_INPUT(!o.workloads.empty(), "no workload given");
  TANDEM_CHECK_INPUT(!o.collectives.empty(), "no collective given");
  require_distinct(o.workloads, "--workload");
  require_distinct(o.collectives, "--collective");
  std::vector<std::string> policy_names;
  for (const auto& p : o.policies) policy_names.push_back(to_string(p));
  require_distinct(policy_names, "--policy");
  // Training scenarios and microbenchmarks are both cases of one runner, but their header lines
  // (harness/run_description.h) describe one kind: a run measures one kind.
  bool scenarios = false, microbenchmarks = false;
  for (const auto& w : o.workloads) (find_workload(w).scenario ? scenarios : microbenchmarks) = true;
  TANDEM_CHECK_INPUT(!(scenarios && microbenchmarks),
                     "training scenarios and microbenchmark workloads cannot be mixed in one run; run them separately");
  for (const auto& c : o.collectives) find_collective(c);
  TANDEM_CHECK_INPUT(!o.balance_size || o.balance,
                     "--balance-size resizes the collective after balancing the count; "
                     "it cannot combine with --no-balance or --count");
  TANDEM_CHECK_INPUT(!o.balance_size || !scenarios,
                     "--balance-size applies to microbenchmarks; a training scenario's "
                     "collectives follow from its model (--hidden, --seq, ...)");
  for (const auto& w : o.workloads) {
    const bool gathers_own_inputs = (w == "tp-mlp" || w == "tp-attention") && o.scenario.sequence_parallel;
    TANDEM_CHECK_INPUT(!o.in_place || !find_workload(w).scenario || gathers_own_inputs,
                       "--in-place lays out all-gathers in place: among the training scenarios only tp-mlp and "
                       "tp-attention with --sequence-parallel have all-gathers whose inputs they produce (got " +
                           quoted_value(w) + ")");
  }
  for (const auto& c : o.collectives)
    TANDEM_CHECK_INPUT(!o.in_place || scenarios || c != "all-to-all",
                       "all-to-all has no in-place form (NCCL's ncclAlltoAll needs separate buffers); drop --in-place "
                       "or run all-to-all separately");
  require_in_range(o.gpus, 0, kMaxGpus, "--gpus");
  validate_sweep(o);
  require_in_range(o.iters, 1, kMaxIters, "--iters");
  require_in_range(o.warmup, 0, kMaxIters, "--warmup");
  require_in_range(o.count, 1, kMaxIters, "--count");
  require_finite_in_range(o.timeout_s, 0, kMaxTimeoutS, "--timeout", "seconds");
  require_in_range(o.launch_request.device, -1, kMaxDevice, "--device");
  const WorkloadOptions& w = o.workload;
  TANDEM_CHECK_INPUT(w.m >= 0 && w.n >= 0 && w.k >= 0 && w.m <= kMaxGemmDim && w.n <= kMaxGemmDim && w.k <= kMaxGemmDim,
                     "--gemm-shape: each of M, N, K must be from 1 to " + std::to_string(kMaxGemmDim));
  TANDEM_CHECK_INPUT(w.stream_bytes >= 0 && static_cast<uint64_t>(w.stream_bytes) <= kMaxBytes,
                     "--stream-bytes must be at most " + size_text(kMaxBytes));
  validate_scenario_options(o.scenario);
}

void check_output_files(const std::vector<std::pair<std::string, std::string>>& files) {
  checking_input([&] { require_writable_outputs(files); });
}

void validate_for_ranks(const BenchOptions& o, int nranks) {
  for (const auto& name : o.collectives)
    for (uint64_t bytes : size_sweep(o.min_bytes, o.max_bytes, o.step_factor))
      check_divisible(find_collective(name), bytes, o.dtype, nranks);
  for (const auto& name : o.workloads)
    if (find_workload(name).scenario) make_scenario(name, o, nranks);
}

}  // namespace tandem::bench
