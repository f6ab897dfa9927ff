#include "harness/baselines.h"

namespace tandem::bench {

void fill_times(Row& row, const Baselines& base, const Summary& overlap, double compute_span_ms, double comm_span_ms,
                bool sequential, double collective_bytes, double busbw_factor) {
  row.t_compute_ms = base.compute.median;
  row.t_comm_ms = base.comm.median;
  row.t_seq_ms = base.seq.median;
  row.t_bound_ms = base.bound_ms;
  row.t_chain_ms = base.chain_ms;
  row.t_overlap_ms = overlap.median;
  row.t_overlap_min_ms = overlap.min;
  row.t_overlap_max_ms = overlap.max;
  row.reduction = reduction(row.t_overlap_ms, row.t_seq_ms);
  row.efficiency = efficiency(row.t_seq_ms, row.t_overlap_ms, row.t_bound_ms);
  row.compute_slowdown = sequential ? 1.0 : compute_span_ms / base.compute.median;
  row.comm_slowdown = sequential ? 1.0 : comm_span_ms / base.comm.median;
  row.algbw_gbps = algbw_gbps(collective_bytes, base.comm.median);
  row.busbw_gbps = row.algbw_gbps * busbw_factor;
}

}  // namespace tandem::bench
