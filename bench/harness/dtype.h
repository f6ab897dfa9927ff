#pragma once
// Element types the bench runs with, and their names in CUDA, cuBLASLt and NCCL.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <library_types.h>
#include <nccl.h>

#include <cstddef>
#include <string>

namespace tandem::bench {

enum class DType { BF16, FP16, FP32 };

DType parse_dtype(const std::string& text);  // bf16 | fp16 | fp32; throws listing accepted names
const char* to_string(DType);
size_t dtype_size(DType);
ncclDataType_t to_nccl(DType);
cudaDataType_t to_cuda(DType);

// Calls f(T{}) with T the C++ type of `dtype`, so kernels are instantiated once per type.
template <class F>
decltype(auto) dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::BF16: return f(__nv_bfloat16{});
    case DType::FP16: return f(__half{});
    case DType::FP32: break;
  }
  return f(float{});
}

}  // namespace tandem::bench
