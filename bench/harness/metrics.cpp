#include "harness/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tandem/error.h"

namespace tandem::bench {

Summary summarize(std::vector<double> samples) {
  TANDEM_REQUIRE(!samples.empty(), "no samples to summarize");
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  Summary s;
  s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.min = samples.front();
  s.max = samples.back();
  return s;
}

std::vector<double> max_over_ranks(const std::vector<std::vector<double>>& per_rank) {
  TANDEM_REQUIRE(!per_rank.empty(), "no ranks reported samples");
  std::vector<double> out = per_rank.front();
  for (const auto& rank_samples : per_rank) {
    TANDEM_REQUIRE(rank_samples.size() == out.size(), "ranks reported different numbers of samples");
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::max(out[i], rank_samples[i]);
  }
  return out;
}

double bound_ms(double t_compute_ms, double t_comm_ms, double hbm_bytes, double hbm_bandwidth_gbps) {
  const double hbm_ms = hbm_bandwidth_gbps > 0 ? hbm_bytes / (hbm_bandwidth_gbps * 1e9) * 1e3 : 0;
  return std::max({t_compute_ms, t_comm_ms, hbm_ms});
}

double reduction(double t_overlap_ms, double t_seq_ms) { return 1.0 - t_overlap_ms / t_seq_ms; }

double efficiency(double t_seq_ms, double t_overlap_ms, double t_bound_ms) {
  const double possible = t_seq_ms - t_bound_ms;
  if (possible <= 0) return std::numeric_limits<double>::quiet_NaN();
  return (t_seq_ms - t_overlap_ms) / possible;
}

bool denominator_defined(double denominator_ms, double noise_ms) {
  return denominator_ms > 0 && denominator_ms > noise_ms;
}

std::vector<double> operation_times(const std::vector<double>& compute_side, const std::vector<double>& comm_side,
                                    double t_compute_ms, double t_comm_ms) {
  TANDEM_REQUIRE(compute_side.size() == comm_side.size(), "both sides must time the same operations");
  double compute_sum = 0, comm_sum = 0;
  for (size_t i = 0; i < compute_side.size(); ++i) {
    TANDEM_REQUIRE(compute_side[i] >= 0 && comm_side[i] >= 0, "operation times cannot be negative");
    TANDEM_REQUIRE(compute_side[i] == 0 || comm_side[i] == 0, "an operation runs on one side only");
    compute_sum += compute_side[i];
    comm_sum += comm_side[i];
  }
  const double compute_scale = compute_sum > 0 ? t_compute_ms / compute_sum : 0;
  const double comm_scale = comm_sum > 0 ? t_comm_ms / comm_sum : 0;
  std::vector<double> out(compute_side.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = compute_side[i] * compute_scale + comm_side[i] * comm_scale;
  return out;
}

double algbw_gbps(double bytes, double time_ms) { return bytes / (time_ms * 1e-3) / 1e9; }

int balanced_count(double t_unit_ms, double t_comm_ms) {
  TANDEM_REQUIRE(t_unit_ms > 0, "compute unit time must be positive");
  return std::max(1, static_cast<int>(std::lround(t_comm_ms / t_unit_ms)));
}

uint64_t balanced_bytes(uint64_t bytes, double t_compute_ms, double t_comm_ms, int nranks, double tolerance) {
  TANDEM_REQUIRE(t_compute_ms > 0 && t_comm_ms > 0, "times must be positive to balance a collective's size");
  TANDEM_REQUIRE(nranks >= 1, "balancing a collective's size needs at least one rank");
  const double ratio = t_compute_ms / t_comm_ms;
  if (std::abs(ratio - 1) <= tolerance) return bytes;
  const double step = double(nranks) * nranks * (256 << 10);
  const double steps = std::max(1.0, std::round(double(bytes) * ratio / step));
  return static_cast<uint64_t>(steps * step);
}

}  // namespace tandem::bench
