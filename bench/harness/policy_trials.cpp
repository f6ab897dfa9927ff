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

}  // namespace tandem::bench
