#include "program_tools/program_tune_report.h"

#include "tandem/printable.h"
#include "tandem/text.h"

namespace tandem::program_tools {

std::string program_table_text(const std::vector<ProgramPolicyLine>& table) {
  std::string out = bench::format("# %-40s %12s %12s %12s %12s %8s  %s\n", "policy", "median", "min", "max", "spread",
                                  "vs base", "status");
  for (const ProgramPolicyLine& p : table) {
    const std::string vs = p.vs_baseline_percent ? bench::format("%+.1f%%", *p.vs_baseline_percent) : "-";
    out += p.measured ? bench::format("  %-40s %12.6g %12.6g %12.6g %12.6g %8s  ", p.policy.c_str(), p.median, p.min,
                                      p.max, p.spread, vs.c_str())
                      : bench::format("  %-40s %12s %12s %12s %12s %8s  ", p.policy.c_str(), "-", "-", "-", "-", "-");
    out += printable(p.status, 1000) + "\n";
  }
  return out;
}

void ProgramTuneConsoleReporter::report_context(const ProgramTuneContext& c) {
  std::fprintf(out_, "# tandem tune %s (%s), %s\n", c.info.tandem_version.c_str(), c.info.commit.c_str(),
               c.info.date.c_str());
  std::fprintf(out_, "# program    %s\n", printable(c.program, 1000).c_str());
  std::fprintf(out_, "# metric     %s\n", printable(c.metric, 1000).c_str());
  std::fprintf(out_,
               "# rounds     %d: the baseline (the program without tandem), then %zu candidates rotated per round\n",
               c.rounds, c.candidates);
  if (c.timeout_s > 0)
    std::fprintf(out_, "# timeout    %s s per run\n", number(c.timeout_s).c_str());
  else
    std::fprintf(out_,
                 "# timeout    none for the baseline; a candidate run after 3 x the slowest baseline run + 60 s\n");
  std::fprintf(out_, "# logs       %s\n", printable(c.logs, 1000).c_str());
  std::fflush(out_);
}

void ProgramTuneConsoleReporter::report_progress(const std::string& line) {
  if (progress_) std::fprintf(err_, "tandem tune: %s\n", printable(line, 2000).c_str());
}

void ProgramTuneConsoleReporter::report_warning(const std::string& line) {
  std::fprintf(err_, "tandem tune: warning: %s\n", printable(line, 1000).c_str());
}

void ProgramTuneConsoleReporter::report_end(const ProgramTuneEnd& e) {
  std::fprintf(out_, "#\n# %s after %d of %d rounds\n", e.finished ? "results" : "INTERRUPTED: results", e.rounds_done,
               e.rounds);
  std::fputs(program_table_text(e.table).c_str(), out_);
  if (e.baseline_exit_status != 0)
    std::fprintf(out_, "# note: the program exits with status %d without tandem; a candidate had to do the same\n",
                 e.baseline_exit_status);
  if (e.rounds_done > 0) {
    std::fprintf(out_, "# decision: %s\n", printable(e.decision, 2000).c_str());
    if (!e.policy_file.empty())
      std::fprintf(out_, "# wrote %s%s: %s\n", printable(e.policy_file, 1000).c_str(),
                   e.finished ? "" : " (UNFINISHED, the best so far)", e.chosen.c_str());
  } else {
    std::fprintf(out_, "# no round finished: no policy file written\n");
  }
  std::fprintf(out_, "# logs in %s\n", printable(e.logs, 1000).c_str());
  if (!e.finished)
    std::fprintf(out_, "# INTERRUPTED after %d of %d rounds\n", e.rounds_done, e.rounds);
  else
    std::fprintf(out_, "# OK: %zu runs in %d rounds, %s\n", e.runs, e.rounds_done,
                 e.winner.empty() ? "no policy beats the baseline" : ("winner " + e.winner).c_str());
  std::fflush(out_);
}

}  // namespace tandem::program_tools
