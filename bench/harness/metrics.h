#pragma once
// The metrics of docs/PERFORMANCE.md, as pure functions (CPU-tested).
//
// t_seq and t_bound always come from the default configuration, never from a policy's own, so a
// policy that slows one side alone is not rewarded by a smaller baseline.
#include <cstdint>
#include <vector>

namespace tandem::bench {

struct Summary {
  double median = 0;
  double min = 0;
  double max = 0;
  // (max - min) / median: how far apart the repetitions were.
  double spread() const { return median > 0 ? (max - min) / median : 0; }
};
// Median, min and max of samples (throws on an empty vector).
Summary summarize(std::vector<double> samples);

// Per repetition, the slowest rank's time: a step is over only when every rank is done.
std::vector<double> max_over_ranks(const std::vector<std::vector<double>>& per_rank_samples);

// max(t_compute, t_comm, hbm_bytes / hbm_bandwidth): no overlap can beat the slower side, nor move
// the bytes both sides need faster than device memory allows.
double bound_ms(double t_compute_ms, double t_comm_ms, double hbm_bytes, double hbm_bandwidth_gbps);
// Per-operation times for a dependency-chain bound (harness/program.h, Program::chain_ms), from
// event-timed iterations of each side alone: `compute_side[i]` is operation i's time in the
// compute-only iteration, `comm_side[i]` in the collectives-only one (0 where that iteration skipped
// it). Each side is scaled to sum to its baseline time, which every other column is measured
// against; the events between operations cost a little.
std::vector<double> operation_times(const std::vector<double>& compute_side, const std::vector<double>& comm_side,
                                    double t_compute_ms, double t_comm_ms);
// 1 - t_overlap / t_seq.
double reduction(double t_overlap_ms, double t_seq_ms);
// (t_seq - t_overlap) / (t_seq - t_bound): 1 = the collective fully hidden, 0 = no gain, < 0 worse
// than sequential. NaN when t_seq <= t_bound (nothing to gain).
double efficiency(double t_seq_ms, double t_overlap_ms, double t_bound_ms);
// The rule for every derived figure (efficiency, reduction, slowdown, compute tax): its denominator
// must stand out of the noise of the timed steps behind it. True when `denominator_ms` is above
// `noise_ms` (the max - min of those steps, summed over the times the denominator combines); false
// for zero, a negative denominator, NaN, or one within the noise: the figure is then undefined.
bool denominator_defined(double denominator_ms, double noise_ms);
// nccl-tests bandwidths, GB/s (1e9 B/s).
double algbw_gbps(double bytes, double time_ms);
// Units of compute whose time is closest to the collective's (at least one).
int balanced_count(double t_unit_ms, double t_comm_ms);
// A collective size whose time matches `t_compute_ms`, scaling `bytes` by t_compute / t_comm (large
// collectives take time in proportion to their size), in steps of nranks^2 x 256 KiB so that every
// collective splits it evenly across ranks and peers. `bytes` itself when the two are within
// `tolerance` (relative) already.
uint64_t balanced_bytes(uint64_t bytes, double t_compute_ms, double t_comm_ms, int nranks, double tolerance = 0.05);

}  // namespace tandem::bench
