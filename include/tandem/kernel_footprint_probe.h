#pragma once
// Finds the real footprint of kernels a library launches (NCCL's channel CTAs), without a profiler
// and without knowing the library's internals: the library's work is captured into a CUDA graph and
// the graph's kernel nodes are read (function, grid, block, dynamic shared memory, cluster), then
// the function's registers and static shared memory are asked of the driver.
#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include "tandem/occupancy.h"

namespace tandem {

struct CapturedLaunch {
  std::string kernel_name;
  dim3 grid;
  KernelFootprint footprint;  // threads, registers, static + dynamic shared memory, cluster size
};

// Captures what `enqueue` puts on `stream` (thread-local capture mode), reads the kernel launches,
// then instantiates and runs the graph once and waits for it, so that libraries that keep state
// across ranks (NCCL) see the operation completed on every rank. Every rank of a communicator must
// call this at the same point.
std::vector<CapturedLaunch> capture_kernel_launches(cudaStream_t stream,
                                                    const std::function<void(cudaStream_t)>& enqueue,
                                                    const std::function<void(cudaStream_t)>& wait_for);

}  // namespace tandem
