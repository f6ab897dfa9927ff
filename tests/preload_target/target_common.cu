// Checksums shared by the GPU programs of this directory (target_common.h).
#include <cstdio>
#include <vector>

#include "tandem/cuda_check.h"
#include "target_common.h"

namespace preload_target {

std::string checksum(const void* data, size_t bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

std::string device_checksum(const uint32_t* device, size_t n, cudaStream_t stream) {
  TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<uint32_t> host(n);
  TANDEM_CUDA_CHECK(cudaMemcpy(host.data(), device, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  return checksum(host.data(), n * sizeof(uint32_t));
}

}  // namespace preload_target
