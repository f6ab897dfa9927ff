#pragma once
// One iteration of a scenario as a program: an ordered list of operations, each a compute step
// (GEMM, element-wise kernel) or a collective, with the device memory it reads and writes.
//
// Program order is the semantics: an operation sees what earlier operations wrote. Dependencies
// between the compute stream and the communication stream are derived from the declared memory
// accesses (read-after-write, write-after-read, write-after-write), so a scenario states what it
// does and the executor works out which events to wait for - under every mode and launch order.
//
// The same program runs three ways: timed on one rank (Executor, under a policy), and in lockstep
// across replicas of every rank on one device (run_lockstep), where collectives are computed by
// plain copies and fp32 sums: the reference.
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collectives/collective_call.h"
#include "harness/rank_context.h"
#include "harness/scenario.h"
#include "tandem/dtype.h"

namespace tandem::bench::scenarios {

struct Access {
  const void* ptr = nullptr;
  int64_t bytes = 0;
  bool write = false;
};

// Collectives are described and issued by the one collective layer (collectives/collective_call.h).
using bench::CollectiveCall;
using bench::CollectiveRoute;

struct Op {
  enum class Kind { Compute, Collective };
  Kind kind = Kind::Compute;
  std::string name;
  std::vector<Access> access;
  std::function<void(cudaStream_t)> enqueue;  // Compute
  CollectiveCall call;                        // Collective
  double flops = 0;
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
  // Sum over collectives of CollectiveCall::bytes.
  uint64_t collective_bytes() const;
  // Sum over operations of the bytes they read and write.
  double hbm_bytes() const;
  double flops() const;
  // "all-gather+reduce-scatter": the kinds of collective, in order of first appearance.
  std::string collective_kinds() const;
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

// The order in which a Full iteration enqueues the program on the host, and on which stream: compute
// operations in program order on the compute stream, collectives in program order on the
// communication stream - each as soon as its inputs are enqueued (comm_first), or after the next
// compute operation, unless that operation depends on it (compute first). `wait` is the operation
// of the other stream whose completion the step waits for (-1: none); it is always enqueued earlier.
struct IssueStep {
  size_t op = 0;
  bool on_comm = false;
  int wait = -1;
};
std::vector<IssueStep> full_issue_order(const Program& program, bool comm_first);

// Issues a program on one rank's streams, with the events that order them and the events that time
// each stream's busy stretches.
class Executor {
 public:
  explicit Executor(const Program& program);  // creates events on the current device
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void enqueue(RankContext& ctx, const ScenarioStreams& streams, ScenarioMode mode);
  // How collectives on `comm` are issued: set for a communicator on which the buffers are registered
  // as symmetric windows, cleared when they are released. Other communicators take the defaults.
  void set_route(ncclComm_t comm, const CollectiveRoute& route);
  void clear_route(ncclComm_t comm);
  // Busy time per stream of the last Full iteration (after it completed).
  StreamBusy busy() const;
  // One iteration of the compute operations alone (ComputeOnly) or of the collectives alone
  // (CommOnly), with an event after each operation, to time them one by one.
  void enqueue_timed(RankContext& ctx, const ScenarioStreams& streams, ScenarioMode mode);
  // Per operation, in program order, its time in the last enqueue_timed() iteration (after it
  // completed); 0 for the operations that iteration skipped.
  std::vector<double> operation_ms() const;
  // The first compute operation, or the first collective, alone on `stream`.
  void enqueue_sample(RankContext& ctx, cudaStream_t stream, bool collective) const;
  // One Full or Sequential iteration, issued exactly as enqueue() issues it, with an event right
  // before and right after every operation on the stream that runs it (after any wait for the
  // other stream, so a start is when the operation could begin).
  void enqueue_traced(RankContext& ctx, const ScenarioStreams& streams, ScenarioMode mode);
  // Per operation, in program order, its start and end in the last enqueue_traced() iteration, in
  // ms from that iteration's start (after it completed).
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
  void issue_collective(RankContext& ctx, ncclComm_t comm, const Op& op, cudaStream_t stream) const;
  void open_segment(StreamState& s);
  void close_segment(StreamState& s);
  static double busy_of(const std::vector<Segment>& segments, size_t used);

  const Program& program_;
  std::vector<IssueStep> order_comm_first_, order_compute_first_;  // computed on first use
  std::vector<cudaEvent_t> done_;                                  // per op, where needed
  std::map<ncclComm_t, CollectiveRoute> routes_;                   // set_route
  cudaEvent_t iteration_start_ = nullptr, comm_done_ = nullptr;
  std::vector<Segment> compute_segments_, comm_segments_;
  size_t compute_used_ = 0, comm_used_ = 0;
  // enqueue_timed(): its first event, one after each operation (created on first use), and the kind
  // of operation it ran.
  cudaEvent_t timed_start_ = nullptr;
  std::vector<cudaEvent_t> timed_end_;
  Op::Kind timed_kind_ = Op::Kind::Compute;
  // enqueue_traced(): set while it issues; the iteration's origin and each operation's bracket
  // (created on first use).
  bool tracing_ = false;
  cudaEvent_t trace_origin_ = nullptr;
  std::vector<cudaEvent_t> trace_start_, trace_end_;
};

// Runs the programs of every rank's replica (all on this device) in lockstep on `stream`: each
// compute operation for every replica, then each collective computed from all replicas' buffers
// (copies, and fp32 sums rounded once).
void run_lockstep(RankContext& ctx, const std::vector<const Program*>& replicas, cudaStream_t stream);

}  // namespace tandem::bench::scenarios
