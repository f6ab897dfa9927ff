#pragma once
// Named NVTX ranges, so that a `tandem bench` or `tandem tune` run opened in Nsight Systems
// (`nsys profile -t cuda,nvtx ...`) shows which case, policy and phase each kernel belongs to.
//
// NVTX3 is header-only (the CUDA toolkit's include/nvtx3): nothing to link. Without a profiler
// attached each call is a check of a function pointer; the first one looks for the tool's
// injection library in the environment (NVTX_INJECTION64_PATH), which only a profiler sets.
// Ranges are per thread, as NVTX's push/pop stacks are: each rank's thread has its own.
#include <nvtx3/nvToolsExt.h>

#include <string>

namespace tandem {

// A range from construction to destruction, on the calling thread.
class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }  // the tool copies the name
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

  // Ends this range and opens `name` in its place: consecutive phases (a search's stages) without
  // a block for each.
  void next(const std::string& name) {
    nvtxRangePop();
    nvtxRangePushA(name.c_str());
  }
};

}  // namespace tandem
