#pragma once
// What `tandem tune -- CMD` measures a run by: the numbers a --metric pattern (metric_pattern.h)
// captures in the run's output, or the run's wall time. A run's output is the program's, not ours:
// it is read in bounded memory whatever its size and line lengths, in time linear in its size,
// stopping early when tandem is interrupted.
#include <memory>
#include <string>
#include <vector>

#include "program_tools/metric_pattern.h"

namespace tandem::program_tools {

class ProgramMetric {
 public:
  ProgramMetric() = default;  // wall time, lower is better
  // Throws tandem::UserError (one line naming the pattern) for an empty or invalid pattern, or one
  // without exactly one capture group.
  ProgramMetric(const std::string& pattern, bool higher_is_better);
  bool is_wall_time() const { return pattern_.empty(); }
  bool higher_is_better() const { return higher_is_better_; }
  const std::string& pattern() const { return pattern_; }
  // "step_ms_median" style description for output: the pattern, or "wall time (s)".
  std::string describe() const;

  // A line ends at '\n' or '\r' (a progress bar's redraws count as lines). One of up to
  // 2 x kLinePieceBytes is searched whole; a longer one in its first and its last kLinePieceBytes.
  static constexpr size_t kLinePieceBytes = size_t{1} << 20;
  // Matches kept per run (the run's value is their median) and per line.
  static constexpr size_t kMaxValues = 100000;
  static constexpr size_t kMaxMatchesPerLine = 64;

  // Every number the capture group matched, line by line. A capture that is not a decimal number
  // (digits with an optional sign, point and exponent: no hex, inf or nan) is skipped and reported in
  // `not_numbers` (the first few); one beyond a double's range ("1e400"), in `not_finite`. values_in_file
  // reads a regular file only (never a FIFO or a device) and stops early, with what it found so far,
  // once tandem is interrupted (process::Supervisor::interrupted).
  std::vector<double> values_in_file(const std::string& path, std::vector<std::string>* not_numbers = nullptr,
                                     std::vector<std::string>* not_finite = nullptr) const;
  std::vector<double> values_in_text(const std::string& text, std::vector<std::string>* not_numbers = nullptr,
                                     std::vector<std::string>* not_finite = nullptr) const;

 private:
  class Scanner;
  std::string pattern_;
  bool higher_is_better_ = false;
  std::shared_ptr<const MetricPattern> matcher_;
};

}  // namespace tandem::program_tools
