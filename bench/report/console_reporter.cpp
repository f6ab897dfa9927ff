#include "report/console_reporter.h"

namespace tandem::bench {

void ConsoleReporter::report_context(const RunInfo& info) {
  tool_ = info.tool;
  std::fputs(header_text(info).c_str(), out_);
  std::fputs(column_header_text(info.one_gpu).c_str(), out_);
  // Rows take seconds each: whoever reads a pipe sees the header now, not at the end.
  std::fflush(out_);
}

void ConsoleReporter::report_progress(const std::string& line) {
  if (progress_) std::fprintf(err_, "tandem %s: %s\n", tool_.c_str(), line.c_str());
}

void ConsoleReporter::report_row(const Row& row) {
  std::fputs(row_text(row).c_str(), out_);
  std::fflush(out_);
}

void ConsoleReporter::report_end(const RunResults& results) {
  std::fputs(residency_plan_text(results.residency_plans).c_str(), out_);
  std::fputs(footer_text(results.rows, results.notes).c_str(), out_);
}

}  // namespace tandem::bench
