#pragma once
// One `tandem bench` run, measured and reported: the loop over its cases (harness/case_loop.h)
// drives the reporter (report/reporter.h) as it measures.
#include "harness/bench_options.h"
#include "harness/case_loop.h"
#include "report/reporter.h"

namespace tandem::bench {

// Runs every case of `options` on `nranks` ranks (threads, or this process's rank of a launcher's
// world). The process that reports (rank 0) gives `reporter` the context `info` first, then
// progress lines and each row as measured, then the end with every row and note; when the run
// throws, report_interrupted, and the error goes on to the caller. Every process returns the same
// rows (wrong elements summed over all ranks), so all exit with the same status.
BenchOutcome run_benchmark(const BenchOptions& options, int nranks, const RunInfo& info, Reporter& reporter);

}  // namespace tandem::bench
