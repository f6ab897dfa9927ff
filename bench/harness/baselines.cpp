#include "harness/baselines.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace tandem::bench {

namespace {

constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();

double range_ms(const Summary& s) { return s.max - s.min; }

// `value` when its denominator stands out of the noise (metrics.h denominator_defined), else NaN with
// the reason recorded in the row.
double figure(Row& row, const char* name, double value, double denominator_ms, double noise_ms,
              const std::string& denominator) {
  if (denominator_defined(denominator_ms, noise_ms)) return value;
  std::string why;
  if (denominator_ms == 0)
    why = denominator + " is zero";
  else if (std::abs(denominator_ms) <= noise_ms)
    why = denominator + " is within the spread (max - min) of the timed steps it is made of";
  else
    why = denominator + " is negative: there is nothing to gain";
  row.undefined.push_back({name, why});
  return kUndefined;
}

}  // namespace

const char* const kOneRankReason =
    "one rank: the collective moves nothing between GPUs (NCCL copies locally and launches no kernel), so there is "
    "no communication to overlap";

void fill_times(Row& row, const Baselines& base, const Summary& overlap, double compute_span_ms, double comm_span_ms,
                bool sequential, double collective_bytes, double busbw_factor) {
  row.t_compute_ms = base.compute.median;
  row.t_compute_min_ms = base.compute.min;
  row.t_compute_max_ms = base.compute.max;
  row.t_comm_ms = base.comm.median;
  row.t_comm_min_ms = base.comm.min;
  row.t_comm_max_ms = base.comm.max;
  row.t_seq_ms = base.seq.median;
  row.t_seq_min_ms = base.seq.min;
  row.t_seq_max_ms = base.seq.max;
  row.t_bound_ms = base.bound_ms;
  row.t_chain_ms = base.chain_ms;
  row.t_overlap_ms = overlap.median;
  row.t_overlap_min_ms = overlap.min;
  row.t_overlap_max_ms = overlap.max;
  row.algbw_gbps = algbw_gbps(collective_bytes, base.comm.median);
  row.busbw_gbps = row.algbw_gbps * busbw_factor;
  if (row.ranks == 1) {
    for (const char* name : {"reduction", "efficiency", "compute_slowdown", "comm_slowdown"})
      row.undefined.push_back({name, kOneRankReason});
    row.reduction = row.efficiency = row.compute_slowdown = row.comm_slowdown = kUndefined;
    return;
  }
  row.reduction =
      figure(row, "reduction", reduction(row.t_overlap_ms, row.t_seq_ms), row.t_seq_ms, range_ms(base.seq), "t_seq");
  // The bound is one of the sides alone (or the HBM term, which has no spread): the larger side's
  // noise covers it.
  row.efficiency = figure(
      row, "efficiency", efficiency(row.t_seq_ms, row.t_overlap_ms, row.t_bound_ms), row.t_seq_ms - row.t_bound_ms,
      range_ms(base.seq) + std::max(range_ms(base.compute), range_ms(base.comm)), "t_seq - t_bound");
  // A sequential step runs each side alone by construction.
  row.compute_slowdown = sequential ? 1.0
                                    : figure(row, "compute_slowdown", compute_span_ms / base.compute.median,
                                             base.compute.median, range_ms(base.compute), "t_compute");
  row.comm_slowdown = sequential ? 1.0
                                 : figure(row, "comm_slowdown", comm_span_ms / base.comm.median, base.comm.median,
                                          range_ms(base.comm), "t_comm");
}

void fill_compute_tax(Row& row, const Summary& compute_under_policy) {
  row.one_gpu = true;
  row.t_compute_policy_ms = compute_under_policy.median;
  row.t_compute_policy_min_ms = compute_under_policy.min;
  row.t_compute_policy_max_ms = compute_under_policy.max;
  row.compute_tax = figure(row, "compute_tax", compute_under_policy.median / row.t_compute_ms - 1, row.t_compute_ms,
                           row.t_compute_max_ms - row.t_compute_min_ms, "t_compute");
}

}  // namespace tandem::bench
