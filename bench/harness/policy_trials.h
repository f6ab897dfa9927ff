#pragma once
// What `tandem bench` and `tandem tune` need from one case, whatever kind it is (a microbenchmark's
// workload x collective x size, or a training scenario): measure a policy against the case's
// default-configuration baselines, and say what is known about it, so the tuner can prune controls
// that cannot apply.
#include <string>

#include "harness/report.h"
#include "tandem/policy.h"

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
  // policy the user named explicitly must apply, or the run fails.
  virtual bool run_policy(const OverlapPolicy& policy, Row& row, std::string& skip_reason) = 0;
  virtual CaseTraits traits() = 0;
};

}  // namespace tandem::bench
