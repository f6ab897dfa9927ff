#pragma once
// The copy-engine route behind the NCCL hooks: libtandem_nccl_route.so (route/tandem_nccl_route.h),
// dlopen()ed beside this library at the first collective that would take the route, and one route
// per program communicator, created at its first such collective and destroyed with it.
//
// The route library's own NCCL calls resolve to this library's exported hooks (it is first in the
// global scope): while this thread is inside tandem's own NCCL work (InsideTandem,
// nccl_thread_context.h), every NCCL hook forwards straight to NCCL, uncounted.
//
// Groups: NCCL queues every call between the program's ncclGroupStart and ncclGroupEnd and issues
// them all at the outermost ncclGroupEnd, so nothing of a group is known to be done (or even on its
// stream) before that. A routed collective inside a group is held likewise (defer_grouped) and run
// right after the program's ncclGroupEnd reached NCCL, with the group's other routed calls, as one
// group (tandem::CopyEngineRoute::run_group): the program sees NCCL's semantics, and the route's
// own NCCL calls, which it awaits one by one, run outside the program's group. A group the route
// cannot take without blocking the program or deadlocking is handed to NCCL whole before its end
// (take_held_for_nccl), and one whose communicator the program destroyed runs nothing on it.
#include <nccl.h>

#include <cstdint>
#include <vector>

#include "tandem/copy_engine_call.h"
#include "tandem/copy_engine_eligibility.h"

namespace tandem::preload {

// What the route knows of `comm` before a call: whether its route (or the library) is missing, or
// failed earlier. Never throws.
struct RouteState {
  bool unavailable = false;
  bool failed = false;
};
RouteState route_state(ncclComm_t comm);

// The route's own verdict on `call` (tandem::CopyEngineRoute::check), loading the library and making
// the communicator's route first if needed: CopyEngine, CaptureNotReady, RouteUnavailable... Never
// throws.
RouteOutcome check_copy_engine_route(ncclComm_t comm, const CopyEngineCall& call);

// The result of running routed work. `outcome` is CopyEngine when it is on the stream, RouteFailed
// when it failed partway (`error` is what the program gets: the route is aborted, and the failure
// was logged).
struct RouteAttempt {
  RouteOutcome outcome = RouteOutcome::RouteFailed;
  ncclResult_t error = ncclSuccess;
};
// A call check_copy_engine_route() accepted.
RouteAttempt run_copy_engine_route(ncclComm_t comm, const CopyEngineCall& call);

// A routed collective the program issued inside its group, held until the group's end.
struct HeldCall {
  ncclComm_t comm = nullptr;
  CopyEngineCall call;
  uint64_t bytes = 0;        // its size, for the counters
  int device = -1;           // the communicator's CUDA device
  ncclRedOp_t op = ncclSum;  // the program's op, to hand the call to NCCL after all
  uint64_t slot = 0;         // the communicator's route when the call was held (defer_grouped sets it)
};
// Inside the program's group: `held.call` (accepted by check_copy_engine_route) runs at the group's
// end, and is counted then, as copy-engine or, if the group's routed part failed, as route-failed.
void defer_grouped(const HeldCall& held);
// Held calls handed back to NCCL, to go into the program's group after all, and why.
struct HandedBack {
  std::vector<HeldCall> calls;
  RouteOutcome why = RouteOutcome::NotRequested;
};
// At the outermost ncclGroupEnd, before NCCL's. First the held calls on a communicator the program
// destroyed or aborted since they were held (on this thread or another) are dropped and counted
// (communicator-gone): nothing runs on a dead communicator, and the group ends as NCCL ends it. Then
// the others are returned, to go into NCCL's group, when the route cannot take them:
//  - several-devices-group: they are on communicators of several devices (one thread driving several
//    ranks, as ncclCommInitAll users and XLA with several GPUs per process do): the route would run
//    one rank's collective after the other, each waiting for the others;
//  - non-blocking-group: NCCL's part of the group is on a non-blocking communicator (or on one whose
//    creation the interposer did not see). NCCL issues that part from a thread of its own after
//    ncclGroupEnd returned ncclInProgress; the routed calls, on the same streams, must come after it
//    on every rank, so they would have to wait for it inside ncclGroupEnd (blocking a call that
//    returns at once) and the program's own ncclCommGetAsyncError polls would no longer see NCCL's
//    progress. NCCL runs the whole group instead, as without the interposer.
// Else nothing.
HandedBack take_held_for_nccl();
// A collective the program's group hands to NCCL itself on `comm`.
void note_grouped_for_nccl(ncclComm_t comm);
// At the outermost ncclGroupEnd, after NCCL's: the group's routed calls, run as one group, after
// NCCL's part, which NCCL issued before returning (take_held_for_nccl left any other group to NCCL).
// `nccl_result`: what the program's ncclGroupEnd got from NCCL; an error drops the routed calls
// (the group failed). Returns the routed part's result: ncclSuccess when it ran (or there was none,
// or it was dropped), else the error the program gets for it (nccl_group_result.h combines the two).
ncclResult_t finish_group(ncclResult_t nccl_result);

// The program destroys (`healthy`) or aborts `comm`: its route goes first (collective like the
// program's destroy: every rank destroys its communicator). Never throws.
void drop_copy_engine_route(ncclComm_t comm, bool healthy);

}  // namespace tandem::preload
