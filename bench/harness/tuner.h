#pragma once
// `tandem tune`: searches the policy space for each case and keeps the fastest policy.
//
// The search is staged (launch order and priority, then shaping levels, SM-count targets, NCCL
// resources and green contexts on top of the best so far, then the order again) and prunes what
// cannot apply (shaping a closed library kernel, an SM-count target on a kernel without one). The
// finalists are measured again and the lowest median wins.
#include <functional>
#include <string>
#include <vector>

#include "harness/bench_options.h"
#include "harness/policy_trials.h"
#include "harness/report.h"
#include "harness/runner.h"

namespace tandem::bench {

struct TunedCase {
  std::vector<Row> candidates;  // every policy measured, in the order tried
  Row naive;                    // concurrent: two streams, nothing else
  Row paper;                    // the paper's method: the best shape:*+priority, else priority
  Row tuned;                    // the winner (tuned = true)
};

struct TuneOutcome {
  std::vector<TunedCase> cases;
  std::vector<std::string> notes;  // candidates that could not apply, and why
  double hbm_bandwidth_gbps = 0;
};

// Called with each policy that becomes the fastest measured so far in a case's search (before the
// final rounds confirm it), on the rank that collects results.
using BestSoFarSink = std::function<void(const Row&)>;

// What run_tune reports while it works, on the rank that collects results (rank 0), so that an
// interrupted tune (Ctrl-C, a lost rank) keeps what it found: each case as soon as it is tuned, and
// within the case being tuned its fastest policy so far.
struct TuneSinks {
  std::function<void(const TunedCase&)> on_case;
  BestSoFarSink on_best_so_far;
};
TuneOutcome run_tune(const BenchOptions& options, int nranks, const ProgressSink& progress,
                     const TuneSinks& sinks = {});

// The search for one case on `trials` (run_tune calls it on every rank's thread; the CPU tests call
// it with fake trials): every stage's candidates, then the finalists, `concurrent` and the paper's
// best level measured again in rounds. Candidates that cannot apply become `notes` (collecting rank).
TunedCase tune_case(PolicyTrials& trials, const BenchOptions& options, const CaseId& id,
                    std::vector<std::string>& notes, const BestSoFarSink& on_best_so_far = {});

// The candidate stages, as pure functions of what is known about the case (CPU-tested).
std::vector<OverlapPolicy> order_candidates();
std::vector<OverlapPolicy> shaping_candidates(const OverlapPolicy& base, const CaseTraits& traits);
std::vector<OverlapPolicy> sm_target_candidates(const OverlapPolicy& base, const CaseTraits& traits);
std::vector<OverlapPolicy> sm_target_refinements(const OverlapPolicy& best, const CaseTraits& traits);
std::vector<OverlapPolicy> nccl_candidates(const OverlapPolicy& base);
std::vector<OverlapPolicy> green_candidates(const OverlapPolicy& base, const CaseTraits& traits);
// `base` on copy engines, then bare copy engines under every launch order.
std::vector<OverlapPolicy> copy_engine_candidates(const OverlapPolicy& base);
// The collective's buffers as NCCL symmetric windows (nccl-symmetric), unless copy engines already are.
std::vector<OverlapPolicy> symmetric_candidates(const OverlapPolicy& base);
// Joint SM partitions: compute capped to S SMs (sm-target for GEMMs, a green context otherwise) and
// NCCL capped to the SMs left free (nccl-ctas:..sm-S, cluster size 1), so neither waits for the
// other's SMs.
std::vector<OverlapPolicy> partition_candidates(const OverlapPolicy& base, const CaseTraits& traits);

}  // namespace tandem::bench
