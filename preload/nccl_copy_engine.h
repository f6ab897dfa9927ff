#pragma once
// The copy-engine route behind the NCCL hooks: libtandem_nccl_route.so (route/tandem_nccl_route.h),
// dlopen()ed beside this library at the first collective that would take the route, and one route
// per program communicator, created at its first such collective and destroyed with it.
//
// The route library's own NCCL calls resolve to this library's exported hooks (it is first in the
// global scope): while this thread is inside tandem's own NCCL work (InsideTandem), every NCCL hook
// forwards straight to NCCL, uncounted. The program's ncclGroupStart/ncclGroupEnd depth is kept per
// thread: a collective inside a group is left to NCCL (nccl_route.h, InsideGroup).
#include <nccl.h>

#include <string>

#include "nccl_route.h"

namespace tandem::preload {

// True while this thread runs tandem's own NCCL work.
bool inside_tandem();
class InsideTandem {
 public:
  InsideTandem();
  ~InsideTandem();
  InsideTandem(const InsideTandem&) = delete;
  InsideTandem& operator=(const InsideTandem&) = delete;
};

// The program's ncclGroupStart / ncclGroupEnd on this thread (called after NCCL accepted them).
void group_started();
void group_ended();
bool inside_group();

// What the route knows of `comm` before a call: whether its route (or the library) is missing, or
// failed earlier. Never throws.
struct RouteState {
  bool unavailable = false;
  bool failed = false;
};
RouteState route_state(ncclComm_t comm);

// The result of running one collective on the route. `outcome` is CopyEngine when it is on the
// stream; StreamCapturing or RouteUnavailable when nothing was enqueued (the caller forwards the call
// to NCCL); RouteFailed when it failed partway (`error` is what the program gets: the route is
// aborted, and the failure was logged).
struct RouteAttempt {
  RouteOutcome outcome = RouteOutcome::RouteUnavailable;
  ncclResult_t error = ncclSuccess;
};
RouteAttempt run_copy_engine_route(CollectiveKind kind, const void* send, void* recv, size_t count, ncclDataType_t type,
                                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

// The program destroys (`healthy`) or aborts `comm`: its route goes first (collective like the
// program's destroy: every rank destroys its communicator). Never throws.
void drop_copy_engine_route(ncclComm_t comm, bool healthy);

}  // namespace tandem::preload
