#pragma once
// Shared between the translation units of the preload target.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace preload_target {

inline constexpr size_t kElements = size_t{1} << 20;
inline constexpr int kFillThreads = 256;

// FNV-1a over the bytes, as 16 hex digits (JSON numbers would lose bits above 2^53).
std::string checksum(const void* data, size_t bytes);
// Copies `n` words from the device (synchronising `stream` first) and checksums them.
std::string device_checksum(const uint32_t* device, size_t n, cudaStream_t stream);

// The per-thread-default-stream part (preload_target_ptsz.cu, compiled with
// --default-stream per-thread): a <<<>>> launch and a driver cuLaunchKernel_ptsz launch, both on
// stream 0, which there means the calling thread's stream.
struct PtszChecksums {
  std::string runtime;
  std::string driver;
};
PtszChecksums run_per_thread_stream_launches(uint32_t* buffer, int grid);

}  // namespace preload_target
