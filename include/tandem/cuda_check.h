#pragma once
// Checks for every CUDA runtime, driver, NCCL and cuBLAS return. A failure throws tandem::Error with
// the call's text, the library's own message and the file:line of the call.
#include <cublasLt.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "tandem/error.h"

namespace tandem::detail {
[[noreturn]] void throw_cuda(cudaError_t, const char* expr, const char* file, int line);
[[noreturn]] void throw_cu(CUresult, const char* expr, const char* file, int line);
[[noreturn]] void throw_nccl(ncclResult_t, ncclComm_t comm, const char* expr, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t, const char* expr, const char* file, int line);
}  // namespace tandem::detail

#define TANDEM_CUDA_CHECK(expr)                                                                           \
  do {                                                                                                    \
    cudaError_t tandem_err_ = (expr);                                                                     \
    if (tandem_err_ != cudaSuccess) ::tandem::detail::throw_cuda(tandem_err_, #expr, __FILE__, __LINE__); \
  } while (0)
// For launches: picks up launch-configuration errors that the <<<>>> syntax does not return.
#define TANDEM_CUDA_CHECK_LAUNCH() TANDEM_CUDA_CHECK(cudaGetLastError())
#define TANDEM_CU_CHECK(expr)                                                                            \
  do {                                                                                                   \
    CUresult tandem_err_ = (expr);                                                                       \
    if (tandem_err_ != CUDA_SUCCESS) ::tandem::detail::throw_cu(tandem_err_, #expr, __FILE__, __LINE__); \
  } while (0)
// `comm` may be nullptr; when given, ncclGetLastError(comm) adds NCCL's own explanation.
#define TANDEM_NCCL_CHECK(comm, expr)                                               \
  do {                                                                              \
    ncclResult_t tandem_err_ = (expr);                                              \
    if (tandem_err_ != ncclSuccess && tandem_err_ != ncclInProgress)                \
      ::tandem::detail::throw_nccl(tandem_err_, (comm), #expr, __FILE__, __LINE__); \
  } while (0)
#define TANDEM_CUBLAS_CHECK(expr)                                                                                     \
  do {                                                                                                                \
    cublasStatus_t tandem_err_ = (expr);                                                                              \
    if (tandem_err_ != CUBLAS_STATUS_SUCCESS) ::tandem::detail::throw_cublas(tandem_err_, #expr, __FILE__, __LINE__); \
  } while (0)
