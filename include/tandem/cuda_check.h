#pragma once
// Checks for every CUDA runtime return. A failure throws tandem::Error with the call's text, the
// runtime's own message and the file:line of the call. NCCL's returns: tandem/nccl_check.h.
#include "tandem/error.h"
#include "tandem/gpu_runtime.h"

namespace tandem::detail {
[[noreturn]] void throw_cuda(cudaError_t, const char* expr, const char* file, int line);
}  // namespace tandem::detail

#define TANDEM_CUDA_CHECK(expr)                                                                           \
  do {                                                                                                    \
    cudaError_t tandem_err_ = (expr);                                                                     \
    if (tandem_err_ != cudaSuccess) ::tandem::detail::throw_cuda(tandem_err_, #expr, __FILE__, __LINE__); \
  } while (0)
// For launches: picks up launch-configuration errors that the <<<>>> syntax does not return.
#define TANDEM_CUDA_CHECK_LAUNCH() TANDEM_CUDA_CHECK(cudaGetLastError())
