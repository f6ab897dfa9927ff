#pragma once
// Priority streams. A stream's priority never pre-empts running blocks; it decides which pending
// block the hardware dispatches when an SM frees resources. Communication gets the greatest
// priority so its CTAs are placed first; compute gets the least.
#include "tandem/gpu_runtime.h"

namespace tandem {

struct StreamPriorityRange {
  int least = 0;     // numerically largest (0 on NVIDIA GPUs)
  int greatest = 0;  // numerically smallest (-5 on H200)
};
// Range of the current device.
StreamPriorityRange stream_priority_range();

// Owns one non-blocking stream of a given priority on the current device.
class PriorityStream {
 public:
  explicit PriorityStream(int priority);
  ~PriorityStream();
  PriorityStream(const PriorityStream&) = delete;
  PriorityStream& operator=(const PriorityStream&) = delete;
  PriorityStream(PriorityStream&& o) noexcept;
  PriorityStream& operator=(PriorityStream&& o) noexcept;
  cudaStream_t get() const { return stream_; }
  int priority() const { return priority_; }
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
  int priority_ = 0;
};

PriorityStream make_comm_stream();     // greatest priority
PriorityStream make_compute_stream();  // least priority

}  // namespace tandem
