#include <algorithm>
#include <cstdio>
#include <utility>

#include "harness/bench_ranks.h"
#include "harness/footprints.h"
#include "harness/metrics.h"
#include "harness/policy_trials.h"
#include "harness/scenario_runner.h"
#include "harness/slowest_rank.h"
#include "tandem/cuda_check.h"
#include "tandem/nvtx.h"

namespace tandem::bench {

namespace {

struct Samples {
  std::vector<double> total, compute_busy, comm_busy;
};
struct Measured {
  Summary total, compute_busy, comm_busy;
};

const char* mode_name(ScenarioMode m) {
  switch (m) {
    case ScenarioMode::Full:
      return "overlap";
    case ScenarioMode::ComputeOnly:
      return "compute alone";
    case ScenarioMode::CommOnly:
      return "collectives alone";
    case ScenarioMode::Sequential:
      return "sequential";
  }
  return "?";
}

// One scenario on one rank: baselines in the default configuration, then each policy.
class ScenarioCase final : public PolicyTrials {
 public:
  // Every rank runs the same calls in the same order; aggregates go through ctx.group (harness/
  // coordinator.h), so all ranks - threads or processes - compute the same ones and take the same
  // decisions.
  ScenarioCase(RankContext& ctx, const BenchOptions& options, Scenario& scenario)
      : PolicyTrials(options.policies_given), ctx_(ctx), options_(options), scenario_(scenario) {
    TANDEM_CUDA_CHECK(cudaEventCreate(&start_));
    TANDEM_CUDA_CHECK(cudaEventCreate(&end_));
    restore();
  }
  ~ScenarioCase() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(end_);
  }
  ScenarioCase(const ScenarioCase&) = delete;
  ScenarioCase& operator=(const ScenarioCase&) = delete;

  // One sequential iteration first: NCCL connects to its peers on first use (not allowed during
  // capture), libraries load their kernels, and every buffer - collective outputs included - holds
  // real values before anything is timed (compute-only runs read what collectives left there).
  // Then the first collective and the first compute operation are captured to read their kernels.
  void capture_footprints() {
    ctx_.group.barrier();
    run_once(ScenarioMode::Sequential, nullptr);
    ctx_.group.barrier();
    auto wait = [&](cudaStream_t s) { ctx_.wait(s, "footprint capture"); };
    const auto comm = capture_kernel_launches(
        ctx_.comm_default, [&](cudaStream_t s) { scenario_.enqueue_sample(ctx_, s, true); }, wait);
    // One rank: NCCL copies instead of launching a kernel, so there is no footprint to leave room for.
    if (const auto nccl = first_nccl_kernel(comm, ctx_.limits)) comm_kernel_ = *nccl;
    const auto compute = capture_kernel_launches(
        ctx_.compute, [&](cudaStream_t s) { scenario_.enqueue_sample(ctx_, s, false); }, wait);
    TANDEM_REQUIRE(!compute.empty(), scenario_.name() + ": the first compute operation launched no kernel");
    compute_kernel_ = footprint_record(compute.front(), ctx_.limits);
  }

  // t_seq first: it leaves real values in every buffer the compute-only run then reads.
  // `progress` (rank 0's, may be empty) hears when each baseline starts: long scenario baselines are
  // phases worth seeing, and scripts/clock_phases.py attributes power samples by them.
  void measure_baselines(const ProgressSink& progress) {
    const auto announce = [&](ScenarioMode mode) {
      if (progress && ctx_.rank == 0) progress(scenario_.name() + ": baseline, " + mode_name(mode));
    };
    announce(ScenarioMode::Sequential);
    baselines_.seq = measure(ScenarioMode::Sequential, nullptr).total;
    announce(ScenarioMode::ComputeOnly);
    baselines_.compute = measure(ScenarioMode::ComputeOnly, nullptr).total;
    announce(ScenarioMode::CommOnly);
    baselines_.comm = measure(ScenarioMode::CommOnly, nullptr).total;
    if (progress && ctx_.rank == 0) progress(scenario_.name() + ": baseline, operations one by one");
    baselines_.chain_ms = measure_chain();
    // The issue-level "ideal bound": the longer of the two sides along the dependency chain, or the
    // device memory both sides need, whichever is slower.
    baselines_.bound_ms =
        std::max(baselines_.chain_ms, bound_ms(baselines_.compute.median, baselines_.comm.median, scenario_.hbm_bytes(),
                                               ctx_.group.min(ctx_.hbm_bandwidth_gbps)));
  }

  void remeasure_baselines() override { measure_baselines({}); }

  CaseTraits traits() override {
    CaseTraits t;
    t.sm_count = ctx_.limits.sm_count;
    // The element-wise kernels are shaped together; the first one's natural residency bounds the levels.
    const auto kernels = scenario_.shaped_kernels();
    t.natural_blocks_per_sm = kernels.empty() ? 0 : kernels.front()->natural_blocks_per_sm();
    t.has_sm_target = scenario_.set_sm_count_target(0);  // 0 = no cap: a harmless probe
    return t;
  }

 private:
  void check_and_measure(const OverlapPolicy& policy, Row& row) override {
    const ScenarioMode mode = policy.is_sequential() ? ScenarioMode::Sequential : ScenarioMode::Full;
    row.wrong = options_.check ? check(mode, &policy) : 0;
    const Measured m = measure(mode, &policy);
    if (!options_.trace_path.empty()) trace(mode, policy);
    const auto kernels = scenario_.shaped_kernels();
    const bool shaped = policy.shape.kind != ShapeTarget::Kind::None && !kernels.empty();
    fill_row(row, policy, m, shaped ? kernels.front() : nullptr);
  }

  std::vector<TraceIteration> take_traces() override { return std::exchange(traces_, {}); }

  // One more iteration under the policy's controls, its operations bracketed by events; every rank
  // keeps every rank's timeline (Coordinator::all_gather_series), so threads and processes alike
  // hand the collecting rank the whole picture.
  void trace(ScenarioMode mode, const OverlapPolicy& policy) {
    ctx_.group.barrier();
    TraceIteration mine;
    mine.workload = scenario_.name();
    mine.policy = to_string(policy);
    mine.rank = ctx_.rank;
    mine.sequential = mode == ScenarioMode::Sequential;
    mine.spans = scenario_.trace_iteration(ctx_, streams_for(mode), mode);
    // Names, streams and dependencies are the same on every rank; the times are each rank's own.
    for (auto& it : every_rank(mine, ctx_.group.all_gather_series(span_times(mine.spans))))
      traces_.push_back(std::move(it));
  }

  std::string apply(const OverlapPolicy& policy) override {
    if (policy.shape.kind != ShapeTarget::Kind::None) {
      const auto kernels = scenario_.shaped_kernels();
      if (kernels.empty()) return "the scenario's kernels all belong to libraries (cuBLASLt, NCCL)";
      if (policy.shape.kind == ShapeTarget::Kind::Auto && comm_kernel_.kernel.empty())
        return scenario_.collective() + " launched no kernel on " + std::to_string(ctx_.nranks) +
               " rank(s), so there is no footprint to leave room for";
      try {
        // Only tandem's element-wise kernels are shaped; cuBLASLt's GEMMs run as they are.
        for (ShapedKernel* k : kernels) k->shape(policy.shape, comm_kernel_.footprint);
      } catch (const Error& e) {
        return e.what();
      }
    }
    if (policy.sm_target) {
      sm_target_set_ = true;
      if (!scenario_.set_sm_count_target(*policy.sm_target))
        return "sm-target applies to cuBLASLt GEMMs; the scenario has none";
    }
    active_.comm = policy.comm_priority ? ctx_.comm_high.get() : ctx_.comm_default.get();
    active_.communicator = ctx_.communicator_for(policy);
    if (policy.registers_windows()) {
      // Registered once per communicator and kept until the scenario's buffers are freed.
      const CopyEngineLanes* lanes = policy.copy_engine ? &ctx_.copy_engine_lanes(policy) : nullptr;
      const std::string why = scenario_.use_symmetric_windows(ctx_, active_.communicator, lanes);
      if (!why.empty()) return why;
    }
    active_.comm_first = policy.order == LaunchOrder::CommFirst;
    if (policy.green_sms) {
      try {
        active_.compute = ctx_.green_stream(*policy.green_sms);
      } catch (const Error& e) {
        return std::string("no green context: ") + e.what();
      }
    }
    return "";
  }

  void restore() override {
    for (ShapedKernel* k : scenario_.shaped_kernels()) k->shape(ShapeTarget{});
    if (sm_target_set_) scenario_.set_sm_count_target(0);
    sm_target_set_ = false;
    active_ = ScenarioStreams{};
    active_.compute = ctx_.compute;
    active_.comm = ctx_.comm_default;
    active_.communicator = ctx_.comm;
  }

  void fill_row(Row& row, const OverlapPolicy& policy, const Measured& m, const ShapedKernel* kernel) const {
    row.count = scenario_.count();
    row.policy = to_string(policy);
    // Each side's busy time under overlap (its stream's stretches between waits for the other) over
    // its time alone.
    fill_times(row, baselines_, m.total, m.compute_busy.median, m.comm_busy.median, policy.is_sequential(),
               double(scenario_.collective_bytes()), scenario_.busbw_factor(ctx_.nranks));
    fill_kernel_columns(row, kernel);
  }

  // Baselines and sequential run in the default configuration; Full runs with what apply() chose.
  ScenarioStreams streams_for(ScenarioMode mode) const {
    if (mode == ScenarioMode::Full) return active_;
    ScenarioStreams s;
    s.compute = ctx_.compute;
    s.comm = ctx_.comm_default;
    s.communicator = ctx_.comm;
    return s;
  }

  std::string step_name(ScenarioMode mode, const OverlapPolicy* policy) const {
    return scenario_.name() + " " + mode_name(mode) + (policy ? " " + to_string(*policy) : std::string());
  }

  void run_once(ScenarioMode mode, const OverlapPolicy* policy) {
    const ScenarioStreams streams = streams_for(mode);
    scenario_.enqueue_iteration(ctx_, streams, mode);
    ctx_.wait(streams.compute, step_name(mode, policy));
  }

  // The dependency chain's length with every operation at its time alone (Program::chain_ms): each
  // operation's median over `iters` event-timed iterations of its side, scaled to the side's
  // baseline (metrics.h operation_times). The slowest rank's chain counts.
  double measure_chain() {
    std::vector<double> medians[2];
    const ScenarioMode sides[2] = {ScenarioMode::ComputeOnly, ScenarioMode::CommOnly};
    for (int side = 0; side < 2; ++side) {
      std::vector<std::vector<double>> samples;
      for (int rep = 0; rep < options_.iters; ++rep) {
        ctx_.group.barrier();
        const auto ms = scenario_.time_operations(ctx_, streams_for(sides[side]), sides[side]);
        samples.resize(ms.size());
        for (size_t i = 0; i < ms.size(); ++i) samples[i].push_back(ms[i]);
      }
      for (auto& op : samples) medians[side].push_back(summarize(op).median);
    }
    const double chain =
        scenario_.chain_ms(operation_times(medians[0], medians[1], baselines_.compute.median, baselines_.comm.median));
    return -ctx_.group.min(-chain);
  }

  // Poisons the outputs, runs one iteration and counts wrong elements over all ranks.
  int64_t check(ScenarioMode mode, const OverlapPolicy* policy) {
    scenario_.poison_outputs(ctx_.compute);
    // The poison ran on the compute stream; the iteration may start on another stream, which must
    // not run before the poison lands.
    ctx_.wait(ctx_.compute, "poison outputs");
    ctx_.group.barrier();
    run_once(mode, policy);
    return ctx_.group.sum(scenario_.count_wrong(ctx_));  // every rank gets the same total
  }

  Measured measure(ScenarioMode mode, const OverlapPolicy* policy) {
    Samples mine;
    const std::string step = step_name(mode, policy);
    const ScenarioStreams streams = streams_for(mode);
    for (int rep = 0; rep < options_.warmup + options_.iters; ++rep) {
      // Ranks enqueue together, so no rank waits in a collective for another's host.
      ctx_.group.barrier();
      // The iteration begins after `start_` and is over at `end_` on its compute stream, into which
      // it joins every other stream it used.
      TANDEM_CUDA_CHECK(cudaEventRecord(start_, streams.compute));
      scenario_.enqueue_iteration(ctx_, streams, mode);
      TANDEM_CUDA_CHECK(cudaEventRecord(end_, streams.compute));
      ctx_.wait(streams.compute, step);
      if (rep < options_.warmup) continue;
      float ms = 0;
      TANDEM_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, end_));
      mine.total.push_back(ms);
      if (mode == ScenarioMode::Full) {
        const StreamBusy busy = scenario_.last_busy();
        mine.compute_busy.push_back(busy.compute_ms);
        mine.comm_busy.push_back(busy.comm_ms);
      }
    }
    const auto summaries = slowest_rank_summaries(ctx_.group, {mine.total, mine.compute_busy, mine.comm_busy});
    Measured m;
    m.total = summaries[0];
    m.compute_busy = summaries[1];
    m.comm_busy = summaries[2];
    return m;
  }

  RankContext& ctx_;
  const BenchOptions& options_;
  Scenario& scenario_;
  cudaEvent_t start_ = nullptr, end_ = nullptr;
  ScenarioStreams active_;  // what apply() chose for the policy being measured (defaults otherwise)
  bool sm_target_set_ = false;
  Baselines baselines_;
  std::vector<TraceIteration> traces_;  // `--trace`: since the last take_traces()
};

std::string join(const std::vector<std::string>& items, const char* sep = ",") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

bool is_scenario(const std::string& name) {
  for (const auto& e : scenario_registry())
    if (name == e.name) return true;
  return false;
}

const std::vector<std::string>& scenario_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : scenario_registry()) out.push_back(e.name);
    return out;
  }();
  return names;
}

std::unique_ptr<Scenario> make_scenario(const std::string& name, const BenchOptions& options, int nranks) {
  const ScenarioOptions& o = options.scenario;
  TANDEM_REQUIRE(nranks >= 1, "a scenario needs at least one rank");
  TANDEM_REQUIRE(o.layers >= 1, "--layers must be at least 1 (got " + std::to_string(o.layers) + ")");
  TANDEM_REQUIRE(o.seq >= 1, "--seq must be positive (got " + std::to_string(o.seq) + ")");
  TANDEM_REQUIRE(o.micro_batches >= 1,
                 "--micro-batches must be at least 1 (got " + std::to_string(o.micro_batches) + ")");
  TANDEM_REQUIRE(o.bucket_mb > 0 && o.first_bucket_mb > 0, "--bucket-mb and --first-bucket-mb must be positive");
  for (const auto& e : scenario_registry())
    if (name == e.name) {
      ScenarioConfig c;
      c.options = o;
      c.dtype = options.dtype;
      c.seed = options.workload.seed;
      c.nranks = nranks;
      c.in_place = options.in_place;
      return e.make(c);
    }
  TANDEM_THROW("unknown scenario '" + name + "'; accepted: " + join(scenario_names(), ", "));
}

void validate_scenarios(const BenchOptions& options, int nranks) {
  for (const auto& name : options.workloads) make_scenario(name, options, nranks);
}

double for_each_scenario(const BenchOptions& options, int nranks, const CaseBody& body, std::vector<std::string>* notes,
                         const ProgressSink& progress) {
  validate(options);
  validate_scenarios(options, nranks);
  double hbm_bandwidth_gbps = 0;
  run_on_local_ranks(
      options, nranks,
      [&](RankContext& ctx) {
        const bool collects = collects_results(options, ctx.rank);
        if (collects) hbm_bandwidth_gbps = ctx.hbm_bandwidth_gbps;
        for (const auto& name : options.workloads) {
          // Nsight Systems: the scenario's setup, baselines and policies under one range.
          const NvtxRange case_range(name);
          if (ctx.rank == 0 && progress) progress(name + ": setup and reference");
          // Freed at the end of each pass, before the next scenario allocates.
          auto scenario = make_scenario(name, options, nranks);
          scenario->setup(ctx);
          if (collects && notes && !scenario->setup_note().empty()) notes->push_back(scenario->setup_note());
          {
            ScenarioCase c(ctx, options, *scenario);
            c.capture_footprints();
            c.measure_baselines(progress);
            body(c,
                 CaseId{name, scenario->collective(), scenario->collective_bytes(), ctx.rank, nranks, collects, name});
          }
          // Windows are registered collectively and must be released before the buffers go; every
          // rank is done with this scenario before any frees its buffers and moves on.
          scenario->release_windows(ctx);
          ctx.group.barrier();
        }
      },
      notes);
  return hbm_bandwidth_gbps;
}

}  // namespace tandem::bench
