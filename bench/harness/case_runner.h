#pragma once
// One case (workload x collective x size) on one rank: its footprints, its default-configuration
// baselines, and the measurement of any policy against them. Every rank runs the same calls in the
// same order; aggregates are computed identically on all ranks, so they take the same decisions.
#include <string>
#include <vector>

#include "harness/bench_options.h"
#include "harness/collective.h"
#include "harness/metrics.h"
#include "harness/policy_trials.h"
#include "harness/rank_context.h"
#include "harness/workload.h"
#include "report/report.h"

namespace tandem::bench {

struct StepSamples {
  std::vector<double> total, compute_span, comm_span;
};

enum class Schedule { ComputeOnly, CommOnly, Sequential, Overlap };

struct StepSummary {
  Summary total, compute_span, comm_span;
};

class CaseRunner final : public PolicyTrials {
 public:
  // `workload_name` names the case in traces and NVTX ranges (the Workload does not know its name).
  CaseRunner(RankContext& ctx, const BenchOptions& options, const std::string& workload_name, Workload& workload,
             Collective& collective);
  CaseRunner(const CaseRunner&) = delete;
  CaseRunner& operator=(const CaseRunner&) = delete;
  ~CaseRunner() override;

  // Reads the real kernels of both sides by capturing one of each into a graph. Each side runs once
  // first: NCCL connects to its peers on first use, which is not allowed during capture, and
  // libraries load their kernels lazily.
  void capture_footprints();

  // Chooses the compute count (or takes `fixed_count` when positive), then measures the
  // default-configuration baselines.
  void measure_baselines(int fixed_count = 0);
  int count() const { return count_; }
  // The collective size whose time matches this case's compute time (metrics.h balanced_bytes), from
  // the baselines; `bytes` when they already match. The same on every rank (slowest-rank medians).
  uint64_t balanced_collective_bytes(uint64_t bytes) const;

  CaseTraits traits() override;
  void remeasure_baselines() override { measure_baselines(count_); }
  std::vector<TraceIteration> take_traces() override;

 private:
  std::string apply(const OverlapPolicy& policy) override;
  void restore() override;
  void check_and_measure(const OverlapPolicy& policy, Row& row) override;

  void fill_row(Row& row, const OverlapPolicy& policy, const StepSummary& s, const ShapedKernel* kernel) const;

  // Runs the schedule once on poisoned outputs and counts wrong elements over all ranks.
  int64_t check(Schedule schedule, const OverlapPolicy* policy);

  StepSummary measure(Schedule schedule, const OverlapPolicy* policy, int count);

  // `--trace`: one more step under the policy, each compute unit and the collective bracketed by
  // events on the stream that runs it; keeps every rank's timeline (report/trace.h).
  void trace(Schedule schedule, const OverlapPolicy& policy);

  // Enqueues one step. Every schedule records `start_` and `end_`; Overlap also records when each
  // side finished, relative to the same `start_`. Baselines use the default configuration; Overlap
  // uses the streams and communicator apply() chose. While trace() runs, each operation of the step
  // is also bracketed by `trace_start_`/`trace_end_` (launch order, as microbenchmark_step_spans).
  void enqueue_step(Schedule schedule, const OverlapPolicy* policy, int count);

  // The stream a step's end is recorded on, which the host waits for.
  cudaStream_t final_stream(Schedule schedule) const;

  // Every NCCL call goes through here: the communicators are non-blocking, so the call may return
  // before NCCL's host-side work is done.
  void enqueue_collective(ncclComm_t comm, cudaStream_t stream);

  static std::string schedule_name(Schedule s, const OverlapPolicy* policy);

  static double elapsed(cudaEvent_t from, cudaEvent_t to);

  double min_over_ranks_bandwidth();

  // "gemm all-reduce 256MiB": the case, as progress lines name it.
  std::string label() const;

  RankContext& ctx_;
  const BenchOptions& options_;
  std::string workload_name_;
  Workload& workload_;
  Collective& collective_;
  cudaEvent_t start_ = nullptr, compute_done_ = nullptr, comm_done_ = nullptr, end_ = nullptr;
  // What apply() chose for the policy being measured (defaults otherwise).
  ncclComm_t active_comm_ = nullptr;
  cudaStream_t active_comm_stream_ = nullptr;
  cudaStream_t active_compute_stream_ = nullptr;
  int count_ = 1;
  Baselines baselines_;
  // `--trace`: set while trace() enqueues its step; an event pair per operation, created on first
  // use; the timelines since the last take_traces().
  bool tracing_ = false;
  std::vector<cudaEvent_t> trace_start_, trace_end_;
  std::vector<TraceIteration> traces_;
};

}  // namespace tandem::bench
