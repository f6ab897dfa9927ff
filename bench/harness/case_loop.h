#pragma once
// The experiment: for each case (a workload x collective x size, or a training scenario) measure both
// sides alone and in sequence under the default configuration, then every policy, checking results
// under each. One loop over the cases, one runner for every case (harness/case_trials.h).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/bench_options.h"
#include "report/report.h"
#include "report/reporter.h"
#include "report/trace.h"

namespace tandem::bench {

// What a run measured: rows, notes (policies skipped in the default suite, and why), the HBM
// bandwidth and the `--trace` iterations; what the reporters receive at the end (report/reporter.h).
using BenchOutcome = RunResults;

using RowSink = std::function<void(const Row&)>;
using ProgressSink = std::function<void(const std::string&)>;

class PolicyTrials;
class Scenario;

// Which case a CaseBody is called for, on which rank.
struct CaseId {
  std::string workload;
  std::string collective;
  uint64_t bytes = 0;
  int rank = 0;
  int nranks = 1;
  // This rank collects the results of its process (ranks/local_ranks.h): rank 0's thread, or the
  // process's one rank when a launcher started one process per rank. Only rank 0 prints.
  bool collects = true;
  // The case as progress lines and NVTX ranges name it: "gemm all-reduce 256MiB", or the scenario.
  std::string label;
};
// Called on every rank's thread, once per case, after footprints and baselines are measured.
using CaseBody = std::function<void(PolicyTrials& trials, const CaseId& id)>;

// Creates the communicators, one thread per rank (or this process's rank, when a launcher started one
// process per rank), and runs `body` for every case, after its setup, footprints and baselines (of
// which `progress` hears): for a compute workload one microbenchmark per collective and size (the
// workload set up once), for a training scenario the scenario. CaseId.collective is the case's
// collectives ("all-gather+reduce-scatter") and CaseId.bytes their bytes per step. Returns the
// collecting rank's measured HBM copy bandwidth; `notes` receives rank 0's notes about the launch
// and the cases' setup notes. Throws after every local rank has stopped.
double for_each_case(const BenchOptions& options, int nranks, const CaseBody& body,
                     std::vector<std::string>* notes = nullptr, const ProgressSink& progress = {});
// The number of cases for_each_case runs.
size_t case_count(const BenchOptions& options);
// Builds the training scenario `name` for `nranks` ranks without touching a GPU; throws tandem::Error
// naming the option when it cannot run with these options on that many ranks.
std::unique_ptr<Scenario> make_scenario(const std::string& name, const BenchOptions& options, int nranks);
// A row with the case's identity filled in.
Row blank_row(const BenchOptions& options, const CaseId& id);
// Measures every policy on one case, on each rank's thread: the collecting rank keeps each row (and
// passes it to `on_row` on rank 0), or, for a policy that cannot apply, a note saying why. Rank 0
// reports "[step/total] <id.label> <policy>" before each; `step` is its running count over the cases.
void record_policies(PolicyTrials& trials, const CaseId& id, const BenchOptions& options, size_t& step,
                     size_t total_steps, BenchOutcome& outcome, const RowSink& on_row, const ProgressSink& progress);

// Runs every case under every policy on `nranks` GPUs (0..nranks-1), one thread each, or as one rank
// of a launcher's world (options.launch). Rows reach `on_row` as they are measured, on rank 0 only; every process's
// outcome holds the rows. Throws tandem::Error on any failure, after every local rank has stopped.
BenchOutcome run_bench(const BenchOptions& options, int nranks, const RowSink& on_row, const ProgressSink& progress);

}  // namespace tandem::bench
