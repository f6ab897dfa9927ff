#pragma once
// The policy files `tandem tune` writes, for the benchmark and for a program alike: one header line
// (which tandem, when), lines saying what was tuned and how well, a line saying whether
// `tandem run --policy @FILE` can apply the policy (users feed these files to it), then the policy.
// load_policy_file skips the '#' lines.
#include <string>
#include <vector>

#include "report/report.h"
#include "tandem/policy.h"

namespace tandem::cli {

// "# tandem run: applies" or "# tandem run: cannot apply (REASON)", with its line break.
std::string run_applicability_line(const OverlapPolicy& policy);

// The whole file: "# tandem tune VERSION (COMMIT), DATE", each of `about` as a '#' line, the
// applicability line, and the policy in its canonical text.
std::string tune_policy_file_text(const bench::RunInfo& info, const std::vector<std::string>& about,
                                  const OverlapPolicy& policy);

}  // namespace tandem::cli
