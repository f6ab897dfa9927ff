#pragma once
// A CUDA green context: a partition of a device's SMs. Work on its streams runs only on those SMs,
// so compute confined to N SMs leaves the rest free for communication, with no change to the
// kernels. SM counts are rounded by the driver to the architecture's partition granularity (a
// multiple of 8 on sm_90).
#include <cuda.h>
#include <cuda_runtime.h>

namespace tandem {

class GreenContext {
 public:
  // A partition of at least `sm_count` SMs of `device`. Throws tandem::Error when the driver cannot
  // make one (older driver, too many SMs asked).
  GreenContext(int device, int sm_count);
  ~GreenContext();
  GreenContext(const GreenContext&) = delete;
  GreenContext& operator=(const GreenContext&) = delete;

  // A non-blocking stream whose work runs on this partition only; owned by the context.
  cudaStream_t stream() const { return stream_; }
  int sm_count() const { return sm_count_; }  // what the driver granted

 private:
  CUgreenCtx context_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int sm_count_ = 0;
};

}  // namespace tandem
