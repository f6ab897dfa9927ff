#pragma once
// A microbenchmark's collective: its buffers, inputs whose every element can be recomputed where
// it is checked, and the exact check of its output. Sizes follow nccl-tests: `bytes` is the
// all-reduce buffer, the all-gather output, the reduce-scatter input and the all-to-all buffer.
#include <cuda_runtime.h>

#include <cstdint>

#include "collectives/collective_call.h"
#include "collectives/window_memory.h"
#include "harness/rank_context.h"
#include "tandem/collective.h"
#include "tandem/dtype.h"

namespace tandem::bench {

// Throws a one-line error naming the collective, the size, the rank count and the dtype when
// `bytes` cannot be split evenly into whole elements for every rank.
void check_divisible(Collective kind, uint64_t bytes, DType dtype, int nranks);

class CheckedCollective {
 public:
  CheckedCollective() = default;
  ~CheckedCollective();
  CheckedCollective(const CheckedCollective&) = delete;
  CheckedCollective& operator=(const CheckedCollective&) = delete;

  // Allocates the buffers (ncclMemAlloc, in window_memory()) and fills this rank's input: rank r's
  // element i is small_integer(seed, r, i). `in_place` lays the buffers out as NCCL's in-place
  // forms (docs/WORKLOADS.md, --in-place): the input is the output (all-reduce), the output's own
  // chunk (all-gather) or holds the output as its own chunk (reduce-scatter); all-to-all has none.
  void setup(RankContext& ctx, Collective kind, uint64_t bytes, DType dtype, uint64_t seed, bool in_place);
  const CollectiveCall& call() const { return call_; }
  WindowMemory& window_memory() { return memory_; }
  // NaN over the output; in place, the input it shares is filled again.
  void poison_output(cudaStream_t stream);
  // Exact comparison with the expected values; the number of wrong elements (synchronises).
  int64_t count_wrong(RankContext& ctx);

 private:
  void fill_input(cudaStream_t stream);

  CollectiveCall call_;
  uint64_t seed_ = 0;
  int rank_ = 0, nranks_ = 1;
  bool in_place_ = false;
  WindowMemory memory_;
  unsigned long long* wrong_ = nullptr;
};

}  // namespace tandem::bench
