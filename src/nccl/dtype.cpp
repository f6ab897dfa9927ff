#include "tandem/dtype.h"

#include "tandem/error.h"

namespace tandem {

DType parse_dtype(const std::string& text) {
  if (text == "bf16" || text == "bfloat16") return DType::BF16;
  if (text == "fp16" || text == "half") return DType::FP16;
  if (text == "fp32" || text == "float") return DType::FP32;
  TANDEM_THROW("unknown dtype '" + text + "'; accepted: bf16, fp16, fp32");
}

const char* to_string(DType d) {
  switch (d) {
    case DType::BF16:
      return "bf16";
    case DType::FP16:
      return "fp16";
    case DType::FP32:
      return "fp32";
  }
  return "?";
}

size_t dtype_size(DType d) { return d == DType::FP32 ? 4 : 2; }

ncclDataType_t to_nccl(DType d) {
  switch (d) {
    case DType::BF16:
      return ncclBfloat16;
    case DType::FP16:
      return ncclFloat16;
    case DType::FP32:
      break;
  }
  return ncclFloat32;
}

std::optional<DType> from_nccl(ncclDataType_t t) {
  switch (t) {
    case ncclBfloat16:
      return DType::BF16;
    case ncclFloat16:
      return DType::FP16;
    case ncclFloat32:
      return DType::FP32;
    default:
      return std::nullopt;
  }
}

cudaDataType_t to_cuda(DType d) {
  switch (d) {
    case DType::BF16:
      return CUDA_R_16BF;
    case DType::FP16:
      return CUDA_R_16F;
    case DType::FP32:
      break;
  }
  return CUDA_R_32F;
}

size_t nccl_type_bytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

}  // namespace tandem
