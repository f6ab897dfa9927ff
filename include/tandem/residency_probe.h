#pragma once
// Counts the blocks of a kernel actually co-resident on each SM, on the device.
//
// Each block of the probe kernel reads its SM's id (%smid; on AMD its CU's, tandem/gpu_device_functions.h), increments
// that SM's live counter, records the peak, spins long enough for every block the SM can host to arrive, then
// decrements. Launched with more blocks than the GPU can hold at once, the peak over SMs is the residency the hardware
// reached with that launch's configuration (threads, dynamic shared memory, and whatever an interposer changed).
#include <cstdint>
#include <vector>

#include "tandem/gpu_runtime.h"

namespace tandem {

struct ProbeKernelArgs {
  int* live_per_sm;   // [one per SM id] blocks currently on each SM
  int* peak_per_sm;   // [one per SM id] the most seen at once
  long long spin_ns;  // how long each block stays resident
};

// The probe kernel, for launching through any path (runtime, driver API, an interposer). It takes
// one argument of type ProbeKernelArgs by value and ignores its dynamic shared memory.
const void* residency_probe_kernel();

class ResidencyProbe {
 public:
  explicit ResidencyProbe(int device, long long spin_ns = 200000);
  ~ResidencyProbe();
  ResidencyProbe(const ResidencyProbe&) = delete;
  ResidencyProbe& operator=(const ResidencyProbe&) = delete;

  // Zeroes the counters on `stream`; call before each probed launch.
  void reset(cudaStream_t stream);
  ProbeKernelArgs args() const { return {live_, peak_, spin_ns_}; }
  // Launches the probe itself through the runtime with `dynamic_smem` bytes (raising the kernel's
  // limit if needed) and enough blocks to fill every SM several times over.
  void launch(int threads_per_block, size_t dynamic_smem, cudaStream_t stream);
  // Synchronizes `stream` and returns the per-SM peaks (on AMD per CU id, some of them never used).
  std::vector<int> peaks(cudaStream_t stream) const;
  // Synchronizes `stream` and returns the largest per-SM peak: the residency reached.
  int max_blocks_per_sm(cudaStream_t stream) const;
  int sm_count() const { return sm_count_; }
  // A grid large enough that every SM sees at least `blocks_per_sm` waves worth of blocks.
  int grid_for(int blocks_per_sm_upper_bound) const { return sm_count_ * (blocks_per_sm_upper_bound + 2); }

 private:
  int device_;
  int sm_count_ = 0;
  int slot_count_ = 0;  // counters: one per SM id the device can report
  long long spin_ns_;
  int* live_ = nullptr;
  int* peak_ = nullptr;
};

}  // namespace tandem
