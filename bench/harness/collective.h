#pragma once
// A collective under test. Sizes follow nccl-tests: `bytes` is the all-reduce buffer, the
// all-gather output, the reduce-scatter input and the all-to-all buffer. Adding a collective is one
// file in collectives/ and one line in registry.cpp.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>

#include "harness/rank_context.h"
#include "tandem/dtype.h"

namespace tandem::bench {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual const char* name() const = 0;
  // busbw = algbw * factor (nccl-tests): 2(n-1)/n for all-reduce, (n-1)/n for the others.
  virtual double busbw_factor(int nranks) const = 0;
  // Pieces `bytes` is split into across ranks (1 for all-reduce, the rank count for the others).
  virtual int shards(int nranks) const = 0;
  // Throws a clear error when `bytes` cannot be split evenly across the ranks. `in_place` lays the
  // buffers out as NCCL's in-place form (docs/WORKLOADS.md, --in-place): the input is the output
  // (all-reduce), the output's own chunk (all-gather) or holds the output as its own chunk
  // (reduce-scatter); all-to-all has no in-place form and refuses it.
  virtual void setup(RankContext& ctx, size_t bytes, DType dtype, uint64_t seed, bool in_place) = 0;
  virtual void enqueue(ncclComm_t comm, cudaStream_t stream) = 0;
  virtual void poison_output(cudaStream_t stream) = 0;
  // Moves the collective's data with copy engines (the `copy-engine` policy) on `lanes` from now on,
  // or stops (nullptr). The chunks between ranks move by the exchange of
  // tandem/copy_engine.h (one in-place ncclGather per root, each on its lane), so that no
  // copy waits for SMs: all-to-all and an out-of-place all-gather copy their own chunk locally on the
  // side; reduce-scatter and all-reduce add a sum kernel (and an in-place all-gather). An in-place
  // all-gather stays NCCL's, which copies nothing locally. Returns why the collective cannot, or "".
  // Call before use_symmetric_windows() (the route may need a scratch buffer registered with the
  // others), and register the windows on every lane.
  virtual std::string route_through_copy_engines(const CopyEngineLanes* lanes) = 0;
  // Registers the buffers as symmetric windows on `comm` (once per communicator). All ranks call it
  // together. Windows are released by release_windows() before the buffers are freed.
  virtual void use_symmetric_windows(RankContext& ctx, ncclComm_t comm) = 0;
  virtual void release_windows(RankContext& ctx) = 0;
  // Exact comparison with the expected values; returns the number of wrong elements (synchronises).
  virtual int64_t count_wrong(RankContext& ctx) = 0;
  // Fewest bytes this rank's device memory moves: its input read and its output written.
  virtual double hbm_bytes() const = 0;
  virtual size_t bytes() const = 0;
};

// Throws a one-line error naming the collective, the size, the rank count and the dtype when
// `bytes` cannot be split evenly into whole elements for every rank.
void check_divisible(const Collective& collective, uint64_t bytes, DType dtype, int nranks);

using CollectiveFactory = std::unique_ptr<Collective> (*)();

}  // namespace tandem::bench
