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
//
// NCCL's all-to-all copies this rank's own chunk first, with an SM kernel (a copy within one GPU is
// always one), in the same batch as the copies to the peers: beside a kernel that holds every SM
// the whole collective waits for it. With lanes (RankContext::copy_engine_lanes) the chunks move by
// an exchange instead, one ncclGather per root on a communicator of its own, in place at the root:
// no SM work at all, and the sum reads this rank's own chunk straight from `send`.
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

// Every rank sends chunk r of its input to rank r, which receives rank j's into chunk j of `recv`:
// one ncclGather per root r on lane r (lane 0 on `stream`, the others on side streams of the same
// priority, forked from `stream` and joined back into it), all at once, on copy engines. Chunk r of
// the input for root r starts at `send + r x send_stride` elements (`count` for an all-to-all, 0 for
// an all-gather). `own_chunk_copied`: the root's own chunk is copied into chunk `rank` of `recv` (a
// local copy, an SM kernel in the root's own gather, which no peer's copy waits for); otherwise the
// root's gather is in place and that chunk of `recv` is left as it was. `send` and `recv` must lie
// in symmetric windows registered on every lane.
void enqueue_copy_engine_exchange(RankContext& ctx, const CopyEngineLanes& lanes, const void* send,
                                  size_t send_stride, void* recv, size_t count, DType dtype, bool own_chunk_copied,
                                  cudaStream_t stream);

// `recv_count` elements per rank; `send` holds nranks x recv_count; `scratch` as many. On one
// communicator (NCCL's all-to-all) or on lanes (the exchange).
void enqueue_copy_engine_reduce_scatter(RankContext& ctx, ncclComm_t comm, const void* send, void* recv,
                                        void* scratch, size_t recv_count, DType dtype, cudaStream_t stream);
void enqueue_copy_engine_reduce_scatter(RankContext& ctx, const CopyEngineLanes& lanes, const void* send, void* recv,
                                        void* scratch, size_t recv_count, DType dtype, cudaStream_t stream);
// `count` elements, divisible by the rank count; `scratch` holds `count`; `send` may equal `recv`.
void enqueue_copy_engine_all_reduce(RankContext& ctx, ncclComm_t comm, const void* send, void* recv, void* scratch,
                                    size_t count, DType dtype, cudaStream_t stream);
void enqueue_copy_engine_all_reduce(RankContext& ctx, const CopyEngineLanes& lanes, const void* send, void* recv,
                                    void* scratch, size_t count, DType dtype, cudaStream_t stream);

}  // namespace tandem::bench
