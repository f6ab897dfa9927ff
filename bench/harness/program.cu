#include <algorithm>
#include <deque>

#include "harness/program.h"
#include "tandem/cuda_check.h"
#include "tandem/text.h"

namespace tandem::bench {

namespace {

bool overlaps(const Access& a, const Access& b) {
  const char* pa = static_cast<const char*>(a.ptr);
  const char* pb = static_cast<const char*>(b.ptr);
  return pa < pb + b.bytes && pb < pa + a.bytes;
}

bool conflicts(const Op& earlier, const Op& later) {
  for (const auto& a : earlier.access)
    for (const auto& b : later.access)
      if ((a.write || b.write) && overlaps(a, b)) return true;
  return false;
}

// `to` waits for what is enqueued on `from` so far, through `event`; nothing when they are one stream.
void wait_across(cudaStream_t from, cudaStream_t to, cudaEvent_t event) {
  if (from == to) return;
  TANDEM_CUDA_CHECK(cudaEventRecord(event, from));
  TANDEM_CUDA_CHECK(cudaStreamWaitEvent(to, event, 0));
}

}  // namespace

double elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  TANDEM_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

void Program::add(Op op) {
  TANDEM_REQUIRE(!finalized_, "program already finalized");
  if (op.kind == Op::Kind::Collective) {
    const size_t e = dtype_size(op.call.dtype);
    op.access = {{op.call.send, op.call.send_elements(nranks_) * int64_t(e), false},
                 {op.call.recv, op.call.recv_elements(nranks_) * int64_t(e), true}};
    op.hbm_bytes = op.call.hbm_bytes(nranks_);
  }
  ops_.push_back(std::move(op));
}

void Program::finalize() {
  TANDEM_REQUIRE(!finalized_, "program already finalized");
  finalized_ = true;
  const size_t n = ops_.size();
  cross_wait_.assign(n, -1);
  needs_event_.assign(n, false);
  for (size_t j = 0; j < n; ++j) {
    // Only the latest conflicting operation of the other kind matters: that stream runs its
    // operations in program order, so waiting for it covers every earlier one.
    for (size_t i = j; i-- > 0;) {
      if (ops_[i].kind == ops_[j].kind) continue;
      if (conflicts(ops_[i], ops_[j])) {
        cross_wait_[j] = static_cast<int>(i);
        needs_event_[i] = true;
        break;
      }
    }
  }
}

uint64_t Program::collective_bytes() const {
  uint64_t sum = 0;
  for (const auto& op : ops_)
    if (op.kind == Op::Kind::Collective) sum += op.call.bytes(nranks_);
  return sum;
}

double Program::hbm_bytes() const {
  double sum = 0;
  for (const auto& op : ops_) sum += op.hbm_bytes;
  return sum;
}

bool Program::has_cross_waits() const {
  return std::any_of(cross_wait_.begin(), cross_wait_.end(), [](int wait) { return wait >= 0; });
}

double Program::busbw_factor() const {
  double factor = 0;
  for (const auto& op : ops_) {
    if (op.kind != Op::Kind::Collective) continue;
    const double mine = bus_bandwidth_factor(op.call.kind, nranks_);
    TANDEM_REQUIRE(factor == 0 || mine == factor, "the collectives " + collective_kinds() +
                                                      " have different bus-bandwidth factors: one busbw column "
                                                      "cannot describe them");
    factor = mine;
  }
  return factor;
}

double Program::chain_ms(const std::vector<double>& op_ms) const {
  TANDEM_REQUIRE(finalized_, "the chain of a program needs its dependencies: finalize it first");
  TANDEM_REQUIRE(op_ms.size() == ops_.size(), "chain_ms needs one time per operation (" + std::to_string(ops_.size()) +
                                                  "), got " + std::to_string(op_ms.size()));
  std::vector<double> end(ops_.size(), 0);
  double compute_free = 0, comm_free = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    TANDEM_REQUIRE(op_ms[i] >= 0, "operation '" + ops_[i].name + "' has a negative time");
    double& free = ops_[i].kind == Op::Kind::Compute ? compute_free : comm_free;
    const double start = std::max(free, cross_wait_[i] >= 0 ? end[cross_wait_[i]] : 0.0);
    end[i] = start + op_ms[i];
    free = end[i];
  }
  return std::max(compute_free, comm_free);
}

CaseCollectives Program::collectives() const {
  CaseCollectives out;
  out.nranks = nranks_;
  for (const auto& op : ops_)
    if (op.kind == Op::Kind::Collective) out.calls.push_back({op.name, op.call});
  return out;
}

std::string Program::collective_kinds() const {
  std::vector<std::string> kinds;
  for (const auto& op : ops_)
    if (op.kind == Op::Kind::Collective && std::find(kinds.begin(), kinds.end(), op.call.name()) == kinds.end())
      kinds.push_back(op.call.name());
  return join(kinds, "+");
}

Executor::Executor(const Program& program, const CollectiveIssue& default_issue)
    : program_(program), default_issue_(default_issue) {
  done_.assign(program.ops().size(), nullptr);
  for (size_t i = 0; i < done_.size(); ++i)
    if (program.needs_event(i)) done_[i] = new_event(cudaEventDisableTiming);
  iteration_start_ = new_event(cudaEventDisableTiming);
  comm_done_ = new_event(cudaEventDisableTiming);
}

Executor::~Executor() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

cudaEvent_t Executor::new_event(unsigned flags) {
  cudaEvent_t event = nullptr;
  TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&event, flags));
  events_.push_back(event);
  return event;
}

void Executor::set_issue(ncclComm_t comm, const CollectiveIssue& issue) { issues_[comm] = issue; }

void Executor::clear_issue(ncclComm_t comm) { issues_.erase(comm); }

void Executor::issue_op(RankContext& ctx, ncclComm_t comm, const Op& op, cudaStream_t stream) const {
  if (op.kind == Op::Kind::Compute) return op.enqueue(stream);
  const auto found = issues_.find(comm);
  const CollectiveIssue& issue = found == issues_.end() ? default_issue_ : found->second;
  bench::issue_collective(op.call, ctx.nranks, comm, stream, issue);
  // The non-blocking communicator must accept it; the copy-engine functions await their own calls.
  if (!issue.lanes) ctx.await_communicator(comm, op.name);
}

void Executor::open_segment(StreamState& s) {
  if (s.open) close_segment(s);
  if (s.used == s.segments->size()) {
    s.segments->push_back({new_event(), new_event()});
  }
  TANDEM_CUDA_CHECK(cudaEventRecord((*s.segments)[s.used].start, s.stream));
  s.open = true;
}

void Executor::close_segment(StreamState& s) {
  if (!s.open) return;
  TANDEM_CUDA_CHECK(cudaEventRecord((*s.segments)[s.used].end, s.stream));
  ++s.used;
  s.open = false;
}

void Executor::issue(RankContext& ctx, ncclComm_t comm, const IssueStep& step, StreamState& on) {
  const Op& op = program_.ops()[step.op];
  if (step.wait >= 0) {
    // A busy stretch ends where the stream starts waiting for the other one.
    close_segment(on);
    TANDEM_CUDA_CHECK(cudaStreamWaitEvent(on.stream, done_[step.wait], 0));
  }
  if (!on.open) open_segment(on);
  if (tracing_) TANDEM_CUDA_CHECK(cudaEventRecord(trace_start_[step.op], on.stream));
  issue_op(ctx, comm, op, on.stream);
  // The trace's end goes before the event the other stream waits for, so an operation that waited
  // for this one never appears to start before it ended.
  if (tracing_) TANDEM_CUDA_CHECK(cudaEventRecord(trace_end_[step.op], on.stream));
  if (done_[step.op]) TANDEM_CUDA_CHECK(cudaEventRecord(done_[step.op], on.stream));
}

std::vector<IssueStep> full_issue_order(const Program& program, bool comm_first) {
  const auto& ops = program.ops();
  std::vector<IssueStep> order;
  order.reserve(ops.size());
  // Collectives waiting to be enqueued (compute-first order): each goes to the GPU after the next
  // compute operation, unless that operation depends on it. Host enqueue order is the control: what
  // is enqueued first reaches the GPU's queues first.
  std::deque<size_t> pending;
  auto flush = [&] {
    for (size_t i : pending) order.push_back({i, true, program.cross_wait(i)});
    pending.clear();
  };
  // Independent collectives go before everything (comm first) or after everything (compute first).
  std::vector<IssueStep> independent;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == Op::Kind::Collective) {
      if (program.cross_wait(i) < 0 && !program.needs_event(i))
        independent.push_back({i, true, -1});
      else if (comm_first)
        order.push_back({i, true, program.cross_wait(i)});
      else
        pending.push_back(i);
      continue;
    }
    // An event must be recorded before a stream can wait for it: a dependency still pending goes
    // first.
    const int wait = program.cross_wait(i);
    if (wait >= 0 && !pending.empty() && static_cast<size_t>(wait) >= pending.front()) flush();
    order.push_back({i, false, wait});
    flush();
  }
  flush();
  order.insert(comm_first ? order.begin() : order.end(), independent.begin(), independent.end());
  return order;
}

void Executor::enqueue(RankContext& ctx, const StepStreams& s, Schedule schedule) {
  const auto& ops = program_.ops();
  ncclComm_t comm = s.communicator ? s.communicator : ctx.comm;
  switch (schedule) {
    case Schedule::Sequential:
      if (tracing_) TANDEM_CUDA_CHECK(cudaEventRecord(trace_origin_, s.compute));
      for (size_t i = 0; i < ops.size(); ++i) {
        if (tracing_) TANDEM_CUDA_CHECK(cudaEventRecord(trace_start_[i], s.compute));
        issue_op(ctx, comm, ops[i], s.compute);
        if (tracing_) TANDEM_CUDA_CHECK(cudaEventRecord(trace_end_[i], s.compute));
      }
      return;
    case Schedule::ComputeOnly:
      for (const auto& op : ops)
        if (op.kind == Op::Kind::Compute) op.enqueue(s.compute);
      return;
    case Schedule::CommOnly:
      // The collectives alone, in order, on the communication stream; a stream other than the
      // compute stream is fenced by it on both sides, so the caller's events on it bracket them.
      wait_across(s.compute, s.comm, iteration_start_);
      for (const auto& op : ops)
        if (op.kind == Op::Kind::Collective) issue_op(ctx, comm, op, s.comm);
      wait_across(s.comm, s.compute, comm_done_);
      return;
    case Schedule::Overlap:
      break;
  }
  auto& order = s.comm_first ? order_comm_first_ : order_compute_first_;
  if (order.empty()) order = full_issue_order(program_, s.comm_first);
  // Overlap: the communication stream starts with the step, so neither side can begin early and
  // both busy measures share one origin.
  if (tracing_) TANDEM_CUDA_CHECK(cudaEventRecord(trace_origin_, s.compute));
  wait_across(s.compute, s.comm, iteration_start_);
  StreamState compute{s.compute, &compute_segments_, 0, false};
  StreamState comm_state{s.comm, &comm_segments_, 0, false};
  for (const IssueStep& step : order) issue(ctx, comm, step, step.on_comm ? comm_state : compute);
  close_segment(compute);
  close_segment(comm_state);
  compute_used_ = compute.used;
  comm_used_ = comm_state.used;
  // The step ends when both streams are done.
  wait_across(s.comm, s.compute, comm_done_);
}

double Executor::busy_of(const std::vector<Segment>& segments, size_t used) {
  double sum = 0;
  for (size_t i = 0; i < used; ++i) sum += elapsed_ms(segments[i].start, segments[i].end);
  return sum;
}

void Executor::enqueue_timed(RankContext& ctx, const StepStreams& s, Schedule schedule) {
  TANDEM_REQUIRE(schedule == Schedule::ComputeOnly || schedule == Schedule::CommOnly,
                 "operations are timed one by one only in compute-only or collectives-only steps");
  const auto& ops = program_.ops();
  if (!timed_start_) {
    timed_start_ = new_event();
    timed_end_.assign(ops.size(), nullptr);
    for (auto& e : timed_end_) e = new_event();
  }
  timed_kind_ = schedule == Schedule::ComputeOnly ? Op::Kind::Compute : Op::Kind::Collective;
  ncclComm_t comm = s.communicator ? s.communicator : ctx.comm;
  // As in enqueue(): collectives run on the communication stream, fenced by the compute stream on
  // both sides. The events go on the stream that runs the operations, back to back, so each pair
  // brackets one operation and the gaps between launches, as in the untimed step.
  cudaStream_t stream = timed_kind_ == Op::Kind::Compute ? s.compute : s.comm;
  wait_across(s.compute, stream, iteration_start_);
  TANDEM_CUDA_CHECK(cudaEventRecord(timed_start_, stream));
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != timed_kind_) continue;
    issue_op(ctx, comm, ops[i], stream);
    TANDEM_CUDA_CHECK(cudaEventRecord(timed_end_[i], stream));
  }
  wait_across(stream, s.compute, comm_done_);
}

std::vector<double> Executor::operation_ms() const {
  TANDEM_REQUIRE(timed_start_, "operation_ms() before any enqueue_timed()");
  const auto& ops = program_.ops();
  std::vector<double> out(ops.size(), 0);
  cudaEvent_t previous = timed_start_;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != timed_kind_) continue;
    out[i] = elapsed_ms(previous, timed_end_[i]);
    previous = timed_end_[i];
  }
  return out;
}

void Executor::enqueue_traced(RankContext& ctx, const StepStreams& s, Schedule schedule) {
  TANDEM_REQUIRE(schedule == Schedule::Overlap || schedule == Schedule::Sequential,
                 "a traced step runs the whole program: Overlap or Sequential");
  if (!trace_origin_) {
    trace_origin_ = new_event();
    for (auto* events : {&trace_start_, &trace_end_}) {
      events->assign(program_.ops().size(), nullptr);
      for (auto& e : *events) e = new_event();
    }
  }
  tracing_ = true;
  try {
    enqueue(ctx, s, schedule);
  } catch (...) {
    tracing_ = false;
    throw;
  }
  tracing_ = false;
}

std::vector<std::pair<double, double>> Executor::traced_ms() const {
  TANDEM_REQUIRE(trace_origin_, "traced_ms() before any enqueue_traced()");
  std::vector<std::pair<double, double>> out(program_.ops().size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = {elapsed_ms(trace_origin_, trace_start_[i]), elapsed_ms(trace_origin_, trace_end_[i])};
  return out;
}

StreamBusy Executor::busy() const {
  return {busy_of(compute_segments_, compute_used_), busy_of(comm_segments_, comm_used_)};
}

void Executor::enqueue_sample(RankContext& ctx, cudaStream_t stream, bool collective) const {
  const Op::Kind kind = collective ? Op::Kind::Collective : Op::Kind::Compute;
  for (const auto& op : program_.ops())
    if (op.kind == kind) return issue_op(ctx, ctx.comm, op, stream);
  TANDEM_THROW(std::string("the program has no ") + (collective ? "collective" : "compute operation"));
}

}  // namespace tandem::bench
