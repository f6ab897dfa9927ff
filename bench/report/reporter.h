#pragma once
// Measurement and reporting apart, as google/benchmark separates them: the runners measure and hand
// each result to a Reporter as it comes; reporters decide what the user sees and what is written
// (report/console_reporter.h: the '#' table on stdout; report/json_reporter.h: the --json
// document; report/trace_reporter.h: the --trace file). Only the process that reports (rank 0)
// calls them, in this order: report_context, then report_progress and report_row as the run
// goes, then report_end, or report_interrupted when the run fails.
#include <memory>
#include <string>
#include <vector>

#include "report/report.h"
#include "report/trace.h"

namespace tandem::bench {

// What a finished run measured.
struct RunResults {
  std::vector<Row> rows;
  std::vector<std::string> notes;              // policies skipped, launch and setup notes
  double hbm_bandwidth_gbps = 0;               // measured device-to-device copy bandwidth (the collecting rank's)
  std::vector<TraceIteration> traces;          // `--trace`: one iteration per policy and rank (report/trace.h)
  std::vector<ResidencyPlan> residency_plans;  // one GPU: each shapeable workload's (report.h)
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  // Before anything is measured: the run's identity and resolved configuration.
  virtual void report_context(const RunInfo& info) = 0;
  // A step begins ("[3/12] gemm all-reduce 512MiB priority"): for people watching, not for files.
  virtual void report_progress(const std::string& line) { (void)line; }
  // One row, as soon as it is measured.
  virtual void report_row(const Row& row) = 0;
  // The run measured every case.
  virtual void report_end(const RunResults& results) = 0;
  // The run stopped before the end (a failed or lost rank, a time-out): no report_end follows, and
  // `why` (the error) is reported by the command itself. What was reported so far must be kept.
  virtual void report_interrupted(const std::string& why) { (void)why; }
};

// Several reporters as one, called in the order added.
class Reporters final : public Reporter {
 public:
  Reporters& add(std::unique_ptr<Reporter> reporter);
  void report_context(const RunInfo& info) override;
  void report_progress(const std::string& line) override;
  void report_row(const Row& row) override;
  void report_end(const RunResults& results) override;
  void report_interrupted(const std::string& why) override;

 private:
  std::vector<std::unique_ptr<Reporter>> reporters_;
};

// Reports nothing: the processes of a launch other than rank 0's.
class NullReporter final : public Reporter {
 public:
  void report_context(const RunInfo&) override {}
  void report_row(const Row&) override {}
  void report_end(const RunResults&) override {}
};

}  // namespace tandem::bench
