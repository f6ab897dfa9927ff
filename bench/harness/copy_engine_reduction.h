#pragma once
// Collectives whose data copy engines move, for the `copy-engine` policy. NCCL 2.28 runs only
// all-gather and all-to-all on copy engines (CTA policy zero, buffers in symmetric windows), and a
// reduction needs arithmetic, which copy engines cannot do. Worse, a copy within one GPU is always
// an SM kernel, and NCCL's copy-engine all-to-all and out-of-place all-gather put this rank's own
// chunk's local copy first in the batch that holds the copies to the peers: beside a kernel that
// holds every SM, the whole collective waits for it (tests/tools/copy_path_probe.cu). So:
//
//   exchange       = one ncclGather per root, each on a communicator of its own (a lane,
//                    RankContext::copy_engine_lanes) and a side stream, all at once; at the root
//                    its own chunk stays in place or is copied in its own gather, which no peer's
//                    copy waits for
//   reduce-scatter = the exchange into `scratch` (rank r receives every rank's chunk r) + a sum
//                    over the nranks chunks, its own read straight from `send` (one short
//                    memory-bound kernel: the only SM work)
//   all-reduce     = that reduce-scatter into this rank's chunk of `recv`, then NCCL's in-place
//                    copy-engine all-gather on lane 0 (no local copy)
//
// `send`, `recv` and `scratch` must lie in symmetric windows registered on every lane's
// communicator. Every step ends up ordered on `stream` (the side streams are forked from it and
// joined back), so the scratch can be reused by the next call on the same stream. Sums accumulate
// in fp32 and round once.
//
// The communicators are non-blocking: an NCCL call may return before its work is on the stream, so
// each is awaited (RankContext::await_communicator) before the join, the sum kernel or the next
// NCCL call is enqueued behind it - otherwise the sum could run before the data is there.
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

// `recv_count` elements per rank; `send` holds nranks x recv_count; `scratch` as many. The exchange
// on `lanes`, then the sum.
void enqueue_copy_engine_reduce_scatter(RankContext& ctx, const CopyEngineLanes& lanes, const void* send, void* recv,
                                        void* scratch, size_t recv_count, DType dtype, cudaStream_t stream);
// `count` elements, divisible by the rank count; `scratch` holds `count`; `send` may equal `recv`.
void enqueue_copy_engine_all_reduce(RankContext& ctx, const CopyEngineLanes& lanes, const void* send, void* recv,
                                    void* scratch, size_t count, DType dtype, cudaStream_t stream);

}  // namespace tandem::bench
