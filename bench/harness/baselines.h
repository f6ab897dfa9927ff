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
void fill_times(Row& row, const Baselines& base, const Summary& overlap, double compute_span_ms, double comm_span_ms,
                bool sequential, double collective_bytes, double busbw_factor);
}  // namespace tandem::bench
