#pragma once
// `tandem tune`'s progress lines within a case: policies measured out of an estimate, the best so far,
// and the time left in the case and in all, from the average seconds per measured policy so far.
#include <algorithm>
#include <cstddef>
#include <string>

#include "harness/tuner.h"

namespace tandem::bench {

class TuneProgress {
 public:
  // `resumed_cases` of the `total_cases` are skipped (tandem tune --resume), not tuned.
  explicit TuneProgress(size_t total_cases, size_t resumed_cases = 0)
      : total_cases_(total_cases), to_tune_(total_cases - std::min(total_cases, resumed_cases)) {}

  // Case `index` (1-based) begins, named e.g. "gemm all-reduce 256MiB". `first_estimate`: the
  // policies the first case's search may measure; later cases are expected to measure as many as
  // the case before them did.
  void start_case(size_t index, const std::string& name, size_t first_estimate);
  // The line for one step; `elapsed_s`: seconds since the first case began.
  std::string step_line(const TuneStep& step, double elapsed_s);

 private:
  size_t total_cases_;
  size_t to_tune_;
  size_t started_ = 0;  // cases tuned so far, this one included
  size_t index_ = 0;
  std::string name_;
  size_t expected_ = 0;       // policies this case's search is expected to measure
  size_t last_measured_ = 0;  // policies measured so far in this case
  size_t units_before_ = 0;   // measurements (policies and final-round policies) in finished cases
};

}  // namespace tandem::bench
