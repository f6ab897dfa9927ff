#include <algorithm>
#include <utility>

#include "harness/case_runner.h"
#include "harness/footprints.h"
#include "harness/runner.h"
#include "harness/slowest_rank.h"
#include "tandem/cuda_check.h"
#include "tandem/nvtx.h"

namespace tandem::bench {

CaseRunner::CaseRunner(RankContext& ctx, const BenchOptions& options, const std::string& workload_name,
                       Workload& workload, Collective& collective)
    : PolicyTrials(options.policies_given),
      ctx_(ctx),
      options_(options),
      workload_name_(workload_name),
      workload_(workload),
      collective_(collective) {
  for (cudaEvent_t* e : {&start_, &compute_done_, &comm_done_, &end_}) TANDEM_CUDA_CHECK(cudaEventCreate(e));
  active_comm_ = ctx_.comm;
  active_comm_stream_ = ctx_.comm_default;
  active_compute_stream_ = ctx_.compute;
}

CaseRunner::~CaseRunner() {
  for (cudaEvent_t e : {start_, compute_done_, comm_done_, end_}) cudaEventDestroy(e);
  for (const auto* events : {&trace_start_, &trace_end_})
    for (cudaEvent_t e : *events) cudaEventDestroy(e);
}

CaseTraits CaseRunner::traits() {
  CaseTraits t;
  t.sm_count = ctx_.limits.sm_count;
  t.natural_blocks_per_sm = workload_.shaped_kernel() ? compute_kernel_.blocks_per_sm : 0;
  t.has_sm_target = workload_.set_sm_count_target(0);  // 0 = no cap: a harmless probe
  return t;
}

void CaseRunner::capture_footprints() {
  ctx_.group.barrier();
  enqueue_collective(ctx_.comm, ctx_.comm_default);
  workload_.enqueue(ctx_.compute);
  ctx_.wait(ctx_.comm_default, "first collective");
  ctx_.wait(ctx_.compute, "first compute unit");
  ctx_.group.barrier();
  auto wait = [&](cudaStream_t s) { ctx_.wait(s, "footprint capture"); };
  const auto comm = capture_kernel_launches(
      ctx_.comm_default, [&](cudaStream_t s) { enqueue_collective(ctx_.comm, s); }, wait);
  // With one rank NCCL copies instead of launching a kernel: then there is no footprint to leave
  // room for.
  if (const auto nccl = first_nccl_kernel(comm, ctx_.limits)) comm_kernel_ = *nccl;
  const auto compute = capture_kernel_launches(
      ctx_.compute, [&](cudaStream_t s) { workload_.enqueue(s); }, wait);
  TANDEM_REQUIRE(!compute.empty(), "the compute workload launched no kernel");
  compute_kernel_ = footprint_record(compute.front(), ctx_.limits);
}

void CaseRunner::measure_baselines(int fixed_count) {
  const NvtxRange range("baselines");
  if (fixed_count > 0) {
    count_ = fixed_count;
  } else if (options_.balance) {
    const double unit = measure(Schedule::ComputeOnly, nullptr, 1).total.median;
    const double comm = measure(Schedule::CommOnly, nullptr, 1).total.median;
    count_ = balanced_count(unit, comm);
  } else {
    count_ = options_.count;
  }
  baselines_.compute = measure(Schedule::ComputeOnly, nullptr, count_).total;
  baselines_.comm = measure(Schedule::CommOnly, nullptr, count_).total;
  baselines_.seq = measure(Schedule::Sequential, nullptr, count_).total;
  const double hbm_bytes = count_ * workload_.hbm_bytes() + collective_.hbm_bytes();
  // Compute and collective are independent: the chain is the slower side.
  baselines_.chain_ms = std::max(baselines_.compute.median, baselines_.comm.median);
  baselines_.bound_ms =
      bound_ms(baselines_.compute.median, baselines_.comm.median, hbm_bytes, min_over_ranks_bandwidth());
}

uint64_t CaseRunner::balanced_collective_bytes(uint64_t bytes) const {
  return balanced_bytes(bytes, baselines_.compute.median, baselines_.comm.median, ctx_.nranks);
}

void CaseRunner::check_and_measure(const OverlapPolicy& policy, Row& row) {
  const Schedule schedule = policy.is_sequential() ? Schedule::Sequential : Schedule::Overlap;
  row.wrong = options_.check ? check(schedule, &policy) : 0;
  const StepSummary s = measure(schedule, &policy, count_);
  if (!options_.trace_path.empty()) trace(schedule, policy);
  fill_row(row, policy, s, workload_.shaped_kernel());
}

std::vector<TraceIteration> CaseRunner::take_traces() { return std::exchange(traces_, {}); }

void CaseRunner::trace(Schedule schedule, const OverlapPolicy& policy) {
  const NvtxRange range("trace step");
  TraceIteration mine;
  mine.workload = label();
  mine.policy = to_string(policy);
  mine.rank = ctx_.rank;
  mine.sequential = schedule == Schedule::Sequential;
  const bool collective_first = schedule == Schedule::Overlap && policy.order == LaunchOrder::CommFirst;
  mine.spans = microbenchmark_step_spans(
      workload_name_, count_, std::string(collective_.name()) + " " + size_text(collective_.bytes()), collective_first);
  for (auto* events : {&trace_start_, &trace_end_})
    while (events->size() < mine.spans.size()) {
      cudaEvent_t e = nullptr;
      TANDEM_CUDA_CHECK(cudaEventCreate(&e));
      events->push_back(e);
    }
  ctx_.group.barrier();
  tracing_ = true;
  try {
    enqueue_step(schedule, &policy, count_);
  } catch (...) {
    tracing_ = false;
    throw;
  }
  tracing_ = false;
  ctx_.wait(final_stream(schedule), "traced step (" + to_string(policy) + ")");
  // As a scenario's traced iteration: every time from the step's start event, on this rank's clock.
  for (size_t i = 0; i < mine.spans.size(); ++i) {
    mine.spans[i].start_ms = elapsed(start_, trace_start_[i]);
    mine.spans[i].end_ms = elapsed(start_, trace_end_[i]);
  }
  for (auto& it : every_rank(mine, ctx_.group.all_gather_series(span_times(mine.spans))))
    traces_.push_back(std::move(it));
}

std::string CaseRunner::apply(const OverlapPolicy& policy) {
  ShapedKernel* kernel = workload_.shaped_kernel();
  if (policy.shape.kind != ShapeTarget::Kind::None) {
    if (!kernel) return workload_.not_shapeable_reason();
    if (policy.shape.kind == ShapeTarget::Kind::Auto && comm_kernel_.kernel.empty())
      return std::string(collective_.name()) + " launched no kernel on " + std::to_string(ctx_.nranks) +
             " rank(s), so there is no footprint to leave room for";
    try {
      kernel->shape(policy.shape, comm_kernel_.footprint);
    } catch (const Error& e) {
      return e.what();
    }
  }
  if (policy.sm_target && !workload_.set_sm_count_target(*policy.sm_target))
    return "sm-target applies to cuBLASLt GEMMs only";
  const CopyEngineLanes* lanes = policy.copy_engine ? &ctx_.copy_engine_lanes(policy) : nullptr;
  if (lanes) {
    // Before the windows: the route may add a scratch buffer to them.
    const std::string why = collective_.route_through_copy_engines(lanes);
    if (!why.empty()) return why;
  }
  active_comm_ = ctx_.communicator_for(policy);
  if (policy.registers_windows()) collective_.use_symmetric_windows(ctx_, active_comm_);
  // Every lane's gathers reach the same buffers through its own communicator's windows.
  if (lanes)
    for (ncclComm_t lane : lanes->comms()) collective_.use_symmetric_windows(ctx_, lane);
  active_compute_stream_ = ctx_.compute;
  active_comm_stream_ = policy.comm_priority ? ctx_.comm_high.get() : ctx_.comm_default.get();
  if (policy.green_sms) {
    try {
      active_compute_stream_ = ctx_.green_stream(*policy.green_sms);
    } catch (const Error& e) {
      return std::string("no green context: ") + e.what();
    }
  }
  return "";
}

void CaseRunner::restore() {
  if (ShapedKernel* kernel = workload_.shaped_kernel()) kernel->shape(ShapeTarget{});
  collective_.route_through_copy_engines(nullptr);
  workload_.set_sm_count_target(0);
  active_comm_ = ctx_.comm;
  active_comm_stream_ = ctx_.comm_default;
  active_compute_stream_ = ctx_.compute;
}

void CaseRunner::fill_row(Row& row, const OverlapPolicy& policy, const StepSummary& s,
                          const ShapedKernel* kernel) const {
  row.count = count_;
  row.policy = to_string(policy);
  fill_times(row, baselines_, s.total, s.compute_span.median, s.comm_span.median, policy.is_sequential(),
             double(collective_.bytes()), collective_.busbw_factor(ctx_.nranks));
  fill_kernel_columns(row, kernel);
}

int64_t CaseRunner::check(Schedule schedule, const OverlapPolicy* policy) {
  const NvtxRange range("check");
  workload_.poison_output(ctx_.compute);
  collective_.poison_output(ctx_.compute);
  // The poison kernels ran on the compute stream; the collective may run on another stream, which
  // must not start before the poison lands.
  ctx_.wait(ctx_.compute, "poison outputs");
  ctx_.group.barrier();
  enqueue_step(schedule, policy, count_);
  ctx_.wait(final_stream(schedule), "check run (" + (policy ? to_string(*policy) : std::string("baseline")) + ")");
  const int64_t wrong = workload_.count_wrong(ctx_) + collective_.count_wrong(ctx_);
  return ctx_.group.sum(wrong);  // every rank gets the same total
}

StepSummary CaseRunner::measure(Schedule schedule, const OverlapPolicy* policy, int count) {
  StepSamples mine;
  const std::string step = schedule_name(schedule, policy);
  const NvtxRange range(step);
  // Nested in the schedule's range: the warm-up steps, then the timed ones.
  NvtxRange phase(options_.warmup > 0 ? "warm-up" : "timed");
  for (int rep = 0; rep < options_.warmup + options_.iters; ++rep) {
    if (rep == options_.warmup && rep > 0) phase.next("timed");
    // Ranks enqueue together, so neither waits in the collective for the other's host.
    ctx_.group.barrier();
    enqueue_step(schedule, policy, count);
    ctx_.wait(final_stream(schedule), step);
    if (rep < options_.warmup) continue;
    mine.total.push_back(elapsed(start_, end_));
    if (schedule == Schedule::Overlap) {
      mine.compute_span.push_back(elapsed(start_, compute_done_));
      mine.comm_span.push_back(elapsed(start_, comm_done_));
    }
  }
  const auto summaries = slowest_rank_summaries(ctx_.group, {mine.total, mine.compute_span, mine.comm_span});
  StepSummary s;
  s.total = summaries[0];
  s.compute_span = summaries[1];
  s.comm_span = summaries[2];
  return s;
}

void CaseRunner::enqueue_step(Schedule schedule, const OverlapPolicy* policy, int count) {
  cudaStream_t compute = schedule == Schedule::Overlap ? active_compute_stream_ : ctx_.compute.get();
  // trace(): operation `op` (launch order) bracketed by events on the stream that runs it.
  const auto bracketed = [&](size_t op, cudaStream_t stream, const auto& enqueue) {
    if (tracing_) TANDEM_CUDA_CHECK(cudaEventRecord(trace_start_[op], stream));
    enqueue();
    if (tracing_) TANDEM_CUDA_CHECK(cudaEventRecord(trace_end_[op], stream));
  };
  // The collective goes first in launch order only when the policy launches it first.
  const bool collective_first = schedule == Schedule::Overlap && policy->order == LaunchOrder::CommFirst;
  const size_t first_unit = collective_first ? 1 : 0;
  const size_t collective_op = collective_first ? 0 : static_cast<size_t>(count);
  auto compute_units = [&] {
    for (int i = 0; i < count; ++i) bracketed(first_unit + i, compute, [&] { workload_.enqueue(compute); });
  };
  switch (schedule) {
    case Schedule::ComputeOnly:
      TANDEM_CUDA_CHECK(cudaEventRecord(start_, compute));
      compute_units();
      TANDEM_CUDA_CHECK(cudaEventRecord(end_, compute));
      return;
    case Schedule::CommOnly:
      TANDEM_CUDA_CHECK(cudaEventRecord(start_, ctx_.comm_default));
      enqueue_collective(ctx_.comm, ctx_.comm_default);
      TANDEM_CUDA_CHECK(cudaEventRecord(end_, ctx_.comm_default));
      return;
    case Schedule::Sequential:
      TANDEM_CUDA_CHECK(cudaEventRecord(start_, compute));
      compute_units();
      bracketed(collective_op, compute, [&] { enqueue_collective(ctx_.comm, compute); });
      TANDEM_CUDA_CHECK(cudaEventRecord(end_, compute));
      return;
    case Schedule::Overlap: {
      cudaStream_t comm = active_comm_stream_;
      // Both streams start from `start_`: the comm stream waits on it, so the collective cannot
      // begin before the step does and both spans are measured from one instant.
      TANDEM_CUDA_CHECK(cudaEventRecord(start_, compute));
      TANDEM_CUDA_CHECK(cudaStreamWaitEvent(comm, start_, 0));
      // The host enqueue order is the control: what is enqueued first reaches the GPU's work
      // queues first and gets SMs first.
      const auto collective = [&] { bracketed(collective_op, comm, [&] { enqueue_collective(active_comm_, comm); }); };
      if (collective_first) {
        collective();
        compute_units();
      } else {
        compute_units();
        collective();
      }
      TANDEM_CUDA_CHECK(cudaEventRecord(compute_done_, compute));
      TANDEM_CUDA_CHECK(cudaEventRecord(comm_done_, comm));
      // The step ends when both sides are done: join the comm stream back into compute.
      TANDEM_CUDA_CHECK(cudaStreamWaitEvent(compute, comm_done_, 0));
      TANDEM_CUDA_CHECK(cudaEventRecord(end_, compute));
      return;
    }
  }
}

cudaStream_t CaseRunner::final_stream(Schedule schedule) const {
  if (schedule == Schedule::CommOnly) return ctx_.comm_default;
  return schedule == Schedule::Overlap ? active_compute_stream_ : ctx_.compute.get();
}

void CaseRunner::enqueue_collective(ncclComm_t comm, cudaStream_t stream) {
  collective_.enqueue(comm, stream);
  ctx_.await_communicator(comm, std::string(collective_.name()) + " enqueue");
}

std::string CaseRunner::schedule_name(Schedule s, const OverlapPolicy* policy) {
  switch (s) {
    case Schedule::ComputeOnly:
      return "compute alone";
    case Schedule::CommOnly:
      return "collective alone";
    case Schedule::Sequential:
      return "sequential";
    case Schedule::Overlap:
      return "overlap " + to_string(*policy);
  }
  return "?";
}

double CaseRunner::elapsed(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  TANDEM_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

double CaseRunner::min_over_ranks_bandwidth() { return ctx_.group.min(ctx_.hbm_bandwidth_gbps); }

std::string CaseRunner::label() const {
  return workload_name_ + " " + collective_.name() + " " + size_text(collective_.bytes());
}

}  // namespace tandem::bench
