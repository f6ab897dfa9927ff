#include "harness/runner.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include "harness/metrics.h"
#include "harness/registry.h"
#include "tandem/cuda_check.h"
#include "tandem/kernel_footprint_probe.h"

namespace tandem::bench {

namespace {

enum class Schedule { ComputeOnly, CommOnly, Sequential, Overlap };

struct StepSamples {
  std::vector<double> total, compute_span, comm_span;
};
struct StepSummary {
  Summary total, compute_span, comm_span;
};

// Per-rank values meet here; every rank then computes the same aggregate, so all ranks take the
// same decisions (compute count, skips) without a broadcast.
struct Board {
  explicit Board(int n) : samples(n), counts(n) {}
  std::vector<StepSamples> samples;
  std::vector<int64_t> counts;
};

bool is_nccl_kernel(const std::string& name) {
  return name.rfind("ncclDevKernel", 0) == 0 || name.rfind("ncclSymkDevKernel", 0) == 0 ||
         name.rfind("ncclKernel", 0) == 0;
}

FootprintRecord record_of(const CapturedLaunch& launch, const DeviceLimits& limits) {
  FootprintRecord r;
  r.kernel = launch.kernel_name;
  r.grid_blocks = static_cast<int>(launch.grid.x * launch.grid.y * launch.grid.z);
  r.footprint = launch.footprint;
  r.blocks_per_sm = residency(limits, launch.footprint).blocks_per_sm;
  return r;
}

class CaseRunner {
 public:
  CaseRunner(RankContext& ctx, Board& board, const BenchOptions& options, Workload& workload, Collective& collective)
      : ctx_(ctx), board_(board), options_(options), workload_(workload), collective_(collective) {
    for (cudaEvent_t* e : {&start_, &compute_done_, &comm_done_, &end_}) TANDEM_CUDA_CHECK(cudaEventCreate(e));
  }
  ~CaseRunner() {
    for (cudaEvent_t e : {start_, compute_done_, comm_done_, end_}) cudaEventDestroy(e);
  }

  // Reads the real kernels of both sides by capturing one of each into a graph. Each side runs once
  // first: NCCL connects to its peers on first use, which is not allowed during capture, and
  // libraries load their kernels lazily.
  void capture_footprints() {
    ctx_.group.barrier();
    enqueue_collective(ctx_.comm_default);
    workload_.enqueue(ctx_.compute);
    ctx_.wait(ctx_.comm_default, "first collective");
    ctx_.wait(ctx_.compute, "first compute unit");
    ctx_.group.barrier();
    auto wait = [&](cudaStream_t s) { ctx_.wait(s, "footprint capture"); };
    const auto comm = capture_kernel_launches(
        ctx_.comm_default, [&](cudaStream_t s) { enqueue_collective(s); }, wait);
    // With one rank NCCL copies instead of launching a kernel: then there is no footprint to leave
    // room for.
    const auto nccl = std::find_if(comm.begin(), comm.end(), [](const auto& l) { return is_nccl_kernel(l.kernel_name); });
    if (nccl != comm.end()) comm_kernel_ = record_of(*nccl, ctx_.limits);
    const auto compute = capture_kernel_launches(ctx_.compute, [&](cudaStream_t s) { workload_.enqueue(s); }, wait);
    TANDEM_REQUIRE(!compute.empty(), "the compute workload launched no kernel");
    compute_kernel_ = record_of(compute.front(), ctx_.limits);
  }

  // Chooses the compute count, then measures the default-configuration baselines.
  void measure_baselines() {
    if (options_.balance) {
      const double unit = measure(Schedule::ComputeOnly, nullptr, 1).total.median;
      const double comm = measure(Schedule::CommOnly, nullptr, 1).total.median;
      count_ = balanced_count(unit, comm);
    } else {
      count_ = options_.count;
    }
    t_compute_ = measure(Schedule::ComputeOnly, nullptr, count_).total;
    t_comm_ = measure(Schedule::CommOnly, nullptr, count_).total;
    t_seq_ = measure(Schedule::Sequential, nullptr, count_).total;
    const double hbm_bytes = count_ * workload_.hbm_bytes() + collective_.hbm_bytes();
    t_bound_ = bound_ms(t_compute_.median, t_comm_.median, hbm_bytes, min_over_ranks_bandwidth());
  }

  // Applies `policy`, checks results under it, measures it and restores the workload. Returns false
  // (with `skip_reason`) when the default suite holds a policy that cannot apply to this workload.
  bool run_policy(const OverlapPolicy& policy, Row& row, std::string& skip_reason) {
    ShapedKernel* kernel = workload_.shaped_kernel();
    if (policy.shape.kind != ShapeTarget::Kind::None) {
      std::string why;
      if (!kernel) {
        why = workload_.not_shapeable_reason();
      } else {
        try {
          if (policy.shape.kind == ShapeTarget::Kind::Auto && comm_kernel_.kernel.empty())
            throw Error(std::string(collective_.name()) + " launched no kernel on " + std::to_string(ctx_.nranks) +
                            " rank(s), so there is no footprint to leave room for",
                        __FILE__, __LINE__);
          kernel->shape(policy.shape, comm_kernel_.footprint);
        } catch (const Error& e) {
          why = e.what();
        }
      }
      if (!why.empty()) {
        if (options_.policies_given) TANDEM_THROW("policy '" + to_string(policy) + "' cannot apply: " + why);
        skip_reason = why;
        return false;
      }
    }
    const Schedule schedule = policy.is_sequential() ? Schedule::Sequential : Schedule::Overlap;
    row.wrong = options_.check ? check(schedule, &policy) : 0;
    const StepSummary s = measure(schedule, &policy, count_);
    fill_row(row, policy, s, kernel);
    if (kernel) kernel->shape(ShapeTarget{});
    return true;
  }

 private:
  void fill_row(Row& row, const OverlapPolicy& policy, const StepSummary& s, const ShapedKernel* kernel) const {
    row.count = count_;
    row.policy = to_string(policy);
    row.t_compute_ms = t_compute_.median;
    row.t_comm_ms = t_comm_.median;
    row.t_seq_ms = t_seq_.median;
    row.t_bound_ms = t_bound_;
    row.t_overlap_ms = s.total.median;
    row.t_overlap_min_ms = s.total.min;
    row.t_overlap_max_ms = s.total.max;
    row.reduction = reduction(row.t_overlap_ms, row.t_seq_ms);
    row.efficiency = efficiency(row.t_seq_ms, row.t_overlap_ms, row.t_bound_ms);
    // Sequential has no per-stream spans: each side ran alone, by construction.
    row.compute_slowdown = policy.is_sequential() ? 1.0 : s.compute_span.median / t_compute_.median;
    row.comm_slowdown = policy.is_sequential() ? 1.0 : s.comm_span.median / t_comm_.median;
    row.algbw_gbps = algbw_gbps(double(collective_.bytes()), t_comm_.median);
    row.busbw_gbps = row.algbw_gbps * collective_.busbw_factor(ctx_.nranks);
    row.compute_blocks_per_sm = kernel ? kernel->blocks_per_sm() : -1;
    row.shape_dynamic_smem = kernel ? static_cast<int64_t>(kernel->dynamic_smem()) : -1;
    row.compute_kernel = compute_kernel_;
    row.comm_kernel = comm_kernel_;
  }

  // Runs the schedule once on poisoned outputs and counts wrong elements over all ranks.
  int64_t check(Schedule schedule, const OverlapPolicy* policy) {
    workload_.poison_output(ctx_.compute);
    collective_.poison_output(ctx_.compute);
    // The poison kernels ran on the compute stream; the collective may run on another stream, which
    // must not start before the poison lands.
    ctx_.wait(ctx_.compute, "poison outputs");
    ctx_.group.barrier();
    enqueue_step(schedule, policy, count_);
    ctx_.wait(ctx_.compute, "check run (" + (policy ? to_string(*policy) : std::string("baseline")) + ")");
    const int64_t wrong = workload_.count_wrong(ctx_) + collective_.count_wrong(ctx_);
    board_.counts[ctx_.rank] = wrong;
    ctx_.group.barrier();
    int64_t total = 0;
    for (int64_t c : board_.counts) total += c;
    ctx_.group.barrier();  // nobody overwrites the board before everyone has read it
    return total;
  }

  StepSummary measure(Schedule schedule, const OverlapPolicy* policy, int count) {
    StepSamples mine;
    const std::string step = schedule_name(schedule, policy);
    for (int rep = 0; rep < options_.warmup + options_.iters; ++rep) {
      // Ranks enqueue together, so neither waits in the collective for the other's host.
      ctx_.group.barrier();
      enqueue_step(schedule, policy, count);
      ctx_.wait(schedule == Schedule::CommOnly ? comm_stream(policy) : ctx_.compute.get(), step);
      if (rep < options_.warmup) continue;
      mine.total.push_back(elapsed(start_, end_));
      if (schedule == Schedule::Overlap) {
        mine.compute_span.push_back(elapsed(start_, compute_done_));
        mine.comm_span.push_back(elapsed(start_, comm_done_));
      }
    }
    board_.samples[ctx_.rank] = std::move(mine);
    ctx_.group.barrier();
    StepSummary s;
    s.total = summarize(max_over_ranks(gather(&StepSamples::total)));
    if (schedule == Schedule::Overlap) {
      s.compute_span = summarize(max_over_ranks(gather(&StepSamples::compute_span)));
      s.comm_span = summarize(max_over_ranks(gather(&StepSamples::comm_span)));
    }
    ctx_.group.barrier();
    return s;
  }

  std::vector<std::vector<double>> gather(std::vector<double> StepSamples::*field) const {
    std::vector<std::vector<double>> out;
    for (const auto& s : board_.samples) out.push_back(s.*field);
    return out;
  }

  cudaStream_t comm_stream(const OverlapPolicy* policy) const {
    return policy && policy->comm_priority ? ctx_.comm_high.get() : ctx_.comm_default.get();
  }

  // Enqueues one step. Every schedule records `start_` and `end_`; Overlap also records when each
  // side finished, relative to the same `start_`.
  void enqueue_step(Schedule schedule, const OverlapPolicy* policy, int count) {
    cudaStream_t compute = ctx_.compute;
    auto compute_units = [&] {
      for (int i = 0; i < count; ++i) workload_.enqueue(compute);
    };
    switch (schedule) {
      case Schedule::ComputeOnly:
        TANDEM_CUDA_CHECK(cudaEventRecord(start_, compute));
        compute_units();
        TANDEM_CUDA_CHECK(cudaEventRecord(end_, compute));
        return;
      case Schedule::CommOnly: {
        cudaStream_t comm = comm_stream(nullptr);
        TANDEM_CUDA_CHECK(cudaEventRecord(start_, comm));
        enqueue_collective(comm);
        TANDEM_CUDA_CHECK(cudaEventRecord(end_, comm));
        return;
      }
      case Schedule::Sequential:
        TANDEM_CUDA_CHECK(cudaEventRecord(start_, compute));
        compute_units();
        enqueue_collective(compute);
        TANDEM_CUDA_CHECK(cudaEventRecord(end_, compute));
        return;
      case Schedule::Overlap: {
        cudaStream_t comm = comm_stream(policy);
        // Both streams start from `start_`: the comm stream waits on it, so the collective cannot
        // begin before the step does and both spans are measured from one instant.
        TANDEM_CUDA_CHECK(cudaEventRecord(start_, compute));
        TANDEM_CUDA_CHECK(cudaStreamWaitEvent(comm, start_, 0));
        // The host enqueue order is the control: what is enqueued first reaches the GPU's work
        // queues first and gets SMs first.
        if (policy->order == LaunchOrder::CommFirst) {
          enqueue_collective(comm);
          compute_units();
        } else {
          compute_units();
          enqueue_collective(comm);
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

  // Every NCCL call goes through here: the communicator is non-blocking, so the call may return
  // before NCCL's host-side work is done.
  void enqueue_collective(cudaStream_t stream) {
    collective_.enqueue(ctx_.comm, stream);
    ctx_.await_communicator(std::string(collective_.name()) + " enqueue");
  }

  static std::string schedule_name(Schedule s, const OverlapPolicy* policy) {
    switch (s) {
      case Schedule::ComputeOnly: return "compute alone";
      case Schedule::CommOnly: return "collective alone";
      case Schedule::Sequential: return "sequential";
      case Schedule::Overlap: return "overlap " + to_string(*policy);
    }
    return "?";
  }

  static double elapsed(cudaEvent_t from, cudaEvent_t to) {
    float ms = 0;
    TANDEM_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
    return ms;
  }

  double min_over_ranks_bandwidth() {
    board_.samples[ctx_.rank].total = {ctx_.hbm_bandwidth_gbps};
    ctx_.group.barrier();
    double bw = ctx_.hbm_bandwidth_gbps;
    for (const auto& s : board_.samples) bw = std::min(bw, s.total.front());
    ctx_.group.barrier();
    return bw;
  }

  RankContext& ctx_;
  Board& board_;
  const BenchOptions& options_;
  Workload& workload_;
  Collective& collective_;
  cudaEvent_t start_ = nullptr, compute_done_ = nullptr, comm_done_ = nullptr, end_ = nullptr;
  FootprintRecord comm_kernel_, compute_kernel_;
  int count_ = 1;
  Summary t_compute_, t_comm_, t_seq_;
  double t_bound_ = 0;
};

std::string size_text(uint64_t bytes) {
  if (bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + "GiB";
  if (bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
  if (bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + "KiB";
  return std::to_string(bytes) + "B";
}

}  // namespace

BenchOutcome run_bench(const BenchOptions& options, int nranks, const RowSink& on_row, const ProgressSink& progress) {
  validate(options);
  validate_for_ranks(options, nranks);
  std::vector<int> devices(nranks);
  for (int i = 0; i < nranks; ++i) devices[i] = i;
  std::vector<ncclComm_t> comms = create_communicators(devices, options.timeout_s);

  const auto& policies = effective_policies(options);
  const auto sizes = size_sweep(options.min_bytes, options.max_bytes, options.step_factor);
  const size_t total_steps = options.workloads.size() * options.collectives.size() * sizes.size() * policies.size();

  BenchOutcome outcome;
  std::mutex notes_mutex;
  RankGroup group(nranks);
  Board board(nranks);
  try {
    group.run([&](int rank) {
      RankContext ctx(rank, nranks, devices[rank], group, comms[rank], options.timeout_s);
      comms[rank] = nullptr;  // owned by the context from here on
      if (rank == 0) outcome.hbm_bandwidth_gbps = ctx.hbm_bandwidth_gbps;
      size_t step = 0;
      for (const auto& workload_name : options.workloads) {
        auto workload = find_workload(workload_name).make([&] {
          WorkloadOptions w = options.workload;
          w.dtype = options.dtype;
          return w;
        }());
        workload->setup(ctx);
        for (const auto& collective_name : options.collectives) {
          for (uint64_t bytes : sizes) {
            auto collective = find_collective(collective_name).make();
            collective->setup(ctx, bytes, options.dtype, options.workload.seed);
            CaseRunner runner(ctx, board, options, *workload, *collective);
            runner.capture_footprints();
            runner.measure_baselines();
            for (const auto& policy : policies) {
              ++step;
              if (rank == 0 && progress)
                progress("[" + std::to_string(step) + "/" + std::to_string(total_steps) + "] " + workload_name + " " +
                         collective_name + " " + size_text(bytes) + " " + to_string(policy));
              Row row;
              row.workload = workload_name;
              row.collective = collective_name;
              row.dtype = to_string(options.dtype);
              row.bytes = bytes;
              row.ranks = nranks;
              std::string skip_reason;
              if (!runner.run_policy(policy, row, skip_reason)) {
                if (rank == 0) {
                  std::lock_guard<std::mutex> lock(notes_mutex);
                  outcome.notes.push_back(to_string(policy) + " skipped for " + workload_name + ": " + skip_reason);
                }
                continue;
              }
              if (rank == 0) {
                outcome.rows.push_back(row);
                if (on_row) on_row(row);
              }
            }
          }
        }
      }
    });
  } catch (...) {
    // Communicators never handed to a rank context (its thread failed first) are aborted here:
    // destroying them would wait for peers that have stopped.
    for (ncclComm_t c : comms)
      if (c) ncclCommAbort(c);
    throw;
  }
  return outcome;
}

}  // namespace tandem::bench
