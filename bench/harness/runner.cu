#include <algorithm>
#include <memory>
#include <mutex>

#include "harness/bench_ranks.h"
#include "harness/case_runner.h"
#include "harness/metrics.h"
#include "harness/registry.h"
#include "harness/runner.h"
#include "harness/scenario_runner.h"
#include "tandem/cuda_check.h"
#include "tandem/kernel_footprint_probe.h"
#include "tandem/nvtx.h"

namespace tandem::bench {

namespace {
// Resizes --balance-size may take: the first lands within a few percent, the others correct for
// a collective whose bandwidth still changes with size.
constexpr int kBalanceSteps = 3;
}  // namespace

double for_each_case(const BenchOptions& options, int nranks, const CaseBody& body, std::vector<std::string>* notes,
                     const ProgressSink& progress) {
  // validate() forbids mixing scenarios with microbenchmarks.
  if (is_scenario(options.workloads.front())) return for_each_scenario(options, nranks, body, notes, progress);
  validate(options);
  validate_for_ranks(options, nranks);
  const auto sizes = size_sweep(options.min_bytes, options.max_bytes, options.step_factor);
  double hbm_bandwidth_gbps = 0;
  run_on_local_ranks(
      options, nranks,
      [&](RankContext& ctx) {
        const bool collects = collects_results(options, ctx.rank);
        if (collects) hbm_bandwidth_gbps = ctx.hbm_bandwidth_gbps;
        for (const auto& workload_name : options.workloads) {
          WorkloadOptions workload_options = options.workload;
          workload_options.dtype = options.dtype;
          auto workload = find_workload(workload_name).make(workload_options);
          workload->setup(ctx);
          for (const auto& collective_name : options.collectives) {
            for (uint64_t requested : sizes) {
              // Nsight Systems: the case's setup, baselines and policies under one range.
              const NvtxRange case_range(workload_name + " " + collective_name + " " + size_text(requested));
              uint64_t bytes = requested;
              auto collective = find_collective(collective_name).make();
              collective->setup(ctx, bytes, options.dtype, options.workload.seed, options.in_place);
              auto runner = std::make_unique<CaseRunner>(ctx, options, workload_name, *workload, *collective);
              runner->capture_footprints();
              runner->measure_baselines();
              // --balance-size: when whole compute units cannot match the collective (one 8192^3 GEMM
              // against a 512 MiB collective), resize the collective to the compute instead. Every
              // rank computes the same size from the same slowest-rank medians. A collective's time
              // is not linear in its size (an all-to-all's bandwidth still grows past 512 MiB), so
              // the resize repeats until the times agree.
              for (int step = 0; options.balance_size && options.balance && step < kBalanceSteps; ++step) {
                const uint64_t balanced = runner->balanced_collective_bytes(bytes);
                if (balanced == bytes) break;
                const int count = runner->count();
                runner.reset();
                collective->release_windows(ctx);
                bytes = balanced;
                collective = find_collective(collective_name).make();
                collective->setup(ctx, bytes, options.dtype, options.workload.seed, options.in_place);
                runner = std::make_unique<CaseRunner>(ctx, options, workload_name, *workload, *collective);
                runner->capture_footprints();
                runner->measure_baselines(count);
              }
              body(*runner, CaseId{workload_name, collective_name, bytes, ctx.rank, nranks, collects,
                                   workload_name + " " + collective_name + " " + size_text(bytes)});
              // Windows are registered collectively and must be released before the buffers go.
              runner.reset();
              collective->release_windows(ctx);
            }
          }
        }
      },
      notes);
  return hbm_bandwidth_gbps;
}

Row blank_row(const BenchOptions& options, const CaseId& id) {
  Row row;
  row.workload = id.workload;
  row.collective = id.collective;
  row.dtype = to_string(options.dtype);
  row.bytes = id.bytes;
  row.ranks = id.nranks;
  return row;
}

size_t case_count(const BenchOptions& options) {
  if (is_scenario(options.workloads.front())) return options.workloads.size();
  return options.workloads.size() * options.collectives.size() *
         size_sweep(options.min_bytes, options.max_bytes, options.step_factor).size();
}

void record_policies(PolicyTrials& trials, const CaseId& id, const BenchOptions& options, size_t& step,
                     size_t total_steps, BenchOutcome& outcome, const RowSink& on_row, const ProgressSink& progress) {
  const std::string& label = id.label;
  for (const auto& policy : effective_policies(options)) {
    if (id.rank == 0 && progress)
      progress("[" + std::to_string(++step) + "/" + std::to_string(total_steps) + "] " + label + " " +
               to_string(policy));
    Row row = blank_row(options, id);
    std::string skip_reason;
    bool measured = false;
    {
      const NvtxRange range(label + " " + to_string(policy));
      measured = trials.run_policy(policy, row, skip_reason);
    }
    auto traces = trials.take_traces();
    if (!id.collects) continue;
    outcome.traces.insert(outcome.traces.end(), traces.begin(), traces.end());
    if (!measured) {
      outcome.notes.push_back(to_string(policy) + " skipped for " + id.workload + ": " + skip_reason);
    } else {
      outcome.rows.push_back(row);
      if (on_row && id.rank == 0) on_row(row);
    }
  }
}

BenchOutcome run_bench(const BenchOptions& options, int nranks, const RowSink& on_row, const ProgressSink& progress) {
  const size_t total_steps = case_count(options) * effective_policies(options).size();
  BenchOutcome outcome;
  size_t step = 0;  // rank 0's count; only rank 0 reports progress
  const CaseBody body = [&](PolicyTrials& trials, const CaseId& id) {
    record_policies(trials, id, options, step, total_steps, outcome, on_row, progress);
  };
  outcome.hbm_bandwidth_gbps = for_each_case(options, nranks, body, &outcome.notes, progress);
  return outcome;
}

}  // namespace tandem::bench
