#include "harness/bench_run.h"

#include <exception>

#include "harness/case_loop.h"
#include "ranks/local_ranks.h"

namespace tandem::bench {

BenchOutcome run_benchmark(const BenchOptions& options, int nranks, const RunInfo& info, Reporter& reporter) {
  NullReporter quiet;
  Reporter& out = reports_results(options.launch) ? reporter : quiet;
  out.report_context(info);
  const RowSink on_row = [&](const Row& row) { out.report_row(row); };
  const ProgressSink on_progress = [&](const std::string& line) { out.report_progress(line); };
  BenchOutcome outcome;
  try {
    outcome = run_bench(options, nranks, on_row, on_progress);
  } catch (const std::exception& e) {
    out.report_interrupted(e.what());
    throw;
  } catch (...) {
    out.report_interrupted("unknown error");
    throw;
  }
  out.report_end(outcome);
  return outcome;
}

}  // namespace tandem::bench
