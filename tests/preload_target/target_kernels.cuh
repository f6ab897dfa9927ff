#pragma once
// Kernels of the preload target: deterministic integer output, whatever the grid, the residency or
// the order blocks run in, so that a checksum taken with and without `tandem run` must match.
#include <cstddef>
#include <cstdint>

namespace preload_target {

__host__ __device__ inline uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// out[i] = mix(i + seed * golden), grid-stride. Never reads its dynamic shared memory size.
__device__ inline void fill_body(uint32_t* out, size_t n, uint32_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * gridDim.y * blockDim.x;
  const size_t block = static_cast<size_t>(blockIdx.y) * gridDim.x + blockIdx.x;
  for (size_t i = block * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = mix(static_cast<uint32_t>(i) + seed * 0x9E3779B9U);
}

}  // namespace preload_target
