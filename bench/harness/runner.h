#pragma once
// The experiment: for each workload x collective x size, measure both sides alone and in sequence
// under the default configuration, then every policy, checking results under each.
#include <functional>
#include <string>
#include <vector>

#include "harness/bench_options.h"
#include "harness/report.h"

namespace tandem::bench {

struct BenchOutcome {
  std::vector<Row> rows;
  std::vector<std::string> notes;  // policies skipped in the default suite, and why
  double hbm_bandwidth_gbps = 0;
};

using RowSink = std::function<void(const Row&)>;
using ProgressSink = std::function<void(const std::string&)>;

// Runs on `nranks` GPUs (0..nranks-1), one thread each. Rows reach `on_row` as they are measured
// (rank 0's thread). Throws tandem::Error on any failure, after every rank has stopped.
BenchOutcome run_bench(const BenchOptions& options, int nranks, const RowSink& on_row, const ProgressSink& progress);

}  // namespace tandem::bench
