#include "harness/bench_options.h"

#include <cctype>
#include <cmath>

#include "harness/registry.h"
#include "harness/scenario_runner.h"
#include "tandem/error.h"

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

std::vector<uint64_t> size_sweep(uint64_t min_bytes, uint64_t max_bytes, double factor) {
  std::vector<uint64_t> sizes;
  for (double s = static_cast<double>(min_bytes); s <= static_cast<double>(max_bytes) * (1 + 1e-9); s *= factor) {
    sizes.push_back(static_cast<uint64_t>(std::llround(s)));
    if (factor <= 1) break;
  }
  return sizes;
}

uint64_t parse_size(const std::string& text) {
  size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  const std::string digits = text.substr(0, pos), unit = text.substr(pos);
  uint64_t scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KiB") scale = 1ull << 10;
  else if (unit == "M" || unit == "MB" || unit == "MiB") scale = 1ull << 20;
  else if (unit == "G" || unit == "GB" || unit == "GiB") scale = 1ull << 30;
  if (digits.empty() || digits.size() > 12 || scale == 0)
    TANDEM_THROW("bad size '" + text + "'; expected a number with an optional unit B, K, M or G (binary)");
  return std::stoull(digits) * scale;
}

void validate(const BenchOptions& o) {
  // Training scenarios (scenario_runner.h) run on their own runner: accept their names, but not
  // mixed with microbenchmark workloads, whose rows mean something else.
  bool scenarios = false, microbenchmarks = false;
  for (const auto& w : o.workloads) {
    if (is_scenario(w)) {
      scenarios = true;
      continue;
    }
    microbenchmarks = true;
    try {
      find_workload(w);
    } catch (const Error&) {
      std::string accepted;
      for (const auto& e : workload_registry()) accepted += (accepted.empty() ? "" : ", ") + std::string(e.name);
      for (const auto& n : scenario_names()) accepted += ", " + n;
      TANDEM_THROW("unknown workload '" + w + "'; accepted: " + accepted);
    }
  }
  TANDEM_REQUIRE(!(scenarios && microbenchmarks),
                 "training scenarios and microbenchmark workloads cannot be mixed in one run; run them separately");
  for (const auto& c : o.collectives) find_collective(c);
  TANDEM_REQUIRE(!o.balance_size || o.balance, "--balance-size resizes the collective after balancing the count; "
                                                "it cannot combine with --no-balance or --count");
  TANDEM_REQUIRE(!o.balance_size || !scenarios, "--balance-size applies to microbenchmarks; a training scenario's "
                                                 "collectives follow from its model (--hidden, --seq, ...)");
  TANDEM_REQUIRE(o.trace_path.empty() || !microbenchmarks,
                 "--trace draws the operations of a training scenario's iteration (--workload dp-backward, "
                 "tp-mlp, tp-attention, fsdp, moe); a microbenchmark step is one compute run beside one "
                 "collective, and its row already has both spans (t_compute, t_comm, c_slow, m_slow)");
  for (const auto& w : o.workloads) {
    const bool gathers_own_inputs = (w == "tp-mlp" || w == "tp-attention") && o.scenario.sequence_parallel;
    TANDEM_REQUIRE(!o.in_place || !is_scenario(w) || gathers_own_inputs,
                   "--in-place lays out all-gathers in place: among the training scenarios only tp-mlp and "
                   "tp-attention with --sequence-parallel have all-gathers whose inputs they produce (got '" + w + "')");
  }
  for (const auto& c : o.collectives)
    TANDEM_REQUIRE(!o.in_place || scenarios || c != "all-to-all",
                   "all-to-all has no in-place form (NCCL's ncclAlltoAll needs separate buffers); drop --in-place "
                   "or run all-to-all separately");
  TANDEM_REQUIRE(!o.workloads.empty(), "no workload given");
  TANDEM_REQUIRE(!o.collectives.empty(), "no collective given");
  TANDEM_REQUIRE(o.gpus >= 0, "--gpus must be positive (got " + std::to_string(o.gpus) + ")");
  TANDEM_REQUIRE(o.min_bytes > 0, "--minbytes must be positive");
  TANDEM_REQUIRE(o.max_bytes >= o.min_bytes, "--maxbytes (" + std::to_string(o.max_bytes) +
                                                  ") is below --minbytes (" + std::to_string(o.min_bytes) + ")");
  TANDEM_REQUIRE(o.step_factor > 1 || o.min_bytes == o.max_bytes, "--stepfactor must be above 1");
  TANDEM_REQUIRE(o.iters >= 1, "--iters must be at least 1");
  TANDEM_REQUIRE(o.warmup >= 0, "--warmup must not be negative");
  TANDEM_REQUIRE(o.count >= 1, "--count must be at least 1");
  TANDEM_REQUIRE(o.timeout_s > 0, "--timeout must be positive");
  TANDEM_REQUIRE(o.workload.m >= 0 && o.workload.n >= 0 && o.workload.k >= 0, "GEMM sizes must be positive");
}

}  // namespace tandem::bench

namespace tandem::bench {

void validate_for_ranks(const BenchOptions& o, int nranks) {
  for (const auto& name : o.collectives) {
    const auto collective = find_collective(name).make();
    for (uint64_t bytes : size_sweep(o.min_bytes, o.max_bytes, o.step_factor))
      check_divisible(*collective, bytes, o.dtype, nranks);
  }
}

}  // namespace tandem::bench
