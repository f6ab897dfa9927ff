#pragma once
// A row's time, metric and bandwidth columns, derived from one policy's measurement and the
// default-configuration baselines of its case (the metrics of docs/PERFORMANCE.md, harness/metrics.h).
#include "harness/metrics.h"
#include "report/report.h"

namespace tandem::bench {

// The default-configuration baselines every policy of a case is measured against.
struct Baselines {
  Summary compute, comm, seq;
  // The iteration along its dependency chain with each operation at its time alone (training
  // scenarios); max(t_compute, t_comm) where the two sides are independent (microbenchmarks).
  double chain_ms = 0;
  double bound_ms = 0;  // max(chain_ms, the HBM term)
};

// Fills a row's time, metric and bandwidth columns from the baselines and one policy's measurement:
// `overlap` is the step time, `compute_span_ms` and `comm_span_ms` each side's time under the policy
// (ignored for `sequential`, where each side ran alone by construction).
// Every derived figure follows metrics.h's rule (denominator_defined): an undefined one is NaN, with
// its reason in row.undefined. On one rank (row.ranks == 1) the overlap figures are all undefined.
void fill_times(Row& row, const Baselines& base, const Summary& overlap, double compute_span_ms, double comm_span_ms,
                bool sequential, double collective_bytes, double busbw_factor);
// `tandem bench` on one GPU, after fill_times: the compute alone under the policy and its compute
// tax against row.t_compute (the same rule).
void fill_compute_tax(Row& row, const Summary& compute_under_policy);
// Why the overlap figures of a one-rank row are undefined.
extern const char* const kOneRankReason;
}  // namespace tandem::bench
