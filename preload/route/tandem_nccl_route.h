#pragma once
// The C ABI of libtandem_nccl_route.so: tandem's copy-engine route (tandem/copy_engine_route.h) for
// the interposer behind `tandem run`. The interposer must never link or load NCCL itself (it is
// preloaded before the program's NCCL), so the route lives in this library of its own, which
// links libnccl.so.2 by SONAME and is dlopen()ed only at the first collective that would take the
// route: the program's NCCL is loaded then, and the loader binds this library to that very copy.
//
// Plain C types only, so the two sides share no C++ object. No function throws. Every function
// that runs NCCL work must be called with the interposer's "inside tandem" flag set, so that this
// library's own NCCL calls (ncclCommSplit, ncclGather, ...), which resolve to the interposer's
// exported hooks, go straight to NCCL and are not counted as the program's.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "tandem/route_counters.h"

extern "C" {

// Raised whenever a type or signature below changes: the interposer refuses a library of another
// version.
#define TANDEM_NCCL_ROUTE_ABI_VERSION 6

typedef struct tandem_nccl_route tandem_nccl_route;

// What a run answered.
enum tandem_nccl_route_result {
  TANDEM_ROUTE_DONE = 0,    // the collective is on the stream
  TANDEM_ROUTE_FAILED = 2,  // failed partway: the route is aborted; the caller reports an NCCL error
};

// One collective (tandem::CopyEngineCall; route_abi_call.h converts it both ways).
typedef struct tandem_nccl_route_call {
  int kind;  // tandem::Collective: 0 all-reduce, 1 reduce-scatter, 2 all-gather, 3 all-to-all, 4 broadcast
  const void* send;
  void* recv;
  size_t count;  // NCCL's count for the kind
  ncclDataType_t dtype;
  int reduction;              // tandem::Reduction (all-reduce, reduce-scatter)
  float scalar;               // PreMulSum: the scalar; PreDivSum: the divisor
  const void* device_scalar;  // PreMulSum: the scalar in device memory, or NULL
  int root;                   // broadcast: the rank whose data every rank receives
  cudaStream_t stream;
} tandem_nccl_route_call;

// The route's counters (tandem/route_counters.h: names, units, meanings), one int64_t each, in that
// list's order.
typedef struct tandem_nccl_route_stats {
#define TANDEM_ROUTE_ABI_STATS_FIELD(name, unit, meaning) int64_t name;
  TANDEM_ROUTE_COUNTERS(TANDEM_ROUTE_ABI_STATS_FIELD)
#undef TANDEM_ROUTE_ABI_STATS_FIELD
} tandem_nccl_route_stats;

int tandem_nccl_route_abi_version(void);
// The file of the NCCL this library's NCCL calls go to (dladdr of ncclGetVersion): the interposer
// checks it is the program's.
const char* tandem_nccl_route_nccl_file(void);

// A route for `comm` (the program's; not owned), or NULL with `why` filled: NCCL older than 2.28,
// no usable CUDA device, a communicator NCCL does not answer for. Local: no NCCL collective runs
// here (the lanes are split at the first collective), so a refusal never leaves peers waiting.
// `max_pool_bytes`: the staging pool's cap (0: none); larger calls run in pieces.
tandem_nccl_route* tandem_nccl_route_create(ncclComm_t comm, double timeout_s, size_t max_pool_bytes, char* why,
                                            size_t why_size);

// Whether `call` takes the route: a tandem::RouteOutcome value (0: the copy-engine route).
int tandem_nccl_route_check(const tandem_nccl_route* route, const tandem_nccl_route_call* call);

// Runs a call that check() accepted.
int tandem_nccl_route_run(tandem_nccl_route* route, const tandem_nccl_route_call* call, char* why, size_t why_size);

// Runs the calls of one NCCL group, each check()ed before, `routes[i]` being the route of `calls[i]`
// (tandem::CopyEngineRoute::run_group). On failure every route named is aborted.
int tandem_nccl_route_run_group(tandem_nccl_route* const* routes, const tandem_nccl_route_call* calls, size_t n,
                                char* why, size_t why_size);

void tandem_nccl_route_get_stats(const tandem_nccl_route* route, tandem_nccl_route_stats* out);

// `healthy` != 0: every rank's route work is done and every rank destroys its route now
// (collective: windows released, lanes closed); 0: aborts the lanes, waits for no peer.
void tandem_nccl_route_destroy(tandem_nccl_route* route, int healthy);

// Every function above, by its name after "tandem_nccl_route_": the interposer binds the library
// through this list (one dlsym each, preload/nccl_copy_engine.cpp), so a function added to the ABI is
// added here and bound, and a library that lacks one is refused.
#define TANDEM_NCCL_ROUTE_FUNCTIONS(X) \
  X(abi_version)                       \
  X(nccl_file)                         \
  X(create)                            \
  X(check)                             \
  X(run)                               \
  X(run_group)                         \
  X(get_stats)                         \
  X(destroy)

}  // extern "C"
