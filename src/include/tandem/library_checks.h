#pragma once
// Checks for the CUDA driver's and cuBLAS's returns, inside tandem's build only: the installed API
// pulls neither cuda.h nor cublasLt.h into a consumer (tandem/cuda_check.h, tandem/nccl_check.h).
#include <cublasLt.h>
#include <cuda.h>

#include "tandem/error.h"

namespace tandem::detail {
[[noreturn]] void throw_cu(CUresult, const char* expr, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t, const char* expr, const char* file, int line);
}  // namespace tandem::detail

#define TANDEM_CU_CHECK(expr)                                                                            \
  do {                                                                                                   \
    CUresult tandem_err_ = (expr);                                                                       \
    if (tandem_err_ != CUDA_SUCCESS) ::tandem::detail::throw_cu(tandem_err_, #expr, __FILE__, __LINE__); \
  } while (0)
#define TANDEM_CUBLAS_CHECK(expr)                                                                                     \
  do {                                                                                                                \
    cublasStatus_t tandem_err_ = (expr);                                                                              \
    if (tandem_err_ != CUBLAS_STATUS_SUCCESS) ::tandem::detail::throw_cublas(tandem_err_, #expr, __FILE__, __LINE__); \
  } while (0)
