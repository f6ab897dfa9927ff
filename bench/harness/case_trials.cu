#include <algorithm>
#include <utility>

#include "harness/case_trials.h"
#include "harness/footprints.h"
#include "harness/slowest_rank.h"
#include "tandem/cuda_check.h"
#include "tandem/gpu_catalog.h"
#include "tandem/nvtx.h"

namespace tandem::bench {

namespace {

// In the order of Schedule's values.
const char* schedule_name(Schedule s) {
  static const char* const kNames[] = {"overlap", "compute alone", "collectives alone", "sequential"};
  return kNames[static_cast<int>(s)];
}

}  // namespace

CaseTrials::CaseTrials(RankContext& ctx, const BenchOptions& options, Case& c)
    : PolicyTrials(options.policies_given), ctx_(ctx), options_(options), case_(c) {
  TANDEM_CUDA_CHECK(cudaEventCreate(&start_));
  TANDEM_CUDA_CHECK(cudaEventCreate(&end_));
  rebuild();
  restore();
}

CaseTrials::~CaseTrials() {
  cudaEventDestroy(start_);
  cudaEventDestroy(end_);
}

void CaseTrials::rebuild() { executor_ = std::make_unique<Executor>(case_.program(), case_.default_issue()); }

void CaseTrials::capture_footprints() {
  ctx_.group.barrier();
  run_once(Schedule::Sequential, nullptr);
  ctx_.group.barrier();
  auto wait = [&](cudaStream_t s) { ctx_.wait(s, "footprint capture"); };
  const auto comm = capture_kernel_launches(
      ctx_.comm_default, [&](cudaStream_t s) { executor_->enqueue_sample(ctx_, s, true); }, wait);
  // One rank: NCCL copies instead of launching a kernel, so there is no footprint to leave room for.
  if (const auto nccl = first_nccl_kernel(comm, ctx_.limits)) comm_kernel_ = *nccl;
  const auto compute = capture_kernel_launches(
      ctx_.compute, [&](cudaStream_t s) { executor_->enqueue_sample(ctx_, s, false); }, wait);
  TANDEM_REQUIRE(!compute.empty(), case_.label() + ": the first compute operation launched no kernel");
  compute_kernel_ = footprint_record(compute.front(), ctx_.limits);
}

void CaseTrials::choose_count() {
  const NvtxRange range("baselines");
  int count = options_.count;
  if (options_.balance) {
    if (!case_.set_compute_count(1)) return;  // the case's program is fixed
    rebuild();
    const double unit = measure(Schedule::ComputeOnly, nullptr).total.median;
    const double comm = measure(Schedule::CommOnly, nullptr).total.median;
    count = balanced_count(unit, comm);
  }
  if (case_.set_compute_count(count)) rebuild();
}

void CaseTrials::measure_baselines(const ProgressSink& progress) {
  const NvtxRange range("baselines");
  const auto announce = [&](const std::string& what) {
    if (progress && ctx_.rank == 0) progress(case_.label() + ": baseline, " + what);
  };
  announce(schedule_name(Schedule::Sequential));
  baselines_.seq = measure(Schedule::Sequential, nullptr).total;
  announce(schedule_name(Schedule::ComputeOnly));
  baselines_.compute = measure(Schedule::ComputeOnly, nullptr).total;
  announce(schedule_name(Schedule::CommOnly));
  baselines_.comm = measure(Schedule::CommOnly, nullptr).total;
  // Where neither side waits for the other, the chain is the slower side; otherwise each
  // operation's time alone places it on the chain.
  if (case_.program().has_cross_waits()) {
    announce("operations one by one");
    baselines_.chain_ms = measure_chain();
  } else {
    baselines_.chain_ms = std::max(baselines_.compute.median, baselines_.comm.median);
  }
  // The ideal bound: the dependency chain, or the device memory both sides need, whichever is
  // slower.
  baselines_.bound_ms =
      std::max(baselines_.chain_ms, bound_ms(baselines_.compute.median, baselines_.comm.median,
                                             case_.program().hbm_bytes(), ctx_.group.min(ctx_.hbm_bandwidth_gbps)));
}

uint64_t CaseTrials::balanced_collective_bytes() const {
  return balanced_bytes(case_.program().collective_bytes(), baselines_.compute.median, baselines_.comm.median,
                        ctx_.nranks);
}

bool CaseTrials::resize_collective(uint64_t bytes, const ProgressSink& progress) {
  if (!case_.set_collective_bytes(ctx_, bytes)) return false;
  rebuild();
  capture_footprints();
  measure_baselines(progress);
  return true;
}

void CaseTrials::release_windows() {
  WindowMemory& memory = case_.window_memory();
  for (ncclComm_t c : memory.communicators()) executor_->clear_issue(c);
  memory.release(case_.label());
}

CaseTraits CaseTrials::traits() {
  CaseTraits t;
  t.sm_count = ctx_.limits.sm_count;
  // A scenario's element-wise kernels are shaped together; the first one's natural residency bounds
  // the levels.
  const auto kernels = case_.shaped_kernels();
  t.natural_blocks_per_sm = kernels.empty() ? 0 : kernels.front()->natural_blocks_per_sm();
  t.has_sm_target = case_.set_sm_count_target(0);  // 0 = no cap: a harmless probe
  return t;
}

void CaseTrials::check_and_measure(const OverlapPolicy& policy, Row& row) {
  const Schedule schedule = policy.is_sequential() ? Schedule::Sequential : Schedule::Overlap;
  row.wrong = options_.check ? check(schedule, &policy) : 0;
  const Measured m = measure(schedule, &policy);
  if (!options_.trace_path.empty()) trace(schedule, policy);
  row.count = case_.count();
  row.policy = to_string(policy);
  // Each side's busy time under overlap (its stream's stretches between waits for the other) over
  // its time alone.
  fill_times(row, baselines_, m.total, m.compute_busy.median, m.comm_busy.median, policy.is_sequential(),
             double(case_.program().collective_bytes()), case_.program().busbw_factor());
  // One GPU: the compute alone under the policy (its shaping, SM target, green context, stream
  // priority), against the compute alone in the default configuration.
  if (options_.one_gpu) {
    StepStreams streams = streams_for(Schedule::ComputeOnly);
    streams.compute = active_.compute;
    fill_compute_tax(row, measure_on(streams, Schedule::ComputeOnly, &policy).total);
  }
  const auto kernels = case_.shaped_kernels();
  fill_kernel_columns(row, kernels.empty() ? nullptr : kernels.front());
}

std::vector<TraceIteration> CaseTrials::take_traces() { return std::exchange(traces_, {}); }

std::optional<ResidencyPlan> CaseTrials::residency_plan() const {
  if (case_.shaped_kernels().empty()) return std::nullopt;
  ResidencyPlan plan;
  plan.workload = case_.workload();
  plan.gpu = ctx_.limits.name;
  plan.kernel = compute_kernel_.footprint;
  // The collective's own CTA where NCCL launched one; on one rank it launches none.
  plan.comm = comm_kernel_.kernel.empty() ? typical_nccl_footprint(ctx_.limits) : comm_kernel_.footprint;
  plan.natural_blocks_per_sm = residency(ctx_.limits, plan.kernel).blocks_per_sm;
  plan.levels =
      plan_levels(ctx_.limits, plan.kernel, plan.comm, least_shaping_with_room(ctx_.limits, plan.kernel, plan.comm));
  return plan;
}

void CaseTrials::trace(Schedule schedule, const OverlapPolicy& policy) {
  const NvtxRange range("trace step");
  ctx_.group.barrier();
  executor_->enqueue_traced(ctx_, streams_for(schedule), schedule);
  ctx_.wait(streams_for(schedule).compute, case_.label() + ": traced step (" + to_string(policy) + ")");
  const auto times = executor_->traced_ms();
  const Program& program = case_.program();
  TraceIteration mine{case_.label(), to_string(policy), ctx_.rank, schedule == Schedule::Sequential, {}};
  for (size_t i = 0; i < program.ops().size(); ++i) {
    const Op& op = program.ops()[i];
    // One stream runs everything in a sequential step: nothing waits across streams.
    mine.spans.push_back({op.name, op.kind == Op::Kind::Collective, times[i].first, times[i].second,
                          schedule == Schedule::Overlap ? program.cross_wait(i) : -1});
  }
  // Names, streams and dependencies are the same on every rank; the times are each rank's own.
  for (auto& it : every_rank(mine, ctx_.group.all_gather_series(span_times(mine.spans))))
    traces_.push_back(std::move(it));
}

std::string CaseTrials::apply(const OverlapPolicy& policy) {
  if (policy.shape.kind != ShapeTarget::Kind::None) {
    const auto kernels = case_.shaped_kernels();
    if (kernels.empty()) return case_.not_shapeable_reason();
    if (policy.shape.kind == ShapeTarget::Kind::Auto && comm_kernel_.kernel.empty())
      return case_.program().collective_kinds() + " launched no kernel on " + std::to_string(ctx_.nranks) +
             " rank(s), so there is no footprint to leave room for";
    try {
      // Only tandem's own kernels are shaped; cuBLASLt's GEMMs run as they are.
      for (ShapedKernel* k : kernels) k->shape(policy.shape, comm_kernel_.footprint);
    } catch (const Error& e) {
      return e.what();
    }
  }
  if (policy.sm_target) {
    sm_target_set_ = true;
    std::optional<SmTarget> target;
    try {
      target = sm_target_on(policy, ctx_.limits.sm_count);
    } catch (const Error& e) {
      return e.message();
    }
    if (!case_.set_sm_count_target(target->gemm_sms))
      return "sm-target applies to cuBLASLt GEMMs; " + case_.label() + " has none";
  }
  active_.comm = policy.comm_priority ? ctx_.comm_high.get() : ctx_.comm_default.get();
  active_.communicator = ctx_.communicator_for(policy);
  if (policy.registers_windows()) {
    // Registered once per communicator and kept until the case's buffers are freed.
    const CopyEngineLanes* lanes = policy.copy_engine ? &ctx_.copy_engine_lanes(policy) : nullptr;
    CollectiveIssue issue;
    const std::string why = case_.window_memory().register_windows(case_.program().collectives(), active_.communicator,
                                                                   lanes, ctx_.wait_rules(), case_.label(), issue);
    if (!why.empty()) return why;
    executor_->set_issue(active_.communicator, issue);
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

void CaseTrials::restore() {
  for (ShapedKernel* k : case_.shaped_kernels()) k->shape(ShapeTarget{});
  if (sm_target_set_) case_.set_sm_count_target(0);
  sm_target_set_ = false;
  active_ = streams_for(Schedule::Sequential);
}

// Baselines and sequential steps run in the default configuration; Overlap with what apply() chose.
// The collectives alone run on the stream a framework gives them by default, timed there.
StepStreams CaseTrials::streams_for(Schedule schedule) const {
  if (schedule == Schedule::Overlap) return active_;
  StepStreams s;
  s.compute = schedule == Schedule::CommOnly ? ctx_.comm_default.get() : ctx_.compute.get();
  s.comm = ctx_.comm_default;
  s.communicator = ctx_.comm;
  return s;
}

std::string CaseTrials::step_name(Schedule schedule, const OverlapPolicy* policy) const {
  return schedule_name(schedule) + (policy && !policy->is_sequential() ? " " + to_string(*policy) : std::string());
}

void CaseTrials::run_once(Schedule schedule, const OverlapPolicy* policy) {
  const StepStreams streams = streams_for(schedule);
  executor_->enqueue(ctx_, streams, schedule);
  ctx_.wait(streams.compute, case_.label() + " " + step_name(schedule, policy));
}

// The dependency chain's length with every operation at its time alone (Program::chain_ms): each
// operation's median over `iters` event-timed steps of its side, scaled to the side's baseline
// (metrics.h operation_times). The slowest rank's chain counts.
double CaseTrials::measure_chain() {
  std::vector<double> medians[2];
  const Schedule sides[2] = {Schedule::ComputeOnly, Schedule::CommOnly};
  for (int side = 0; side < 2; ++side) {
    std::vector<std::vector<double>> samples;
    for (int rep = 0; rep < options_.iters; ++rep) {
      ctx_.group.barrier();
      const StepStreams streams = streams_for(sides[side]);
      executor_->enqueue_timed(ctx_, streams, sides[side]);
      ctx_.wait(streams.compute, case_.label() + ": operations timed one by one");
      const auto ms = executor_->operation_ms();
      samples.resize(ms.size());
      for (size_t i = 0; i < ms.size(); ++i) samples[i].push_back(ms[i]);
    }
    for (auto& op : samples) medians[side].push_back(summarize(op).median);
  }
  const double chain = case_.program().chain_ms(
      operation_times(medians[0], medians[1], baselines_.compute.median, baselines_.comm.median));
  return -ctx_.group.min(-chain);
}

int64_t CaseTrials::check(Schedule schedule, const OverlapPolicy* policy) {
  const NvtxRange range("check");
  case_.poison_outputs(ctx_.compute);
  // The poison ran on the compute stream; the step may start on another stream, which must not run
  // before the poison lands.
  ctx_.wait(ctx_.compute, "poison outputs");
  ctx_.group.barrier();
  run_once(schedule, policy);
  return ctx_.group.sum(case_.count_wrong(ctx_));  // every rank gets the same total
}

CaseTrials::Measured CaseTrials::measure(Schedule schedule, const OverlapPolicy* policy) {
  return measure_on(streams_for(schedule), schedule, policy);
}

CaseTrials::Measured CaseTrials::measure_on(const StepStreams& streams, Schedule schedule,
                                            const OverlapPolicy* policy) {
  std::vector<double> total, compute_busy, comm_busy;
  const std::string step = step_name(schedule, policy);
  const NvtxRange range(step);
  // Nested in the step's range: the warm-up steps, then the timed ones.
  NvtxRange phase(options_.warmup > 0 ? "warm-up" : "timed");
  for (int rep = 0; rep < options_.warmup + options_.iters; ++rep) {
    if (rep == options_.warmup && rep > 0) phase.next("timed");
    // Ranks enqueue together, so no rank waits in a collective for another's host.
    ctx_.group.barrier();
    // The step begins after `start_` and is over at `end_` on its compute stream, into which it
    // joins every other stream it used.
    TANDEM_CUDA_CHECK(cudaEventRecord(start_, streams.compute));
    executor_->enqueue(ctx_, streams, schedule);
    TANDEM_CUDA_CHECK(cudaEventRecord(end_, streams.compute));
    ctx_.wait(streams.compute, case_.label() + " " + step);
    if (rep < options_.warmup) continue;
    total.push_back(elapsed_ms(start_, end_));
    if (schedule == Schedule::Overlap) {
      const StreamBusy busy = executor_->busy();
      compute_busy.push_back(busy.compute_ms);
      comm_busy.push_back(busy.comm_ms);
    }
  }
  const auto summaries = slowest_rank_summaries(ctx_.group, {total, compute_busy, comm_busy});
  return {summaries[0], summaries[1], summaries[2]};
}

}  // namespace tandem::bench
