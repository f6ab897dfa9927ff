#pragma once
// One case of `tandem bench` and `tandem tune`: a program (harness/program.h) with the buffers its
// collectives use and the reference its outputs are checked against. A microbenchmark
// (harness/microbenchmark.h) is `count` units of a compute workload and one collective with no
// dependency between them; a training scenario (harness/scenario.h) is one iteration of a
// framework. The runner (harness/case_trials.h) measures every case the same way.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/window_memory.h"
#include "harness/program.h"
#include "harness/rank_context.h"
#include "tandem/shaped_kernel.h"

namespace tandem::bench {

class Case {
 public:
  virtual ~Case() = default;
  // The row's workload: the compute workload, or the scenario.
  virtual std::string workload() const = 0;
  // The case as progress lines, NVTX ranges and traces name it: "gemm all-reduce 256MiB",
  // "dp-backward".
  virtual std::string label() const = 0;
  // Allocates, fills inputs with random values, builds the program and computes the reference, on
  // the rank's device. Every rank calls it.
  virtual void setup(RankContext& ctx) = 0;
  // Valid after setup(); a new program after set_compute_count().
  virtual const Program& program() const = 0;
  // The row's `count`: compute units per step, layers, or micro-batches.
  virtual int count() const = 0;
  // Rebuilds the program with `count` compute units (a microbenchmark, balanced against its
  // collective); false for a case whose program is fixed (a scenario's model decides it).
  virtual bool set_compute_count(int count) {
    (void)count;
    return false;
  }
  // Rebuilds the collective at `bytes` and the program with it (a microbenchmark, --balance-size);
  // false for a case whose collectives are fixed. No windows may be registered.
  virtual bool set_collective_bytes(RankContext& ctx, uint64_t bytes) {
    (void)ctx, (void)bytes;
    return false;
  }
  // How the program's collectives are issued on a communicator without windows.
  virtual CollectiveIssue default_issue() const { return {}; }
  // The memory the collectives' buffers live in, where a policy's windows are registered.
  virtual WindowMemory& window_memory() = 0;

  // The kernels shaping policies act on (tandem's own; a library's closed kernels cannot be
  // shaped), and why there are none when there are none.
  virtual std::vector<ShapedKernel*> shaped_kernels() = 0;
  virtual std::string not_shapeable_reason() const = 0;
  // Asks the cuBLASLt GEMMs to use at most `sm_count` SMs (0: no cap); false when there is none.
  virtual bool set_sm_count_target(int sm_count) = 0;
  // Overwrites every checked output with NaN (and restores any input an in-place output shares).
  virtual void poison_outputs(cudaStream_t stream) = 0;
  // Compares the outputs with the reference; returns the number of wrong elements (synchronises).
  virtual int64_t count_wrong(RankContext& ctx) = 0;
  // Something the results' reader should know about this setup; empty when nothing.
  virtual std::string setup_note() const { return {}; }
};

}  // namespace tandem::bench
