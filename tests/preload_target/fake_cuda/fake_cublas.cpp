// The fake libcublas.so.13 and libcublasLt.so.13 (see fake_cuda.h): handles and matmul descriptors
// that remember their SM-count target. FAKE_CUBLAS_LT selects which library this file builds.
#include <cublasLt.h>
#include <cublas_api.h>

#include <cstring>

namespace {
struct FakeHandle {
  int sm_target = 0;
};
struct FakeDesc {
  int32_t sm_target = 0;
};
}  // namespace

extern "C" {

#ifndef FAKE_CUBLAS_LT
cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  *handle = reinterpret_cast<cublasHandle_t>(new FakeHandle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete reinterpret_cast<FakeHandle*>(handle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int target) {
  reinterpret_cast<FakeHandle*>(handle)->sm_target = target;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t) {
  return handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
cublasStatus_t cublasGetSmCountTarget(cublasHandle_t handle, int* target) {
  *target = reinterpret_cast<FakeHandle*>(handle)->sm_target;
  return CUBLAS_STATUS_SUCCESS;
}
#else
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t, cudaDataType_t) {
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(new FakeDesc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete reinterpret_cast<FakeDesc*>(desc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
                                              const void* buffer, size_t size) {
  if (attribute != CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET || size != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&reinterpret_cast<FakeDesc*>(desc)->sm_target, buffer, size);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
                                              void* buffer, size_t size, size_t* written) {
  if (attribute != CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET || size != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(buffer, &reinterpret_cast<FakeDesc*>(desc)->sm_target, size);
  if (written) *written = size;
  return CUBLAS_STATUS_SUCCESS;
}
#endif

}  // extern "C"
