#pragma once
// One kernel launch as the hooks receive it, whatever the entry point, and the ways to issue it:
// as it came (possibly with another dynamic shared memory size), or re-issued through
// cuLaunchKernelEx with a priority attribute.
#include <optional>

#include "cuda_driver.h"
#include "hooked_symbols.h"

namespace tandem::preload {

struct Launch {
  Hook entry;  // which hooked entry point was called
  CUfunction f = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_mem_bytes = 0;
  CUstream stream = nullptr;
  void** kernel_params = nullptr;
  void** extra = nullptr;
  const CUlaunchConfig* config = nullptr;  // cuLaunchKernelEx[_ptsz] only
  bool per_thread_stream = false;          // a _ptsz entry point: stream 0 is the per-thread stream
  bool cooperative = false;                // cuLaunchCooperativeKernel or the COOPERATIVE attribute
  int cluster_size = 0;                    // from a CLUSTER_DIMENSION attribute; 0: none given

  int threads_per_block() const { return static_cast<int>(block[0] * block[1] * block[2]); }
  // The stream handle that means the same stream to a legacy-stream driver call (internal event
  // records and capture queries use the legacy entry points).
  CUstream stream_for_driver_calls() const {
    return per_thread_stream && stream == nullptr ? CU_STREAM_PER_THREAD : stream;
  }
};

Launch launch_from_config(Hook entry, const CUlaunchConfig* config, CUfunction f, void** kernel_params, void** extra);

// Issues the launch through its own entry point with `shared_mem_bytes` of dynamic shared memory.
CUresult issue(const Launch&, unsigned shared_mem_bytes);

// Attribute arrays longer than this are not copied (the launch is then issued unelevated).
inline constexpr unsigned kMaxCopiedAttributes = 30;

// Re-issues the launch through cuLaunchKernelEx[_ptsz] with CU_LAUNCH_ATTRIBUTE_PRIORITY = `priority`
// added (or overriding one the launch carries); a cooperative launch keeps its COOPERATIVE attribute.
// nullopt if the launch carries too many attributes to copy (nothing was issued).
std::optional<CUresult> issue_with_priority(const Launch&, unsigned shared_mem_bytes, int priority);

}  // namespace tandem::preload
