// The copy-engine route (tandem/copy_engine_route.h): lazy lanes, a growable staging pool in
// symmetric windows, calls planned (tandem/copy_engine_plan.h) and executed on the caller's stream,
// eagerly or into a CUDA graph, alone or as one NCCL group.
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <utility>
#include <vector>

#include "tandem/communicators.h"
#include "tandem/copy_engine_route.h"
#include "tandem/cuda_check.h"
#include "tandem/error.h"
#include "tandem/float_conversion.h"
#include "tandem/peer_windows.h"
#include "tandem/streams.h"
#include "tandem/symmetric_windows.h"

namespace tandem {
namespace {

// The pool grows in steps of this much at least, so a program whose sizes creep up a little at a
// time does not re-register on every call.
constexpr size_t kGrowthGranularity = size_t(2) << 20;

size_t align_up(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

// The communicator's device is current for the scope: a program that drives several GPUs from one
// thread may have another one current, and ncclMemAlloc and the staging copies use the current one.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) TANDEM_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

// The capture a stream is part of: 0 when it is not being captured.
struct Capture {
  bool known = false;  // the query answered
  unsigned long long id = 0;
};

Capture capture_of(cudaStream_t stream) {
  Capture c;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  if (cudaStreamGetCaptureInfo(stream, &status, &id) != cudaSuccess) {
    (void)cudaGetLastError();  // the query's own failure is not the program's error
    return c;
  }
  c.known = status != cudaStreamCaptureStatusInvalidated;
  c.id = status == cudaStreamCaptureStatusActive ? id : 0;
  return c;
}

// How the call's reduction scales the terms of its sum (tandem/copy_engine.h): an average multiplies
// by 1/nranks rounded to the element type, as NCCL stores its scalar.
SumScale scale_of(const CopyEngineCall& c, int nranks) {
  SumScale s;
  if (!reduces(c.kind)) return s;
  switch (c.reduction) {
    case Reduction::Average: {
      s.kind = SumScale::Kind::Multiply;
      const float reciprocal = float(1.0 / nranks);
      dispatch_dtype(*from_nccl(c.dtype), [&](auto t) { s.value = to_float(from_float<decltype(t)>(reciprocal)); });
      break;
    }
    case Reduction::PreMulSum:
      s.kind = SumScale::Kind::Multiply;
      s.value = c.scalar;
      s.device_value = c.device_scalar;
      break;
    case Reduction::PreDivSum:
      s.kind = SumScale::Kind::Divide;
      s.value = c.scalar;
      break;
    case Reduction::Sum:
    case Reduction::Unsupported:
      break;
  }
  return s;
}

// The part of `c` that `piece` names: the same call on the piece's elements of its buffers (a
// broadcast's send is read on its root alone, and may be null elsewhere). For every kind both buffers
// start `piece.offset` elements further: an all-reduce's or broadcast's piece is that run of its
// buffers; a segmented kind's (an all-gather's recv, a reduce-scatter's send, an all-to-all's both)
// is that run of rank 0's segment, the other ranks' parts following at the whole call's count apart
// (its plan's segment_stride, copy_engine_plan.h's piece_request).
CopyEngineCall piece_of(const CopyEngineCall& c, const CallPiece& piece) {
  if (piece.offset == 0 && piece.count == c.count) return c;
  const size_t skip = size_t(piece.offset) * nccl_type_bytes(c.dtype);
  CopyEngineCall part = c;
  part.send = c.send ? static_cast<const char*>(c.send) + skip : nullptr;
  part.recv = static_cast<char*>(c.recv) + skip;
  part.count = piece.count;
  return part;
}

}  // namespace

struct CopyEngineRoute::State {
  ncclComm_t parent = nullptr;
  WaitRules rules;
  size_t max_pool_bytes = kDefaultRoutePoolBytes;  // 0: no cap
  ncclConfig_t config{};                           // the lanes': NCCL's defaults, CTA policy zero, non-blocking
  int rank = 0;
  int nranks = 0;
  int device = 0;

  // Created on first use: lane 0 is split from the parent (the parent keeps its own settings and
  // never gets windows, so the program's other collectives keep their NCCL paths); the further
  // lanes from lane 0.
  ncclComm_t lane0 = nullptr;
  std::unique_ptr<CopyEngineLanes> lanes;

  // The staging pool and its windows; the caller's window_buffer() allocations and theirs apart,
  // because growing the pool releases the windows of the pool and those buffers must stay valid.
  std::unique_ptr<SymmetricWindows> pool_windows, buffer_windows;
  void* pool = nullptr;
  size_t pool_bytes = 0;
  // Pools a CUDA graph may still use: kept, with their windows, until the route goes.
  std::vector<void*> retired_pools;
  bool pool_in_graph = false;
  std::vector<AddressRange> buffers;  // from window_buffer()
  // Every rank reaches the peers' pools by address (tandem/peer_windows.h): all-reduces then push
  // and pull their chunks rather than stage them. Decided once, with the lanes; the same on every
  // rank. `peer_pools`: where each rank's current pool starts in this process, by rank.
  bool peer_copies = false;
  std::vector<char*> peer_pools;

  // Calls share the staging buffers: `done` marks the end of the last call, on `last_stream`, in
  // the capture `last_capture` (0: eager); `captured_done` the same inside a capture. `fence` is a
  // private stream that waits for `done`, so a wait for the last use (before the pool is freed)
  // waits for nothing of the program's.
  cudaEvent_t done = nullptr, captured_done = nullptr;
  cudaStream_t last_stream = nullptr;
  unsigned long long last_capture = 0;
  bool used = false;
  std::unique_ptr<PriorityStream> fence;
  // run_group: a stream at the greatest and at the least priority for this route's share of a
  // group, and the events that fork it from the program's streams and join it back.
  std::unique_ptr<PriorityStream> group_high, group_low;
  std::vector<cudaEvent_t> group_events;

  bool failed = false;
  CopyEngineRouteStats stats;

  void ensure_lanes() {
    if (lanes) return;
    // split_communicator awaits the parent before reading the new communicator: with a non-blocking
    // parent NCCL writes it only once the split is complete.
    lane0 = split_communicator(parent, rank, config, rules, "copy-engine lane 0");
    lanes = std::make_unique<CopyEngineLanes>(lane0, config, rules);
    pool_windows = std::make_unique<SymmetricWindows>(rules);
    buffer_windows = std::make_unique<SymmetricWindows>(rules);
    const StreamPriorityRange range = stream_priority_range();
    fence = std::make_unique<PriorityStream>(range.least);
    group_high = std::make_unique<PriorityStream>(range.greatest);
    group_low = std::make_unique<PriorityStream>(range.least);
    TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&captured_done, cudaEventDisableTiming));
    // Every rank reads the same environment (a launcher's) and gets the same answer from NCCL.
    const char* setting = std::getenv(kRoutePeerCopiesVariable);
    const std::string peers = setting ? setting : kRoutePeerCopiesDefault;
    TANDEM_REQUIRE(peers == "0" || peers == "1",
                   std::string(kRoutePeerCopiesVariable) + " must be 0 or 1, not '" + peers + "'");
    const bool asked = peers == "1";
    peer_copies = asked && every_peer_by_address(lane0, nranks);
    // Said in the stats (the library has no log): a user who asked for peer copies where NCCL maps no
    // peer's window (ranks of other nodes, or sharing one GPU) would otherwise see staged bytes only.
    stats.peer_copies_unavailable = asked && !peer_copies ? 1 : 0;
  }

  // Waits (bounded, under `rules`) until the last call's work on the staging buffers is over.
  void await_last_use(const std::string& step) {
    if (!used) return;
    TANDEM_CUDA_CHECK(cudaStreamWaitEvent(fence->get(), done, 0));
    await_stream(fence->get(), lanes->comms(), rules, step);
  }

  // Collective: every rank asks for the same size at the same call. Never during a capture.
  void ensure_pool(size_t bytes) {
    if (bytes <= pool_bytes) return;
    size_t grown = align_up(std::max(bytes, pool_bytes + pool_bytes / 2), kGrowthGranularity);
    // Growing by half again stops at the cap (or at the growth step, below which no allocation is
    // smaller anyway): only a call whose one granule needs more takes the pool past it.
    const size_t ceiling = std::max(max_pool_bytes, kGrowthGranularity);
    if (max_pool_bytes != 0 && grown > ceiling) grown = std::max(bytes, ceiling);
    if (pool && pool_in_graph) {
      // A graph holds this pool's addresses: it stays, windows and all, beside the new one.
      retired_pools.push_back(pool);
      pool = nullptr;
      pool_bytes = 0;
      pool_in_graph = false;
    } else if (pool) {
      // The staging copies and the collectives of the last call may still read or write the pool.
      await_last_use("copy-engine route: the last use of the staging pool");
      pool_windows->release("copy-engine staging pool");
      TANDEM_NCCL_CHECK(nullptr, ncclMemFree(pool));
      pool = nullptr;
      stats.pool_bytes -= int64_t(pool_bytes);
      pool_bytes = 0;
    }
    peer_pools.clear();
    TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&pool, grown));
    pool_bytes = grown;
    stats.pool_bytes += int64_t(grown);
    for (ncclComm_t c : lanes->comms()) {
      const std::vector<ncclWindow_t> window =
          pool_windows->add(c, {{pool, int64_t(grown)}}, "copy-engine staging pool");
      // The barriers and the copies' peer addresses are lane 0's (the pool is fresh: its start is scratch).
      if (peer_copies && c == lane0) peer_pools = peer_window_addresses(window.front(), nranks, pool, fence->get());
    }
    ++stats.registrations;
  }

  bool in_window(const void* p, size_t bytes) const {
    return lies_within(buffers, reinterpret_cast<uintptr_t>(p), bytes);
  }

  // The consecutive pieces `c` runs as, so that the pool stays within max_pool_bytes (copy_engine_plan.h).
  std::vector<CallPiece> pieces_of(const CopyEngineCall& c) const {
    return pieces_within(plan_request(c), max_pool_bytes);
  }

  // The plan of one piece of `c`: the whole call's request cut to the piece (copy_engine_plan.h's
  // piece_request), so placement and in-place are the whole call's (a part of a buffer in window
  // memory is in it too), the segments stay the whole call's count apart, and the plan is the one
  // pieces_within sized and the CPU simulation checks.
  CopyEnginePlan plan_for(const CopyEngineCall& c, const CallPiece& piece) const {
    return plan_copy_engine_collective(piece_request(plan_request(c), piece));
  }

  // The pool that `c`'s pieces need: the largest piece's (pieces_pool_bytes).
  size_t pool_for(const CopyEngineCall& c, const std::vector<CallPiece>& pieces) const {
    return pieces_pool_bytes(plan_request(c), pieces);
  }

  // The call's request (copy_engine_call.h's one conversion) with where its buffers lie.
  PlanRequest plan_request(const CopyEngineCall& c) const {
    const RouteRequest call = route_request(c, nranks, rank);
    PlanRequest request(call, in_window(c.send, size_t(send_elements(c.kind, c.count, nranks)) * call.element_bytes),
                        in_window(c.recv, size_t(recv_elements(c.kind, c.count, nranks)) * call.element_bytes));
    request.peer_copies = peer_copies;
    return request;
  }

  // Orders `stream` after the route's last use (see the header's Ordering and CUDA graphs).
  void begin(cudaStream_t stream, unsigned long long capture) {
    if (!used) return;
    if (capture == 0) {
      if (last_capture != 0 || stream != last_stream) TANDEM_CUDA_CHECK(cudaStreamWaitEvent(stream, done, 0));
    } else if (capture != last_capture) {
      // The graph's first route call: at each replay it waits for the route's last use before it.
      TANDEM_CUDA_CHECK(cudaStreamWaitEvent(stream, done, cudaEventWaitExternal));
    } else if (stream != last_stream) {
      TANDEM_CUDA_CHECK(cudaStreamWaitEvent(stream, captured_done, 0));
    }
  }

  void end(cudaStream_t stream, unsigned long long capture) {
    if (capture == 0) {
      TANDEM_CUDA_CHECK(cudaEventRecord(done, stream));
    } else {
      TANDEM_CUDA_CHECK(cudaEventRecord(captured_done, stream));
      // At each replay, the graph marks the route's end for the eager calls and graphs after it.
      TANDEM_CUDA_CHECK(cudaEventRecordWithFlags(done, stream, cudaEventRecordExternal));
      pool_in_graph = true;
      ++stats.captured;
    }
    last_stream = stream;
    last_capture = capture;
    used = true;
    ++stats.calls;
  }

  cudaEvent_t group_event(size_t index) {
    while (group_events.size() <= index) {
      cudaEvent_t e = nullptr;
      TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      group_events.push_back(e);
    }
    return group_events[index];
  }

  // Runs `body` on the communicator's device and marks the route failed when it throws: a call that
  // stopped halfway leaves the ranks out of step, so no later call may run on these lanes.
  template <class F>
  void guarded(F&& body) {
    try {
      DeviceScope on(device);
      body();
    } catch (...) {
      failed = true;
      throw;
    }
  }
};

CopyEngineRoute::CopyEngineRoute(ncclComm_t parent, WaitRules rules, size_t max_pool_bytes)
    : state_(std::make_unique<State>()) {
  TANDEM_REQUIRE(parent != nullptr, "the copy-engine route needs a communicator");
  State& s = *state_;
  s.parent = parent;
  s.rules = std::move(rules);
  s.max_pool_bytes = max_pool_bytes;
  s.config = NCCL_CONFIG_INITIALIZER;
  s.config.blocking = 0;
  s.config.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  TANDEM_NCCL_CHECK(parent, ncclCommUserRank(parent, &s.rank));
  TANDEM_NCCL_CHECK(parent, ncclCommCount(parent, &s.nranks));
  TANDEM_NCCL_CHECK(parent, ncclCommCuDevice(parent, &s.device));
}

CopyEngineRoute::~CopyEngineRoute() {
  State& s = *state_;
  const bool healthy = !s.failed && std::uncaught_exceptions() == 0;
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  if (previous != s.device) cudaSetDevice(s.device);
  if (healthy && s.lanes) {
    try {
      s.await_last_use("copy-engine route: the last call before closing");
      s.pool_windows->release("copy-engine staging pool");
      s.buffer_windows->release("copy-engine window buffers");
    } catch (const std::exception&) {
      // Deregistration is collective; a peer that is gone leaves the windows to the abort below.
      abort();
    }
  }
  if (s.failed) {
    // Aborted communicators drop their windows; the memory is left alone (a kernel of an aborted
    // collective could still touch it), which at worst leaks it.
    abort();
  } else {
    if (s.pool) ncclMemFree(s.pool);
    for (void* p : s.retired_pools) ncclMemFree(p);
    for (const auto& b : s.buffers) ncclMemFree(reinterpret_cast<void*>(b.begin));
    if (s.lanes) s.lanes->close(true);
    s.lanes.reset();
    if (s.lane0) close_communicator(s.lane0, true, s.rules.timeout_s);
    for (cudaEvent_t e : {s.done, s.captured_done})
      if (e) cudaEventDestroy(e);
    for (cudaEvent_t e : s.group_events) cudaEventDestroy(e);
  }
  if (previous >= 0 && previous != s.device) cudaSetDevice(previous);
}

int CopyEngineRoute::rank() const { return state_->rank; }
int CopyEngineRoute::nranks() const { return state_->nranks; }

RouteOutcome CopyEngineRoute::check(const CopyEngineCall& call) const {
  const State& s = *state_;
  RouteFacts facts;
  facts.failed = s.failed;
  const RouteOutcome outcome = decide_route(route_request(call, s.nranks, s.rank), facts);
  if (outcome != RouteOutcome::CopyEngine) return outcome;
  const Capture capture = capture_of(call.stream);
  if (!capture.known) return RouteOutcome::CaptureNotReady;
  if (capture.id == 0) return outcome;
  // Captured: the lanes and a pool of this call's size (its largest piece's) must exist already.
  try {
    if (!s.lanes) return RouteOutcome::CaptureNotReady;
    if (s.pool_for(call, s.pieces_of(call)) > s.pool_bytes) return RouteOutcome::CaptureNotReady;
  } catch (...) {
    return RouteOutcome::CaptureNotReady;
  }
  return outcome;
}

void CopyEngineRoute::run(const CopyEngineCall& c) {
  const RouteOutcome outcome = check(c);
  TANDEM_REQUIRE(outcome == RouteOutcome::CopyEngine, std::string("copy-engine ") + to_string(c.kind) + ": " +
                                                          to_string(outcome) + " (" + explain(outcome) + ")");
  State& s = *state_;
  s.guarded([&] {
    TANDEM_REQUIRE(!s.failed, "the copy-engine route failed earlier and was aborted");
    const Capture capture = capture_of(c.stream);
    const size_t element_bytes = nccl_type_bytes(c.dtype);
    if (capture.id == 0) s.ensure_lanes();
    // A call larger than the pool's cap (or an all-reduce in window memory with a staged remainder)
    // runs as consecutive pieces in one pool, sized for the largest. They follow each other on the
    // caller's stream: a piece's staging waits for the previous piece's last step there (the
    // exchange's side streams join back into it), and each piece's NCCL calls end with NCCL's
    // completion handshake, so no peer still reads or writes this rank's pool when the next piece
    // stages into it: they share the pool as consecutive calls do. Under capture every piece is
    // captured, in order, between the one begin and end below.
    const std::vector<CallPiece> pieces = s.pieces_of(c);
    if (capture.id == 0) s.ensure_pool(s.pool_for(c, pieces));
    // The previous call may have been on another stream, or in a graph, and still use the pool.
    s.begin(c.stream, capture.id);
    char* pool = static_cast<char*>(s.pool);
    for (const CallPiece& piece : pieces) {
      const CopyEngineCall part = piece_of(c, piece);
      const CopyEnginePlan plan = s.plan_for(c, piece);
      const PoolLayout layout = pool_layout(plan, element_bytes);
      TANDEM_REQUIRE(layout.bytes <= s.pool_bytes, std::string("copy-engine ") + to_string(c.kind) +
                                                       ": a piece needs more pool than its call was given");
      PlanBuffers buffers;
      buffers.send = part.send;
      buffers.recv = part.recv;
      if (pool) {
        buffers.pool_input = pool + layout.input;
        buffers.pool_output = pool + layout.output;
        buffers.pool_scratch = pool + layout.scratch;
        buffers.pool = pool;
        buffers.peer_pools = &s.peer_pools;
        buffers.barrier = pool + layout.barrier;
      }
      execute_copy_engine_plan(*s.lanes, plan, buffers, c.dtype, scale_of(c, s.nranks), c.stream);
      // A 2-D stage moves every row (a segmented piece's part of each rank's segment).
      for (const PlanStep& step : plan.steps) {
        s.stats.staged_bytes += int64_t(staged_elements(step) * element_bytes);
        s.stats.peer_bytes += int64_t(peer_elements(step, s.rank, s.nranks) * element_bytes);
      }
    }
    s.end(c.stream, capture.id);
  });
}

void CopyEngineRoute::run_group(const std::vector<GroupedCall>& calls) {
  if (calls.empty()) return;
  std::vector<CopyEngineRoute*> routes;  // in the order of their first call
  bool one_stream = true;
  for (const GroupedCall& g : calls) {
    TANDEM_REQUIRE(g.route != nullptr, "a grouped copy-engine call without a route");
    if (std::find(routes.begin(), routes.end(), g.route) == routes.end()) routes.push_back(g.route);
    one_stream = one_stream && g.call.stream == calls.front().call.stream;
  }
  if (routes.size() == 1 && one_stream) {
    for (const GroupedCall& g : calls) g.route->run(g.call);
    return;
  }
  for (CopyEngineRoute* route : routes) {
    State& s = *route->state_;
    std::vector<cudaStream_t> streams;
    for (const GroupedCall& g : calls)
      if (g.route == route && std::find(streams.begin(), streams.end(), g.call.stream) == streams.end())
        streams.push_back(g.call.stream);
    cudaStream_t own = nullptr;
    s.guarded([&] {
      s.ensure_lanes();
      int priority = 0;
      TANDEM_CUDA_CHECK(cudaStreamGetPriority(streams.front(), &priority));
      own = priority == s.group_high->priority() ? s.group_high->get() : s.group_low->get();
      // The route's share starts once everything before the group on each of its streams is done.
      for (size_t i = 0; i < streams.size(); ++i) {
        TANDEM_CUDA_CHECK(cudaEventRecord(s.group_event(i), streams[i]));
        TANDEM_CUDA_CHECK(cudaStreamWaitEvent(own, s.group_event(i), 0));
      }
    });
    for (const GroupedCall& g : calls) {
      if (g.route != route) continue;
      CopyEngineCall on_own = g.call;
      on_own.stream = own;
      route->run(on_own);
    }
    s.guarded([&] {
      // Every stream the group named waits for the route's share, as after NCCL's group.
      cudaEvent_t joined = s.group_event(streams.size());
      TANDEM_CUDA_CHECK(cudaEventRecord(joined, own));
      for (cudaStream_t stream : streams) TANDEM_CUDA_CHECK(cudaStreamWaitEvent(stream, joined, 0));
    });
  }
}

void* CopyEngineRoute::window_buffer(size_t bytes) {
  State& s = *state_;
  TANDEM_REQUIRE(bytes > 0, "a copy-engine window buffer needs at least one byte");
  void* p = nullptr;
  s.guarded([&] {
    TANDEM_REQUIRE(!s.failed, "the copy-engine route failed earlier and was aborted");
    s.ensure_lanes();
    TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&p, bytes));
    s.buffers.push_back({reinterpret_cast<uintptr_t>(p), bytes});
    s.stats.pool_bytes += int64_t(bytes);
    s.stats.buffer_bytes += int64_t(bytes);
    for (ncclComm_t c : s.lanes->comms()) s.buffer_windows->add(c, {{p, int64_t(bytes)}}, "copy-engine window buffer");
    ++s.stats.registrations;
  });
  return p;
}

CopyEngineRouteStats CopyEngineRoute::stats() const { return state_->stats; }

void CopyEngineRoute::abort() noexcept {
  State& s = *state_;
  s.failed = true;
  if (s.lanes) s.lanes->abort();
  if (s.lane0) abort_communicator(s.lane0);
  s.lane0 = nullptr;
  if (s.pool_windows) s.pool_windows->abandon();
  if (s.buffer_windows) s.buffer_windows->abandon();
}

}  // namespace tandem
