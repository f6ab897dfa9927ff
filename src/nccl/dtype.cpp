#include "tandem/dtype.h"

#include "tandem/enum_table.h"
#include "tandem/error.h"

namespace tandem {

namespace {

// Each DType's names and size, in the enum's order.
struct DTypeFacts {
  DType dtype;
  const char* name;   // tandem's
  const char* alias;  // also accepted by parse_dtype
  size_t bytes;
  ncclDataType_t nccl;
  cudaDataType_t cuda;
};
constexpr DTypeFacts kDTypes[] = {
    {DType::BF16, "bf16", "bfloat16", 2, ncclBfloat16, CUDA_R_16BF},
    {DType::FP16, "fp16", "half", 2, ncclFloat16, CUDA_R_16F},
    {DType::FP32, "fp32", "float", 4, ncclFloat32, CUDA_R_32F},
};
static_assert(covers(kDTypes, DType::FP32), "one entry per DType");

}  // namespace

DType parse_dtype(const std::string& text) {
  for (const DTypeFacts& f : kDTypes)
    if (text == f.name || text == f.alias) return f.dtype;
  TANDEM_THROW("unknown dtype '" + text + "'; accepted: bf16, fp16, fp32");
}

const char* to_string(DType d) { return table_entry(kDTypes, d).name; }

size_t dtype_size(DType d) { return table_entry(kDTypes, d).bytes; }

ncclDataType_t to_nccl(DType d) { return table_entry(kDTypes, d).nccl; }

std::optional<DType> from_nccl(ncclDataType_t t) {
  for (const DTypeFacts& f : kDTypes)
    if (f.nccl == t) return f.dtype;
  return std::nullopt;
}

cudaDataType_t to_cuda(DType d) { return table_entry(kDTypes, d).cuda; }

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
