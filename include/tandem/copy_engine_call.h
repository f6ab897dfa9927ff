#pragma once
// One collective call on the copy-engine route, from the interposer's hook (or tandem.torch) to the
// plan: the call as its caller made it (CopyEngineCall: buffers, stream, NCCL's data type), and its
// one conversion into the pure request that the route's rule (tandem/copy_engine_eligibility.h,
// RouteRequest) and the plan (tandem/copy_engine_plan.h, PlanRequest: the same request with where
// its buffers lie) read. The C ABI of the interposer's route library carries the same call as plain
// C (preload/route/tandem_nccl_route.h), converted both ways in one header beside it.
//
// Header-only use of cuda_runtime.h and nccl.h: the interposer, which loads neither library itself,
// builds its calls with it too.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>

#include "tandem/collective.h"
#include "tandem/copy_engine_eligibility.h"

namespace tandem {

// One collective call, with NCCL's meaning of `count` for its kind.
struct CopyEngineCall {
  Collective kind = Collective::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  ncclDataType_t dtype = ncclBfloat16;
  Reduction reduction = Reduction::Sum;  // all-reduce and reduce-scatter
  // PreMulSum: the scalar (a value of the element type; the same on every rank); PreDivSum: the divisor.
  float scalar = 1;
  // PreMulSum with NCCL's ncclScalarDevice: the scalar in device memory, of the element type.
  const void* device_scalar = nullptr;
  int root = 0;  // broadcast: the rank whose data every rank receives (`send` is read there alone)
  cudaStream_t stream = nullptr;
};

// What the rule and the plan read of `call` on rank `rank` of a communicator of `nranks` ranks (0:
// its size is not known): the element type's size and whether the route adds it, NCCL's in-place
// rule, the reduction, the root. The only place a call becomes a RouteRequest.
RouteRequest route_request(const CopyEngineCall& call, int nranks, int rank);

}  // namespace tandem
