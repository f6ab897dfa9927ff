#pragma once
// The element types tandem's collectives and kernels run on, and their names in CUDA, cuBLASLt and
// NCCL.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <library_types.h>
#include <nccl.h>

#include <cstddef>
#include <optional>
#include <string>

namespace tandem {

enum class DType { BF16, FP16, FP32 };

// bf16 | bfloat16, fp16 | half, fp32 | float; throws tandem::Error naming the text and listing the
// accepted names.
DType parse_dtype(const std::string& text);
const char* to_string(DType);
size_t dtype_size(DType);
ncclDataType_t to_nccl(DType);
// The DType of an NCCL data type; nullopt for the types tandem has no kernels for (integers, fp8,
// fp64).
std::optional<DType> from_nccl(ncclDataType_t);
cudaDataType_t to_cuda(DType);
// The size of one element of any NCCL data type, or 0 for a value this header does not name.
size_t nccl_type_bytes(ncclDataType_t);

// Calls f(T{}) with T the C++ type of `dtype`, so kernels are instantiated once per type.
template <class F>
decltype(auto) dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::BF16:
      return f(__nv_bfloat16{});
    case DType::FP16:
      return f(__half{});
    case DType::FP32:
      break;
  }
  return f(float{});
}

}  // namespace tandem
