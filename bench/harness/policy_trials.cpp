#include "harness/policy_trials.h"

#include "tandem/error.h"

namespace tandem::bench {

bool PolicyTrials::run_policy(const OverlapPolicy& policy, Row& row, std::string& skip_reason) {
  const std::string why = apply(policy);
  if (!why.empty()) {
    restore();
    if (policies_given_) TANDEM_THROW("policy '" + to_string(policy) + "' cannot apply: " + why);
    skip_reason = why;
    return false;
  }
  check_and_measure(policy, row);
  restore();
  return true;
}

void PolicyTrials::fill_kernel_columns(Row& row, const ShapedKernel* shaped) const {
  row.compute_blocks_per_sm = shaped ? shaped->blocks_per_sm() : -1;
  row.shape_dynamic_smem = shaped ? static_cast<int64_t>(shaped->dynamic_smem()) : -1;
  row.compute_kernel = compute_kernel_;
  row.comm_kernel = comm_kernel_;
}

}  // namespace tandem::bench
