#include <algorithm>
#include <memory>

#include "harness/bench_ranks.h"
#include "harness/case_loop.h"
#include "harness/case_trials.h"
#include "harness/microbenchmark.h"
#include "harness/registry.h"
#include "tandem/error.h"
#include "tandem/nvtx.h"

namespace tandem::bench {

namespace {
// Resizes --balance-size may take: the first lands within a few percent, the others correct for
// a collective whose bandwidth still changes with size.
constexpr int kBalanceSteps = 3;
}  // namespace

std::unique_ptr<Scenario> make_scenario(const std::string& name, const BenchOptions& options, int nranks) {
  const ScenarioOptions& o = options.scenario;
  TANDEM_REQUIRE(nranks >= 1, "a scenario needs at least one rank");
  TANDEM_REQUIRE(o.layers >= 1, "--layers must be at least 1 (got " + std::to_string(o.layers) + ")");
  TANDEM_REQUIRE(o.seq >= 1, "--seq must be positive (got " + std::to_string(o.seq) + ")");
  TANDEM_REQUIRE(o.micro_batches >= 1,
                 "--micro-batches must be at least 1 (got " + std::to_string(o.micro_batches) + ")");
  TANDEM_REQUIRE(o.bucket_mb > 0 && o.first_bucket_mb > 0, "--bucket-mb and --first-bucket-mb must be positive");
  const WorkloadEntry& entry = find_workload(name);
  TANDEM_REQUIRE(entry.scenario, "'" + name + "' is a compute workload, not a training scenario");
  ScenarioConfig c;
  c.options = o;
  c.dtype = options.dtype;
  c.seed = options.workload.seed;
  c.nranks = nranks;
  c.in_place = options.in_place;
  return entry.scenario(c);
}

double for_each_case(const BenchOptions& options, int nranks, const CaseBody& body, std::vector<std::string>* notes,
                     const ProgressSink& progress) {
  validate(options);
  validate_for_ranks(options, nranks);
  const auto sizes = size_sweep(options.min_bytes, options.max_bytes, options.step_factor);
  double hbm_bandwidth_gbps = 0;
  run_on_local_ranks(
      options, nranks,
      [&](RankContext& ctx) {
        const bool collects = collects_results(options, ctx.rank);
        if (collects) hbm_bandwidth_gbps = ctx.hbm_bandwidth_gbps;
        // Every case alike: set up, measured, handed to `body`, its windows released; every rank is
        // done with it before any frees its buffers and moves on.
        const auto run_case = [&](Case& c) {
          // Nsight Systems: the case's setup, baselines and policies under one range.
          const NvtxRange case_range(c.label());
          if (ctx.rank == 0 && progress) progress(c.label() + ": setup and reference");
          c.setup(ctx);
          if (collects && notes && !c.setup_note().empty()) notes->push_back(c.setup_note());
          CaseTrials trials(ctx, options, c);
          trials.capture_footprints();
          trials.choose_count();
          trials.measure_baselines(progress);
          // --balance-size: when whole compute units cannot match the collective (one 8192^3 GEMM
          // against a 512 MiB collective), resize the collective to the compute instead. Every rank
          // computes the same size from the same slowest-rank medians. A collective's time is not
          // linear in its size (an all-to-all's bandwidth still grows past 512 MiB), so the resize
          // repeats until the times agree.
          for (int step = 0; options.balance_size && options.balance && step < kBalanceSteps; ++step) {
            const uint64_t balanced = trials.balanced_collective_bytes();
            if (balanced == c.program().collective_bytes() || !trials.resize_collective(balanced, progress)) break;
          }
          const Program& program = c.program();
          body(trials, CaseId{c.workload(), program.collective_kinds(), program.collective_bytes(), ctx.rank, nranks,
                              collects, c.label()});
          // Windows are registered collectively and must be released before the buffers go.
          trials.release_windows();
          ctx.group.barrier();
        };
        for (const auto& name : options.workloads) {
          const WorkloadEntry& entry = find_workload(name);
          if (entry.scenario) {
            run_case(*make_scenario(name, options, nranks));
            continue;
          }
          WorkloadOptions workload_options = options.workload;
          workload_options.dtype = options.dtype;
          auto workload = entry.compute(workload_options);
          workload->setup(ctx);
          for (const auto& collective : options.collectives)
            for (uint64_t bytes : sizes) {
              Microbenchmark m(name, *workload, find_collective(collective), bytes, options.dtype,
                               options.workload.seed, options.in_place);
              run_case(m);
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
  const size_t microbenchmarks =
      options.collectives.size() * size_sweep(options.min_bytes, options.max_bytes, options.step_factor).size();
  size_t cases = 0;
  for (const auto& name : options.workloads) cases += find_workload(name).scenario ? 1 : microbenchmarks;
  return cases;
}

void record_policies(PolicyTrials& trials, const CaseId& id, const BenchOptions& options, size_t& step,
                     size_t total_steps, BenchOutcome& outcome, const RowSink& on_row, const ProgressSink& progress) {
  const std::string& label = id.label;
  // One GPU: what shaping would do to the workload's kernel, once per workload.
  if (options.one_gpu && id.collects)
    if (auto plan = trials.residency_plan())
      if (std::none_of(outcome.residency_plans.begin(), outcome.residency_plans.end(),
                       [&](const ResidencyPlan& p) { return p.workload == plan->workload; }))
        outcome.residency_plans.push_back(std::move(*plan));
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
