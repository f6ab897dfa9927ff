#pragma once
// The run as people read it: on `out` the '#' header echoing the configuration, the column
// header, one fixed-width row per measurement as it comes, notes and the OK/FAILED footer; on `err`
// the progress lines ("tandem bench: [3/12] ..."), unless turned off (--quiet).
#include <cstdio>

#include "report/reporter.h"

namespace tandem::bench {

class ConsoleReporter final : public Reporter {
 public:
  explicit ConsoleReporter(bool progress, std::FILE* out = stdout, std::FILE* err = stderr)
      : progress_(progress), out_(out), err_(err) {}
  void report_context(const RunInfo& info) override;
  void report_progress(const std::string& line) override;
  void report_row(const Row& row) override;
  void report_end(const RunResults& results) override;

 private:
  bool progress_;
  std::FILE* out_;
  std::FILE* err_;
  std::string tool_ = "bench";  // names the progress lines: "tandem bench: ..."
};

}  // namespace tandem::bench
