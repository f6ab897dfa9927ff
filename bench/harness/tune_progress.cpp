#include "harness/tune_progress.h"

#include <algorithm>

#include "report/report.h"

namespace tandem::bench {
namespace {

// Policies measured in each final round: up to three finalists, `concurrent` and the paper's best.
constexpr size_t kFinalists = 5;
constexpr size_t kFinalUnits = kFinalists * kTuneFinalRounds;

}  // namespace

void TuneProgress::start_case(size_t index, const std::string& name, size_t first_estimate) {
  if (index_ != 0 && last_measured_ > 0) {
    units_before_ += last_measured_ + kFinalUnits;
    expected_ = last_measured_;  // the case before is the best guess for this one
  } else {
    expected_ = first_estimate;
  }
  ++started_;
  index_ = index;
  name_ = name;
  last_measured_ = 0;
}

std::string TuneProgress::step_line(const TuneStep& step, double elapsed_s) {
  last_measured_ = static_cast<size_t>(step.measured);
  // The estimate grows when the search outruns it (never "14/~12"); once in the final rounds the
  // search's count is known.
  const size_t expected = step.final_round ? last_measured_ : std::max(expected_, last_measured_ + 1);
  const size_t final_done = static_cast<size_t>(step.final_round) * kFinalists;
  const size_t units_done = units_before_ + last_measured_ + final_done;
  const double per_unit = units_done ? elapsed_s / static_cast<double>(units_done) : 0;
  const size_t case_left = expected - last_measured_ + kFinalUnits - final_done;
  const size_t cases_after = to_tune_ > started_ ? to_tune_ - started_ : 0;
  const double all_left = per_unit * static_cast<double>(case_left + cases_after * (expected + kFinalUnits));

  std::string line = "[" + std::to_string(index_) + "/" + std::to_string(total_cases_) + "] " + name_ + ": ";
  if (step.final_round)
    line += "final round " + std::to_string(step.final_round) + "/" + std::to_string(step.final_rounds);
  else
    line += std::to_string(last_measured_) + "/~" + std::to_string(expected) + " policies";
  if (step.best) line += ", best so far " + step.best->policy + " " + format("%.2f ms", step.best->t_overlap_ms);
  line += ", ~" + duration_text(per_unit * static_cast<double>(case_left)) + " left in this case, ~" +
          duration_text(all_left) + " in all";
  return line;
}

}  // namespace tandem::bench
