#pragma once
// One case's step as a program: an ordered list of operations, each a compute step (GEMM,
// element-wise kernel, a workload's unit) or a collective, with the device memory it reads and
// writes. A microbenchmark is `count` compute operations and one collective with no dependency
// between them; a training scenario is one iteration of a framework (harness/case.h).
//
// Program order is the semantics: an operation sees what earlier operations wrote. Dependencies
// between the compute stream and the communication stream are derived from the declared memory
// accesses (read-after-write, write-after-read, write-after-write), so a case states what it does
// and the executor works out which events to wait for - under every schedule and launch order.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collectives/collective_call.h"
#include "harness/rank_context.h"
#include "tandem/dtype.h"

namespace tandem::bench {

// What one step runs.
enum class Schedule {
  Overlap,      // compute on StepStreams::compute, collectives on StepStreams::comm, joined by events
  ComputeOnly,  // collectives skipped (consumers read stale buffers): t_compute
  CommOnly,     // only the collectives, in program order: t_comm
  Sequential,   // everything in program order on StepStreams::compute: t_seq
};

struct StepStreams {
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;        // Overlap and CommOnly; CommOnly may name the compute stream
  ncclComm_t communicator = nullptr;  // the collectives' communicator; nullptr: RankContext::comm
  // Overlap: a collective is enqueued as soon as its inputs are (before the independent compute that
  // follows it in program order); otherwise after the next compute operation (full_issue_order).
  bool comm_first = false;
};

// Per-stream busy time of the last Overlap step (event-timed, summed over the stretches in which the
// stream was not waiting for the other): what each side took under overlap. Where neither side
// waits for the other (a microbenchmark), each side's busy time is its span from the step's start.
struct StreamBusy {
  double compute_ms = 0;
  double comm_ms = 0;
};

struct Access {
  const void* ptr = nullptr;
  int64_t bytes = 0;
  bool write = false;
};

struct Op {
  enum class Kind { Compute, Collective };
  Kind kind = Kind::Compute;
  std::string name;
  std::vector<Access> access;
  std::function<void(cudaStream_t)> enqueue;  // Compute
  CollectiveCall call;                        // Collective
  // Fewest device-memory bytes it moves, for the HBM term of t_bound (a collective's: add() sets it).
  double hbm_bytes = 0;
};

class Program {
 public:
  explicit Program(int nranks = 1) : nranks_(nranks) {}
  void add(Op op);
  // Derives the cross-stream waits; call once, after the last add().
  void finalize();

  const std::vector<Op>& ops() const { return ops_; }
  int nranks() const { return nranks_; }
  // Index of the latest operation of the other kind that op i must wait for, or -1.
  int cross_wait(size_t i) const { return cross_wait_[i]; }
  bool needs_event(size_t i) const { return needs_event_[i]; }
  // Whether some operation waits for one of the other stream (a microbenchmark's never does).
  bool has_cross_waits() const;
  // Sum over collectives of CollectiveCall::bytes.
  uint64_t collective_bytes() const;
  // Sum over operations of Op::hbm_bytes.
  double hbm_bytes() const;
  // "all-gather+reduce-scatter": the kinds of collective, in order of first appearance.
  std::string collective_kinds() const;
  // Its collectives in program order, each named by its operation: what the case's window memory
  // registers (collectives/window_memory.h).
  CaseCollectives collectives() const;
  // nccl-tests' bus-bandwidth factor of the collectives (tandem/collective.h), which must share one
  // (all-gather with reduce-scatter, not with all-reduce); 0 without collectives.
  double busbw_factor() const;
  // The iteration's length along its dependency chain when operation i takes op_ms[i], as it does
  // alone: each stream runs its operations in program order (how Executor issues them under every
  // policy), each starting when its stream is free and the operation it waits for (cross_wait) is
  // done. At least the larger of the two streams' sums; more where a stream must idle for the other
  // (the first all-gather before any layer can start, the last bucket's all-reduce after the
  // backward pass ends). The ideal bound of an overlap: no interference between the streams.
  double chain_ms(const std::vector<double>& op_ms) const;

 private:
  int nranks_;
  std::vector<Op> ops_;
  std::vector<int> cross_wait_;
  std::vector<bool> needs_event_;
  bool finalized_ = false;
};

// The order in which an Overlap step enqueues the program on the host, and on which stream: compute
// operations in program order on the compute stream, collectives in program order on the
// communication stream - each as soon as its inputs are enqueued (comm_first), or after the next
// compute operation, unless that operation depends on it (compute first). An independent collective
// (it waits for no compute operation and none waits for it: a microbenchmark's) has no place in the
// compute order, so the launch order alone places it: before every compute operation (comm_first)
// or after the last. `wait` is the operation of the other stream whose completion the step waits
// for (-1: none); it is always enqueued earlier.
struct IssueStep {
  size_t op = 0;
  bool on_comm = false;
  int wait = -1;
};
std::vector<IssueStep> full_issue_order(const Program& program, bool comm_first);

// Milliseconds from event `from` to event `to`, both recorded with timing and complete.
double elapsed_ms(cudaEvent_t from, cudaEvent_t to);

// Issues a program on one rank's streams, with the events that order them and the events that time
// each stream's busy stretches.
class Executor {
 public:
  // Creates events on the current device. `default_issue`: how collectives are issued on a
  // communicator without an issue of its own (set_issue).
  explicit Executor(const Program& program, const CollectiveIssue& default_issue = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void enqueue(RankContext& ctx, const StepStreams& streams, Schedule schedule);
  // How collectives on `comm` are issued: set for a communicator on which the buffers are registered
  // as symmetric windows, cleared when they are released. Other communicators take the defaults.
  void set_issue(ncclComm_t comm, const CollectiveIssue& issue);
  void clear_issue(ncclComm_t comm);
  // Busy time per stream of the last Overlap step (after it completed).
  StreamBusy busy() const;
  // One step of the compute operations alone (ComputeOnly) or of the collectives alone (CommOnly),
  // with an event after each operation, to time them one by one.
  void enqueue_timed(RankContext& ctx, const StepStreams& streams, Schedule schedule);
  // Per operation, in program order, its time in the last enqueue_timed() step (after it
  // completed); 0 for the operations that step skipped.
  std::vector<double> operation_ms() const;
  // The first compute operation, or the first collective, alone on `stream`.
  void enqueue_sample(RankContext& ctx, cudaStream_t stream, bool collective) const;
  // One Overlap or Sequential step, issued exactly as enqueue() issues it, with an event right
  // before and right after every operation on the stream that runs it (after any wait for the
  // other stream, so a start is when the operation could begin).
  void enqueue_traced(RankContext& ctx, const StepStreams& streams, Schedule schedule);
  // Per operation, in program order, its start and end in the last enqueue_traced() step, in ms
  // from that step's start (after it completed).
  std::vector<std::pair<double, double>> traced_ms() const;

 private:
  struct Segment {
    cudaEvent_t start = nullptr, end = nullptr;
  };
  struct StreamState {
    cudaStream_t stream = nullptr;
    std::vector<Segment>* segments = nullptr;
    size_t used = 0;
    bool open = false;
  };
  void issue(RankContext& ctx, ncclComm_t comm, const IssueStep& step, StreamState& on);
  // A compute operation's enqueue, or a collective on `comm` as its CollectiveIssue says.
  void issue_op(RankContext& ctx, ncclComm_t comm, const Op& op, cudaStream_t stream) const;
  void open_segment(StreamState& s);
  void close_segment(StreamState& s);
  static double busy_of(const std::vector<Segment>& segments, size_t used);
  // An event on the current device, destroyed with the executor.
  cudaEvent_t new_event(unsigned flags = cudaEventDefault);

  const Program& program_;
  std::vector<cudaEvent_t> events_;                                // every event below, for the destructor
  std::vector<IssueStep> order_comm_first_, order_compute_first_;  // computed on first use
  std::vector<cudaEvent_t> done_;                                  // per op, where needed
  CollectiveIssue default_issue_;
  std::map<ncclComm_t, CollectiveIssue> issues_;  // set_issue
  cudaEvent_t iteration_start_ = nullptr, comm_done_ = nullptr;
  std::vector<Segment> compute_segments_, comm_segments_;
  size_t compute_used_ = 0, comm_used_ = 0;
  // enqueue_timed(): its first event, one after each operation (created on first use), and the kind
  // of operation it ran.
  cudaEvent_t timed_start_ = nullptr;
  std::vector<cudaEvent_t> timed_end_;
  Op::Kind timed_kind_ = Op::Kind::Compute;
  // enqueue_traced(): set while it issues; the step's origin and each operation's bracket
  // (created on first use).
  bool tracing_ = false;
  cudaEvent_t trace_origin_ = nullptr;
  std::vector<cudaEvent_t> trace_start_, trace_end_;
};

}  // namespace tandem::bench
