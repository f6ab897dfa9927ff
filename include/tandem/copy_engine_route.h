#pragma once
// The copy-engine route for a program's own collectives: tandem's copy-engine collectives
// (tandem/copy_engine.h) on buffers the caller did not place in symmetric windows - a framework's
// caching allocator, an unmodified program's cudaMalloc - on the caller's communicator and stream.
// Its two clients are the interposer behind `tandem run` (the program's ncclAllReduce & co.) and
// tandem.torch (a DDP communication hook, FSDP2's custom collectives).
//
// What one call does, all enqueued on the caller's `stream`: the steps of its copy-engine plan
// (tandem/copy_engine_plan.h): the input staged into window memory unless it already lies in memory
// from window_buffer(), the exchange (a broadcast: the scatter from its root) on copy engines on
// lanes split from the caller's communicator, the sum of a reduction (scaled for an average or a
// pre-multiplied sum), and the output copied out unless `recv` lies in window memory. An all-reduce
// with peer copies (kRoutePeerCopiesVariable) stages neither: its chunks go by copy engines straight
// from `send` into the peers' pools, and the results straight from theirs into `recv`.
// The staging buffers and the scratch are one pool of ncclMemAlloc memory, at most max_pool_bytes
// (calls of any kind that would need more run in consecutive pieces), registered as symmetric
// windows on every lane once, and grown (the previous use awaited, released, freed, allocated and
// registered again) only when a call needs more, by half again at least but not past the cap (or
// 2 MiB, if more): registration is expensive (seconds were reported for cuMem export/import), so it
// happens once per size, never per call.
// Buffers handed out by window_buffer() are allocations of their own, registered once and never
// moved (a growing pool would invalidate them). The pool's layout depends only on the call's
// arguments, so each staged buffer sits at the same window offset on every rank, as
// NCCL_WIN_COLL_SYMMETRIC requires.
//
// Ordering: calls on one route are ordered as they are enqueued even across streams: a call on a
// stream other than the previous call's first waits (cudaStreamWaitEvent) for the previous call's
// end, because they share the staging buffers.
//
// CUDA graphs: a call on a stream being captured is captured with everything it enqueues, and the
// graph replays it. Nothing that cannot happen during a capture happens then (splitting the lanes,
// allocating or registering window memory): a captured call needs the lanes and a pool large enough
// already (an eager call of the same size before the capture, as frameworks' warm-up steps make),
// else check() says CaptureNotReady and the caller hands it to NCCL. A graph's first route call
// waits, at every replay, for the route's last use before the replay (an external event wait node),
// and its last call records the route's end event (an external record node), so eager calls and
// replays stay ordered as they are issued. A pool that a graph uses is never freed or moved while
// the route lives: a larger pool is allocated beside it.
//
// Groups (run_group): the calls a program made between ncclGroupStart and ncclGroupEnd run as NCCL
// runs a group: each communicator's calls in order; the calls of different communicators on a
// stream of their route each, forked from the streams their calls name and joined back into them,
// so ranks whose groups name the communicators in different orders never wait on each other.
//
// Collective: every call (window_buffer() and destruction included) is collective over the parent
// communicator: every rank makes the same calls (same kind, count, dtype, op) in the same order, as
// NCCL requires of the parent's own collectives. Construction is local: it only asks the parent its
// rank, size and device. refusal() depends only on those arguments and the rank count, so every
// rank takes the same decision. The lanes are created on the first call that takes the route (not
// at construction), so a program none of whose calls qualifies pays nothing: lane 0 is split from
// the parent (the parent keeps its settings and never gets windows, so the program's other
// collectives keep NCCL's usual paths), the further lanes from lane 0 (CopyEngineLanes).
// Placing data in window_buffer() memory is the caller's choice per call, and must be the same on
// every rank (the same buffer offsets), since it decides which windows the collective uses.
//
// Every call runs with the parent's device current (and restores the caller's).
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tandem/collective.h"
#include "tandem/copy_engine.h"
#include "tandem/copy_engine_call.h"
#include "tandem/copy_engine_eligibility.h"
#include "tandem/nccl_wait.h"
#include "tandem/route_counters.h"

namespace tandem {

// The staging pool's cap by default: a route's window memory does not grow with the model (a 7 B
// model's gradients in one call would otherwise take twice their size of extra device memory).
inline constexpr size_t kDefaultRoutePoolBytes = size_t(256) << 20;

// Peer copies (tandem/copy_engine_plan.h's Push and Pull): where every rank of the communicator
// reaches the others' window memory by address (NCCL's LSA team: one node's GPUs), an all-reduce
// outside window memory copies its chunks straight between the caller's buffers and the peers'
// pools and stages nothing. This environment variable set to 1, in every rank's environment,
// turns them on; read when a route's lanes are created. Off by default until they have run on two
// GPUs: ranks sharing one GPU are a host each to NCCL, which then maps no peer's windows, so no
// GPU test of this machine's can reach them (docs/RUN.md, peer copies).
inline constexpr const char* kRoutePeerCopiesVariable = "TANDEM_ROUTE_PEER_COPIES";
inline constexpr const char* kRoutePeerCopiesDefault = "0";

// What a route has done, for the summary of `tandem run` and tandem.torch: the counters of
// tandem/route_counters.h (each an int64_t, their meaning and unit there), in that order.
struct CopyEngineRouteStats {
#define TANDEM_ROUTE_STATS_FIELD(name, unit, meaning) int64_t name = 0;
  TANDEM_ROUTE_COUNTERS(TANDEM_ROUTE_STATS_FIELD)
#undef TANDEM_ROUTE_STATS_FIELD
};

class CopyEngineRoute;
struct GroupedCall {
  CopyEngineRoute* route = nullptr;
  CopyEngineCall call;
};

class CopyEngineRoute {
 public:
  // `parent`: the caller's communicator (not owned; it must outlive the route). `max_pool_bytes`: the
  // most window memory the staging pool may hold (0: no cap); a call that would need more runs in
  // pieces (tandem/copy_engine_plan.h, pieces_within). The lanes are NCCL's default configuration
  // with CTA policy zero, non-blocking.
  CopyEngineRoute(ncclComm_t parent, WaitRules rules, size_t max_pool_bytes = kDefaultRoutePoolBytes);
  // Releases the windows, frees the pools and closes the lanes; after a failure (abort()) it only
  // aborts.
  ~CopyEngineRoute();
  CopyEngineRoute(const CopyEngineRoute&) = delete;
  CopyEngineRoute& operator=(const CopyEngineRoute&) = delete;

  int rank() const;
  int nranks() const;

  // Whether `call` takes the route: tandem/copy_engine_eligibility.h's rule with this route's facts
  // (its rank count, whether it failed, whether a capture finds it set up). Never throws.
  RouteOutcome check(const CopyEngineCall& call) const;

  // Runs `call` (collective: every rank runs the same calls in the same order); returns once its
  // work is on `call.stream`. Throws tandem::Error when check() is not CopyEngine (callers check
  // first and fall back to NCCL), and when a CUDA or NCCL step fails or a wait passes its WaitRules:
  // the route is then failed (every later call throws) and the caller should abort() it.
  void run(const CopyEngineCall& call);

  // The calls of one NCCL group, each already check()ed, on one or several routes (see above).
  static void run_group(const std::vector<GroupedCall>& calls);

  // `bytes` of window memory owned by the route (collective, like a call): data placed there by the
  // caller is not staged. Valid until the route is destroyed.
  void* window_buffer(size_t bytes);

  CopyEngineRouteStats stats() const;
  // After a failure: aborts the lanes so the peers' kernels exit; the route is unusable afterwards.
  void abort() noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tandem
