#pragma once
// All-reduce and reduce-scatter with their data moved by copy engines. NCCL 2.28 runs only
// all-gather and all-to-all on copy engines (CTA policy zero, buffers in symmetric windows); a
// reduction needs arithmetic, which copy engines cannot do. So:
//
//   reduce-scatter = ncclAlltoAll (copy engines: rank r receives every rank's chunk r into
//                    `scratch`) + a sum over the nranks chunks (one short memory-bound kernel)
//   all-reduce     = that reduce-scatter into this rank's chunk of `recv`, then an in-place
//                    ncclAllGather (copy engines) of the chunks
//
// The SMs only run the sum (one read of nranks chunks, one write), instead of NCCL's ring kernels
// for the whole transfer. `send`, `recv` and `scratch` must lie in symmetric windows registered on
// `comm`; every step is enqueued on `stream` in order, so the scratch can be reused by the next
// call on the same stream. Sums accumulate in fp32 and round once.
//
// The communicators are non-blocking: an NCCL call may return before its work is on the stream, so
// each is awaited (RankContext::await_communicator) before the sum kernel is launched behind it or
// the next NCCL call is made - otherwise the sum could run before the all-to-all's data is there.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/dtype.h"
#include "harness/rank_context.h"

namespace tandem::bench {

// Why an all-reduce of `count` elements cannot take the copy-engine route on `nranks` ranks (its
// chunks must be equal), or "" when it can.
std::string copy_engine_all_reduce_refusal(uint64_t count, int nranks);

// `recv_count` elements per rank; `send` holds nranks x recv_count; `scratch` as many.
void enqueue_copy_engine_reduce_scatter(RankContext& ctx, ncclComm_t comm, const void* send, void* recv,
                                        void* scratch, size_t recv_count, DType dtype, cudaStream_t stream);
// `count` elements, divisible by the rank count; `scratch` holds `count`; `send` may equal `recv`.
void enqueue_copy_engine_all_reduce(RankContext& ctx, ncclComm_t comm, const void* send, void* recv, void* scratch,
                                    size_t count, DType dtype, cudaStream_t stream);

}  // namespace tandem::bench
