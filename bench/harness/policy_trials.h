#pragma once
// What `tandem bench` and `tandem tune` need from one case, whatever kind it is (a microbenchmark's
// workload x collective x size, or a training scenario): measure a policy against the case's
// default-configuration baselines, and say what is known about it, so the tuner can prune controls
// that cannot apply. The sequence - apply, check, measure, restore - is the same for every kind of
// case and lives here; a kind supplies the three steps.
#include <optional>
#include <string>
#include <vector>

#include "harness/baselines.h"
#include "report/report.h"
#include "report/trace.h"
#include "tandem/policy.h"
#include "tandem/shaped_kernel.h"

namespace tandem::bench {

struct CaseTraits {
  int sm_count = 0;
  int natural_blocks_per_sm = 0;  // of the shapeable compute kernel; 0 when every kernel is a library's
  bool has_sm_target = false;     // the compute side has cuBLASLt GEMMs
};

class PolicyTrials {
 public:
  virtual ~PolicyTrials() = default;
  // Applies `policy`, checks results under it, measures it and restores the defaults. Returns false
  // (with `skip_reason`) when the default suite holds a policy that cannot apply to this case; a
  // policy the user named explicitly (`policies_given`) must apply, or the run fails.
  bool run_policy(const OverlapPolicy& policy, Row& row, std::string& skip_reason);
  virtual CaseTraits traits() = 0;
  // Measures the default-configuration baselines again (t_seq, t_compute, t_comm, the bound; the
  // same compute count), as all ranks do together: rows measured after it are judged against
  // baselines taken at the same moment, in the same clock and power state.
  virtual void remeasure_baselines() = 0;
  // The timelines recorded since the last call (`--trace`: training scenarios only), every rank's;
  // empty when nothing was traced.
  virtual std::vector<TraceIteration> take_traces() { return {}; }
  // The residency plan of the case's shapeable compute kernel on this GPU (report.h); none when
  // every compute kernel is a library's.
  virtual std::optional<ResidencyPlan> residency_plan() const { return std::nullopt; }

 protected:
  explicit PolicyTrials(bool policies_given) : policies_given_(policies_given) {}
  // Puts every control of `policy` in place; returns why it cannot apply, or "" when it does. Every
  // rank takes the same path (same case, GPUs and policies), so communicators for a policy's NCCL
  // settings are created by all ranks together.
  virtual std::string apply(const OverlapPolicy& policy) = 0;
  // Back to the default configuration, whatever part of apply() took effect.
  virtual void restore() = 0;
  // Under the controls apply() put in place: counts wrong results (when checking is on), times the
  // policy and fills `row`.
  virtual void check_and_measure(const OverlapPolicy& policy, Row& row) = 0;

  // A row's kernel columns: `shaped`'s residency under the policy (-1 when no tandem kernel was
  // shaped) and both sides' captured footprints.
  void fill_kernel_columns(Row& row, const ShapedKernel* shaped) const;

  // Both sides' first kernels, as capture found them (empty until a kind captures them).
  FootprintRecord comm_kernel_, compute_kernel_;

 private:
  bool policies_given_;
};

}  // namespace tandem::bench
