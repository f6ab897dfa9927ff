#pragma once
// Deterministic pseudo-random values, generated on the device from (seed, stream, index).
//
// Inputs are random (constant data makes cuBLAS faster than real data, and zeros hide unwritten
// outputs), yet any element's value can be recomputed where it is checked, so results are checked
// on the GPU without copying gigabytes to the host. Collective inputs are small integers, so sums
// over ranks are exact in bf16, fp16 and fp32 and collectives are checked for equality.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "tandem/cuda_check.h"
#include "tandem/dtype.h"
#include "tandem/float_conversion.h"  // to_float, from_float

namespace tandem::bench {

__host__ __device__ inline uint64_t mix64(uint64_t x) {
  // splitmix64 finaliser: consecutive indices give unrelated values.
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__host__ __device__ inline uint64_t value_key(uint64_t seed, uint64_t stream, uint64_t index) {
  return mix64(seed ^ mix64(stream * 0x2545f4914f6cdd1dull ^ index));
}

// An integer in [-8, 8]: a sum over up to 16 ranks stays within bf16's exact integers (|x| <= 256).
__host__ __device__ inline float small_integer(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<float>(static_cast<int>(value_key(seed, stream, index) % 17u) - 8);
}

// Uniform in [-1, 1), for GEMM operands.
__host__ __device__ inline float uniform_pm1(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<float>(value_key(seed, stream, index) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

// Fill kinds used by fill_values().
enum class Fill { SmallIntegers, UniformPm1 };

template <class T>
__global__ void fill_values_kernel(T* out, size_t n, uint64_t seed, uint64_t stream, Fill kind) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float v = kind == Fill::SmallIntegers ? small_integer(seed, stream, i) : uniform_pm1(seed, stream, i);
    out[i] = from_float<T>(v);
  }
}

// Poison: all bits set is NaN in every float type, so an element nothing wrote never compares equal.
template <class T>
__global__ void poison_kernel(T* out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned char* bytes = reinterpret_cast<unsigned char*>(out + i);
    for (size_t b = 0; b < sizeof(T); ++b) bytes[b] = 0xff;
  }
}

inline unsigned grid_for(size_t n, unsigned threads = 256) {
  const size_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks ? blocks : 1) : 65535 * 16);
}

// poison_kernel over `n` elements of `dtype` at `out`.
inline void poison(void* out, DType dtype, size_t n, cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    poison_kernel<T><<<grid_for(n), 256, 0, stream>>>(static_cast<T*>(out), n);
  });
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::bench
