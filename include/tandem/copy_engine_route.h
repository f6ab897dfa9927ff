#pragma once
// The copy-engine route for a program's own collectives: tandem's copy-engine collectives
// (tandem/copy_engine.h) on buffers the caller did not place in symmetric windows - a framework's
// caching allocator, an unmodified program's cudaMalloc - on the caller's communicator and stream.
// Its two clients are the interposer behind `tandem run` (the program's ncclAllReduce & co.) and
// tandem.torch (a DDP communication hook, FSDP2's custom collectives).
//
// What one call does, all enqueued on the caller's `stream`:
//   1. unless `send` already lies in memory from window_buffer(): copy it into the staging input
//      (cudaMemcpyAsync, device to device);
//   2. the copy-engine collective between the staging buffers (and the scratch of a reduction),
//      on lanes split from the caller's communicator;
//   3. unless `recv` lies in memory from window_buffer(): copy the staging output to `recv`.
// The staging buffers and the scratch are one pool of ncclMemAlloc memory registered as symmetric
// windows on every lane once, and grown (the previous use awaited, released, freed, allocated and
// registered again) only when a call needs more, by half again at least: registration is expensive
// (seconds were reported for cuMem export/import), so it happens once per size, never per call.
// Buffers handed out by window_buffer() are allocations of their own, registered once and never
// moved (a growing pool would invalidate them). The pool's layout depends only on the call's
// arguments, so each staged buffer sits at the same window offset on every rank, as
// NCCL_WIN_COLL_SYMMETRIC requires.
//
// Ordering: calls on one route are ordered as they are enqueued even across streams: a call on a
// stream other than the previous call's first waits (cudaStreamWaitEvent) for the previous call's
// end, because they share the staging buffers.
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

#include "tandem/copy_engine.h"
#include "tandem/nccl_wait.h"

namespace tandem {

// What a route has done, for the summary of `tandem run` and tandem.torch.
struct CopyEngineRouteStats {
  int64_t calls = 0;          // calls that took the route
  int64_t staged_bytes = 0;   // bytes copied into and out of window memory
  int64_t pool_bytes = 0;     // window memory held now (the pool and the window buffers)
  int64_t registrations = 0;  // times the pool was (re)registered, plus one per window buffer
};

class CopyEngineRoute {
 public:
  // `parent`: the caller's communicator (not owned; it must outlive the route). `base_config`: the
  // configuration the lanes start from (its CTA policy is forced to zero, blocking to 0).
  CopyEngineRoute(ncclComm_t parent, WaitRules rules, const ncclConfig_t& base_config = NCCL_CONFIG_INITIALIZER);
  // Releases the windows, frees the pool and closes the lanes; after a failure (abort()) it only
  // aborts.
  ~CopyEngineRoute();
  CopyEngineRoute(const CopyEngineRoute&) = delete;
  CopyEngineRoute& operator=(const CopyEngineRoute&) = delete;

  int rank() const;
  int nranks() const;

  // "" when a call with these arguments takes the route, else why not - the reasons of
  // copy_engine_refusal (op, dtype, uneven chunks) plus this route's own (an empty collective, which
  // NCCL handles at no cost). An in-place all-to-all takes the route: both sides are staged.
  // Counts: elements of `send` for all-reduce and all-to-all (per peer for all-to-all, as NCCL),
  // of `recv` for reduce-scatter, of `send` for all-gather.
  std::string refusal(CopyEngineCollective kind, size_t count, ncclDataType_t dtype, ncclRedOp_t op = ncclSum) const;

  // Each throws tandem::Error when refusal() is not "" (callers check first and fall back to NCCL),
  // and when a CUDA or NCCL step fails or a wait passes its WaitRules: the route is then failed (every
  // later call throws) and the caller should abort() it. Each returns once its work is on `stream`.
  void all_reduce(const void* send, void* recv, size_t count, ncclDataType_t dtype, cudaStream_t stream);
  void reduce_scatter(const void* send, void* recv, size_t recv_count, ncclDataType_t dtype, cudaStream_t stream);
  void all_gather(const void* send, void* recv, size_t send_count, ncclDataType_t dtype, cudaStream_t stream);
  void all_to_all(const void* send, void* recv, size_t count, ncclDataType_t dtype, cudaStream_t stream);

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
