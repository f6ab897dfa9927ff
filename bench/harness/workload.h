#pragma once
// A compute workload: the operation a microbenchmark (harness/microbenchmark.h) repeats `count`
// times beside its collective, one kernel (or one library call) each. Adding a workload is one file
// in workloads/ and one line in registry.cpp.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "harness/rank_context.h"
#include "tandem/dtype.h"
#include "tandem/shaped_kernel.h"

namespace tandem::bench {

struct WorkloadOptions {
  DType dtype = DType::BF16;
  int64_t m = 0, n = 0, k = 0;  // GEMM shape; 0 = the workload's default
  int64_t stream_bytes = 0;     // per array for `stream`; 0 = default
  uint64_t seed = 0x7a4d3e;
};

class Workload {
 public:
  virtual ~Workload() = default;
  // One line for the output header, e.g. "gemm bf16 m=8192 n=8192 k=4096 (cuBLASLt)".
  virtual std::string describe() const = 0;
  // Allocates, fills inputs with random values and computes the reference, on the rank's device.
  virtual void setup(RankContext& ctx) = 0;
  // Enqueues one unit on `stream`.
  virtual void enqueue(cudaStream_t stream) = 0;
  // The kernel whose launches can be shaped, or nullptr when the work is a library's closed kernel.
  virtual ShapedKernel* shaped_kernel() { return nullptr; }
  // Why shaped_kernel() is nullptr, for messages.
  virtual std::string not_shapeable_reason() const { return "the workload's kernels belong to a library"; }
  // Asks the workload's library to use at most `sm_count` SMs (0: no cap). Returns false when the
  // workload has no such control (only cuBLASLt GEMMs do).
  virtual bool set_sm_count_target(int /*sm_count*/) { return false; }
  // Overwrites the output with NaN so the next check proves the kernels wrote it.
  virtual void poison_output(cudaStream_t stream) = 0;
  // Compares the output with the reference; returns the number of wrong elements (synchronises).
  virtual int64_t count_wrong(RankContext& ctx) = 0;
  // Fewest device-memory bytes one unit moves (each input read once, each output written once).
  virtual double hbm_bytes() const = 0;
};

using WorkloadFactory = std::unique_ptr<Workload> (*)(const WorkloadOptions&);

}  // namespace tandem::bench
