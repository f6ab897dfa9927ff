#pragma once
// The one runner: any case (harness/case.h) on one rank - its footprints, its default-configuration
// baselines, and the measurement of any policy against them. Every rank runs the same calls in the
// same order; aggregates go through the Coordinator, so every rank computes the same ones and takes
// the same decisions.
//
// Per case: t_seq (everything on one stream), t_compute (collectives skipped), t_comm (only the
// collectives, in order), t_chain (the dependency chain with every operation at its time alone: at
// least max(t_compute, t_comm)), t_bound = max(t_chain, HBM bytes / bandwidth), then t_overlap under
// each policy, results checked against the reference under each (docs/BENCH_JSON.md).
#include <memory>
#include <string>
#include <vector>

#include "harness/bench_options.h"
#include "harness/case.h"
#include "harness/metrics.h"
#include "harness/policy_trials.h"
#include "harness/program.h"
#include "harness/rank_context.h"
#include "report/report.h"

namespace tandem::bench {

using ProgressSink = std::function<void(const std::string&)>;

class CaseTrials final : public PolicyTrials {
 public:
  CaseTrials(RankContext& ctx, const BenchOptions& options, Case& c);
  ~CaseTrials() override;
  CaseTrials(const CaseTrials&) = delete;
  CaseTrials& operator=(const CaseTrials&) = delete;

  // One sequential step first: NCCL connects to its peers on first use (not allowed during
  // capture), libraries load their kernels, and every buffer - collective outputs included - holds
  // real values before anything is timed (compute-only steps read what collectives left there).
  // Then the first collective and the first compute operation are captured to read their kernels.
  void capture_footprints();
  // A case that takes a compute count (a microbenchmark) gets one: the count whose compute time is
  // closest to the collective's (--balance), else --count.
  void choose_count();
  // t_seq (first: it leaves real values in every buffer the compute-only steps then read), t_compute,
  // t_comm, t_chain, t_bound. `progress` (rank 0's, may be empty) hears when each starts: long
  // baselines are phases worth seeing, and scripts/clock_phases.py attributes power samples by them.
  void measure_baselines(const ProgressSink& progress = {});
  // --balance-size: the collective size whose time matches the compute's, from the baselines
  // (metrics.h balanced_bytes; the same on every rank); the current size when they already match.
  uint64_t balanced_collective_bytes() const;
  // Rebuilds the case's collective at `bytes` and measures it again: footprints, baselines (the same
  // count). False for a case whose collectives are fixed.
  bool resize_collective(uint64_t bytes, const ProgressSink& progress = {});
  // Deregisters the windows the policies registered (collective: every rank calls it), before the
  // case's buffers are freed.
  void release_windows();

  CaseTraits traits() override;
  void remeasure_baselines() override { measure_baselines(); }
  std::vector<TraceIteration> take_traces() override;
  std::optional<ResidencyPlan> residency_plan() const override;

 private:
  std::string apply(const OverlapPolicy& policy) override;
  void restore() override;
  void check_and_measure(const OverlapPolicy& policy, Row& row) override;

  struct Measured {
    Summary total, compute_busy, comm_busy;
  };
  // The case's program changed (a count, a size): a new executor for it.
  void rebuild();
  StepStreams streams_for(Schedule schedule) const;
  std::string step_name(Schedule schedule, const OverlapPolicy* policy) const;
  void run_once(Schedule schedule, const OverlapPolicy* policy);
  Measured measure(Schedule schedule, const OverlapPolicy* policy);
  // The same on streams chosen by the caller (one GPU: the compute alone on the policy's stream).
  Measured measure_on(const StepStreams& streams, Schedule schedule, const OverlapPolicy* policy);
  double measure_chain();
  // Poisons the outputs, runs one step and counts wrong elements over all ranks.
  int64_t check(Schedule schedule, const OverlapPolicy* policy);
  // `--trace`: one more step under the policy, its operations bracketed by events; every rank keeps
  // every rank's timeline (report/trace.h).
  void trace(Schedule schedule, const OverlapPolicy& policy);

  RankContext& ctx_;
  const BenchOptions& options_;
  Case& case_;
  std::unique_ptr<Executor> executor_;
  cudaEvent_t start_ = nullptr, end_ = nullptr;
  StepStreams active_;  // what apply() chose for the policy being measured (defaults otherwise)
  bool sm_target_set_ = false;
  Baselines baselines_;
  std::vector<TraceIteration> traces_;  // `--trace`: since the last take_traces()
};

}  // namespace tandem::bench
