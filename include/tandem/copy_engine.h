#pragma once
// Collectives whose data copy engines move, for the `copy-engine` policy, on the caller's buffers
// and streams. NCCL 2.28 runs only all-gather and all-to-all on copy engines (CTA policy zero,
// buffers in symmetric windows), and a reduction needs arithmetic, which copy engines cannot do.
// Worse, a copy within one GPU is always an SM kernel, and NCCL's copy-engine all-to-all and
// out-of-place all-gather put this rank's own chunk's local copy first in the batch that holds the
// copies to the peers: beside a kernel that holds every SM, the whole collective waits for it
// (tests/tools/copy_path_probe.cu). So (the steps of each are tandem/copy_engine_plan.h's):
//
//   exchange       = one ncclGather per root, each on a communicator of its own (a lane,
//                    CopyEngineLanes) and a side stream, all at once; at the root its own chunk
//                    stays in place or is copied in its own gather, which no peer's copy waits for
//   reduce-scatter = the exchange into `scratch` (rank r receives every rank's chunk r) + a sum
//                    over the nranks chunks, its own read straight from `send` (one short
//                    memory-bound kernel: the only SM work)
//   all-reduce     = that reduce-scatter into this rank's chunk of `recv`, then NCCL's in-place
//                    copy-engine all-gather on lane 0 (no local copy)
//   all-gather     = the exchange with the own chunk copied; in place, NCCL's all-gather on lane 0,
//                    which copies nothing locally
//   all-to-all     = the exchange with the own chunk copied
//
// `send`, `recv` and `scratch` must lie in symmetric windows (NCCL_WIN_COLL_SYMMETRIC,
// tandem/symmetric_windows.h) registered on every lane's communicator, lane 0 included; buffers
// from ncclMemAlloc can be. Every step ends up ordered on `stream` (the side streams are forked
// from it and joined back), so the scratch can be reused by the next call on the same stream. Sums
// accumulate in fp32 and round once (SumScale below says how they compare with NCCL's).
//
// The lanes are non-blocking communicators: an NCCL call may return before its work is on the
// stream, so each is awaited (tandem/nccl_wait.h, with the lanes' WaitRules) before the join, the
// sum kernel or the next NCCL call is enqueued behind it - otherwise the sum could run before the
// data is there. Each function returns once all its work is on `stream`.
//
// NCCL: tandem links libnccl by its SONAME (libnccl.so.2) and calls it directly, so in a process
// that has already loaded NCCL (PyTorch's wheel) these calls go to that copy, the one that owns
// the caller's communicators.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tandem/collective.h"
#include "tandem/copy_engine_call.h"
#include "tandem/copy_engine_plan.h"
#include "tandem/dtype.h"
#include "tandem/nccl_wait.h"
#include "tandem/streams.h"

namespace tandem {

// A policy's communicator once per rank, so that one collective per lane can run at once: lane 0 is
// the caller's communicator (not owned); lanes 1..nranks-1 are split from it (ncclCommSplit, with
// `config`, blocking forced to 0) and owned. Plus a side stream per further lane at the greatest
// and at the least stream priority, with the events that fork them from the caller's stream and
// join them back. Construction is collective over lane 0: every rank constructs its lanes at the
// same point, each from the thread that drives its rank.
class CopyEngineLanes {
 public:
  CopyEngineLanes(ncclComm_t lane0, const ncclConfig_t& config, WaitRules rules);
  // Closes the owned lanes (close_communicator): healthy unless destroyed during unwinding or
  // after abort().
  ~CopyEngineLanes();
  CopyEngineLanes(const CopyEngineLanes&) = delete;
  CopyEngineLanes& operator=(const CopyEngineLanes&) = delete;

  // Every lane's communicator, lane 0 first: register the windows on each.
  const std::vector<ncclComm_t>& comms() const { return comms_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const WaitRules& rules() const { return rules_; }

  // Aborts the owned lanes now (after a failure: the peers' kernels exit); the lanes are unusable.
  void abort() noexcept;
  // Closes the owned lanes (close_communicator); idempotent.
  void close(bool healthy) noexcept;

 private:
  // Runs body(k, s) for every k < count (<= nranks): k = 0 on `stream`, each other k on a side stream
  // at `stream`'s priority, forked from `stream` where it is and joined back into it after body.
  friend void on_side_streams(const CopyEngineLanes&, cudaStream_t stream, int count,
                              const std::function<void(int, cudaStream_t)>& body);
  void release_events() noexcept;
  std::vector<ncclComm_t> comms_;
  int rank_ = 0;
  int nranks_ = 0;
  WaitRules rules_;
  bool usable_ = true;
  std::vector<PriorityStream> high_, low_;  // lanes 1.., at the greatest and the least priority
  cudaEvent_t fork_ = nullptr;
  std::vector<cudaEvent_t> joins_;  // lanes 1..
};

// How the sum of a reduction scales each term: by the scalar of an average (1/nranks rounded to the
// element type, as NCCL stores it) or of a pre-multiplied sum, or by a divisor (PyTorch DDP's
// division by the world size). Numerics: each element converted to fp32, multiplied (divided) by the
// scalar and rounded to fp32, the terms added in rank order in fp32, the sum rounded once to the
// element type. NCCL computes a term in fp32 too, but rounds every partial sum of its ring, and a
// term it sends to a peer, to the element type, which rank's term that is depending on where the
// element lies: the two agree bitwise for sums and averages of 2 ranks, and wherever the products
// are exact (power-of-two scalars, fp32 sums of 2); elsewhere tandem's result is within NCCL's own
// rounding of it (one rounding to the element type per rank). The scalar is the receiving rank's:
// ranks must hold the same one (as PyTorch and NCCL's average make it).
struct SumScale {
  enum class Kind : uint8_t { None, Multiply, Divide };
  Kind kind = Kind::None;
  float value = 1;                     // already a value of the element type (rounded to it)
  const void* device_value = nullptr;  // Multiply: the scalar in device memory, of the element type,
                                       // read when the sum runs (NCCL's ncclScalarDevice)
};

// The buffers a plan's PlanBuffer names: the caller's send and receive buffers and the pool parts
// (null where the plan uses none). Every buffer an Exchange or an AllGather step touches must lie in
// symmetric windows registered on every lane's communicator.
struct PlanBuffers {
  const void* send = nullptr;
  void* recv = nullptr;
  void* pool_input = nullptr;
  void* pool_output = nullptr;
  void* pool_scratch = nullptr;
  // Push and Pull: the pool (registered on lane 0), where each rank's pool starts in this process
  // (tandem/peer_windows.h; by rank; the route's, not copied per call), and the pool part the
  // barriers' all-gathers use.
  const char* pool = nullptr;
  const std::vector<char*>* peer_pools = nullptr;
  void* barrier = nullptr;
};

// Enqueues the plan's steps on `stream` (the Exchange's gathers on the lanes' side streams, forked
// from `stream` and joined back). `type`: the NCCL data type of the call (the sum kernel and the
// scale need bf16, fp16 or fp32; the other steps move any type). Returns once everything is on
// `stream`.
void execute_copy_engine_plan(const CopyEngineLanes& lanes, const CopyEnginePlan& plan, const PlanBuffers& buffers,
                              ncclDataType_t type, const SumScale& scale, cudaStream_t stream);

// The collectives on buffers that already lie in symmetric windows (the benchmark, a program that
// registers its own buffers): no staging, no pool. Why `call` (its buffers, count, type and
// reduction; rank `rank` of `nranks`) cannot run that way, or "": first the route's own rule
// (tandem/copy_engine_eligibility.h, decide_route: one rule for both, so they cannot disagree; a
// communicator of one rank, which the route leaves to NCCL, runs here all the same), then what the
// windowed form lacks: a scale (its reductions are plain sums) and staging (an all-reduce or a
// broadcast that does not split into `nranks` equal chunks: only the staged route pads).
std::string copy_engine_refusal(const CopyEngineCall& call, int nranks, int rank = 0);
// Bytes of the scratch buffer such a call needs (its plan's): all-reduce `count` elements,
// reduce-scatter `nranks x count`, the others none; 0 for a call refused.
size_t copy_engine_scratch_bytes(const CopyEngineCall& call, int nranks);
// Enqueues `call` (one that copy_engine_refusal accepts: it throws tandem::Error otherwise) on
// `call.stream`; `scratch` holds copy_engine_scratch_bytes (registered like the buffers).
void copy_engine_collective(const CopyEngineLanes& lanes, const CopyEngineCall& call, void* scratch);

// Every rank sends chunk r of its input to rank r, which receives rank j's into chunk j of `recv`:
// one ncclGather per root r on lane r (lane 0 on `stream`, the others on side streams of the same
// priority, forked from `stream` and joined back into it), all at once, on copy engines. Chunk r of
// the input for root r starts at `send + r x send_stride` elements (`count` for an all-to-all, 0 for
// an all-gather). `own_chunk_copied`: the root's own chunk is copied into chunk `rank` of `recv` (a
// local copy, an SM kernel in the root's own gather, which no peer's copy waits for); otherwise the
// root's gather is in place and that chunk of `recv` is left as it was.
void copy_engine_exchange(const CopyEngineLanes& lanes, const void* send, size_t send_stride, void* recv, size_t count,
                          ncclDataType_t type, bool own_chunk_copied, cudaStream_t stream);

// `recv_count` elements per rank; `send` holds nranks x recv_count; `scratch` as many. The exchange,
// then the sum.
void copy_engine_reduce_scatter(const CopyEngineLanes& lanes, const void* send, void* recv, void* scratch,
                                size_t recv_count, DType dtype, cudaStream_t stream);
// `count` elements, divisible by the rank count; `scratch` holds `count`; `send` may equal `recv`.
void copy_engine_all_reduce(const CopyEngineLanes& lanes, const void* send, void* recv, void* scratch, size_t count,
                            DType dtype, cudaStream_t stream);
// `send_count` elements per rank; `recv` holds nranks x send_count. In place when `send` is this
// rank's chunk of `recv`.
void copy_engine_all_gather(const CopyEngineLanes& lanes, const void* send, void* recv, size_t send_count, DType dtype,
                            cudaStream_t stream);
// `count` elements to and from each peer: `send` and `recv` hold nranks x count; not in place.
void copy_engine_all_to_all(const CopyEngineLanes& lanes, const void* send, void* recv, size_t count, DType dtype,
                            cudaStream_t stream);

}  // namespace tandem
