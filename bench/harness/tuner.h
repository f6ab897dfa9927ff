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
#include "harness/case_loop.h"
#include "harness/policy_trials.h"
#include "report/report.h"
#include "tandem/nccl_candidates.h"

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

// One step of a case's search, for progress lines: a policy measured (final_round 0) or a final
// round done (final_round 1..final_rounds). `best`: the search's fastest policy so far.
struct TuneStep {
  int measured = 0;     // policies measured by the search so far in this case
  int final_round = 0;  // 0 during the search
  int final_rounds = 0;
  const Row* best = nullptr;
};
using TuneStepSink = std::function<void(const TuneStep&)>;

// What run_tune reports while it works, on the rank that collects results (rank 0), so that an
// interrupted tune (Ctrl-C, a lost rank) keeps what it found: each case as soon as it is tuned, and
// within the case being tuned its fastest policy so far.
struct TuneSinks {
  std::function<void(const TunedCase&)> on_case;
  BestSoFarSink on_best_so_far;
  // `tandem tune --resume`: a case already tuned is skipped (asked on every rank, which must agree);
  // `on_resumed` is then called for it on the collecting rank.
  std::function<bool(const CaseId&)> skip_case;
  std::function<void(const CaseId&)> on_resumed;
  size_t resumed_cases = 0;  // how many cases skip_case will skip, for the time estimate
};
TuneOutcome run_tune(const BenchOptions& options, int nranks, const ProgressSink& progress,
                     const TuneSinks& sinks = {});

// The search for one case on `trials` (run_tune calls it on every rank's thread; the CPU tests call
// it with fake trials): every stage's candidates, then the finalists, `concurrent` and the paper's
// best level measured again in rounds. Candidates that cannot apply become `notes` (collecting rank).
// `on_step`: after each policy measured and each final round, on the collecting rank.
TunedCase tune_case(PolicyTrials& trials, const BenchOptions& options, const CaseId& id,
                    std::vector<std::string>& notes, const BestSoFarSink& on_best_so_far = {},
                    const TuneStepSink& on_step = {});
// The policies a case's search measures at most, from its first stage's lists around `priority`
// (later stages build on the best so far, unknown before): the first case's progress estimate.
size_t first_case_policy_estimate(const CaseTraits& traits);
// The final comparison's rounds.
constexpr int kTuneFinalRounds = 5;

// The candidate stages, as pure functions of what is known about the case (CPU-tested); the NCCL
// stage's are tandem/nccl_candidates.h's, which a program's tune shares.
std::vector<OverlapPolicy> order_candidates();
std::vector<OverlapPolicy> shaping_candidates(const OverlapPolicy& base, const CaseTraits& traits);
std::vector<OverlapPolicy> sm_target_candidates(const OverlapPolicy& base, const CaseTraits& traits);
std::vector<OverlapPolicy> sm_target_refinements(const OverlapPolicy& best, const CaseTraits& traits);
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
