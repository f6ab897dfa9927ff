#pragma once
// What `tandem tune -- CMD` reports, as the benchmark's reporters do for its rows (bench/report/reporter.h):
// the '#' header echoing the configuration, one progress line per run, and at the end the results
// table, the decision, what was written and the OK/INTERRUPTED footer. The program tuner
// (program_tuner.h) measures; the command fills these and hands them to a reporter. Knows
// no tuner type: the rows come already ranked, with their status.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "report/report.h"

namespace tandem::program_tools {

struct ProgramTuneContext {
  bench::RunInfo info;  // tool, version, commit, date
  std::string program;  // the command, as a shell would take it
  std::string metric;   // "--metric '...', lower is better" or "wall time (s), lower is better"
  int rounds = 0;
  size_t candidates = 0;
  double timeout_s = 0;  // <= 0: none given
  std::string logs;
};

// One line of the results table: the baseline first, then the candidates best first.
struct ProgramPolicyLine {
  std::string policy;
  bool measured = false;  // some round gave a value
  double median = 0, min = 0, max = 0, spread = 0;
  std::optional<double> vs_baseline_percent;
  std::string status;  // "baseline (no tandem)", "WINNER", "ok", "disqualified: <why>"
};

struct ProgramTuneEnd {
  bool finished = false;  // every round ran (not interrupted)
  int rounds_done = 0, rounds = 0;
  size_t runs = 0;
  std::vector<ProgramPolicyLine> table;
  int baseline_exit_status = 0;
  std::string decision;     // the reason, "" when no round finished
  std::string policy_file;  // written ("" when no round finished, or the write failed)
  std::string chosen;       // the policy written to it
  std::string winner;       // "" when no candidate beat the baseline
  std::string logs;
};

class ProgramTuneReporter {
 public:
  virtual ~ProgramTuneReporter() = default;
  virtual void report_context(const ProgramTuneContext& context) = 0;
  virtual void report_progress(const std::string& line) { (void)line; }
  // Something the user should know that does not stop the tune (a best-so-far file not written).
  virtual void report_warning(const std::string& line) = 0;
  virtual void report_end(const ProgramTuneEnd& end) = 0;
};

// The results table ('#' column header, one fixed-width line per policy).
std::string program_table_text(const std::vector<ProgramPolicyLine>& table);

// On `out` the header, the table and the footer; on `err` the progress lines ("tandem tune: ..."),
// unless turned off (-q). Everything echoed from the user is printable.
class ProgramTuneConsoleReporter final : public ProgramTuneReporter {
 public:
  explicit ProgramTuneConsoleReporter(bool progress, std::FILE* out = stdout, std::FILE* err = stderr)
      : progress_(progress), out_(out), err_(err) {}
  void report_context(const ProgramTuneContext& context) override;
  void report_progress(const std::string& line) override;
  void report_warning(const std::string& line) override;
  void report_end(const ProgramTuneEnd& end) override;

 private:
  bool progress_;
  std::FILE* out_;
  std::FILE* err_;
};

}  // namespace tandem::program_tools
