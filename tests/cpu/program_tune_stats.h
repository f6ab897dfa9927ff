#pragma once
// One policy's statistics as `tandem tune -- CMD` gathers them (program_tools/program_tune_decision.h), for the
// tests of its decision and rules: min and max from `values`, the median given.
#include <algorithm>
#include <string>
#include <vector>

#include "program_tools/program_tune_decision.h"

namespace tandem_test {

inline tandem::program_tools::PolicyStats stats(int candidate, const std::string& policy, std::vector<double> values,
                                                double median, const std::string& disqualified = "") {
  tandem::program_tools::PolicyStats s;
  s.candidate = candidate;
  s.policy = policy;
  s.values = values;
  s.median = median;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  s.disqualified = disqualified;
  return s;
}

}  // namespace tandem_test
