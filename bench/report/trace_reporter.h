#pragma once
// The --trace file (report/trace.h): at the end of the run, every traced iteration as a Chrome
// trace, with the run's identity as the JSON results carry it (docs/BENCH_JSON.md), without rows.
#include <string>
#include <utility>

#include "report/reporter.h"

namespace tandem::bench {

class TraceReporter final : public Reporter {
 public:
  explicit TraceReporter(std::string path) : path_(std::move(path)) {}
  void report_context(const RunInfo& info) override { info_ = info; }
  void report_row(const Row&) override {}
  // Writes the trace atomically; throws tandem::Error naming the path if it cannot.
  void report_end(const RunResults& results) override;

 private:
  std::string path_;
  RunInfo info_;
};

}  // namespace tandem::bench
