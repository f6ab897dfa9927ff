#pragma once
// Conversions between float and the element types of tandem::DType, on the host and the device (for
// CUDA sources: kernels accumulate in fp32 and round once).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace tandem {

template <class T>
__host__ __device__ inline T from_float(float v);
template <>
__host__ __device__ inline float from_float<float>(float v) {
  return v;
}
template <>
__host__ __device__ inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__host__ __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__host__ __device__ inline float to_float(float v) { return v; }
__host__ __device__ inline float to_float(__half v) { return __half2float(v); }
__host__ __device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

}  // namespace tandem
